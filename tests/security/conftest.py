# SPDX-License-Identifier: GPL-3.0-or-later
"""A small site with something behind every URL: one researcher's studies, their items,
an import, an export, a judge, a run, a tournament, an alignment report, an expert who
accepted an invitation and a crowdworker who entered by the study link."""

import os
import re
from dataclasses import dataclass

import pytest
import redis
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from annotation.models import Invitation, ItemImport, Study
from annotation.services.enrollment import expert_rater
from judging.models import JudgeConfig, JudgeRun, PromptTemplate, Tournament
from judging.services.judges import judge_create
from judging.services.runs import run_create
from judging.services.templates import ensure_builtin_templates, template_save
from judging.services.tournaments import tournament_create
from ratings.alignment.base import AlignmentParams
from ratings.alignment.tasks import report_request
from ratings.exports.services import export_claim, export_create, export_run
from ratings.models import AlignmentReport, Export
from tests.ratings.alignment_helpers import build_ordinal, build_pairwise

ASSIGNMENT = re.compile(r'name="assignment" value="(\d+)"')


@dataclass
class World:
    owner: object
    other: object
    expert: object
    study: Study
    pairwise: Study
    item_import: ItemImport
    export: Export
    judge: JudgeConfig
    run: JudgeRun
    tournament: Tournament
    template: PromptTemplate  # the owner's own template
    report: AlignmentReport
    invitation: Invitation
    clients: dict[str, Client]
    assignments: dict[str, int]


def annotator_url(study: Study, step: str = "") -> str:
    return f"/s/{study.entry_token}/{step + '/' if step else ''}"


def begin_as_crowdworker(client: Client, study: Study, pid: str) -> None:
    """Enter by the study link, consent and read the instructions, as a Prolific worker does."""
    assert client.get(annotator_url(study), {"PROLIFIC_PID": pid}).status_code == 302
    assert client.post(annotator_url(study, "consent"), {"decision": "agree"}).status_code == 302
    assert client.post(annotator_url(study, "instructions")).status_code == 302


def current_assignment(client: Client, study: Study) -> int:
    page = client.get(annotator_url(study, "item"))
    assert page.status_code == 200
    return int(ASSIGNMENT.search(page.content.decode()).group(1))


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    # The entry rate limit counts in the cache, which outlives a single test.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def expert(db):
    # An expert's account as sign-up makes it: with its expert rater (a bare account is a researcher's).
    user = get_user_model().objects.create_user("erin", "erin@example.org", "erin-password-123")
    expert_rater(user=user)
    return user


@pytest.fixture
def world(researcher, other_researcher, expert, settings, tmp_path) -> World:
    settings.MEDIA_ROOT = tmp_path / "media"
    study, _raters = build_ordinal(researcher, name="Ordinal security study")
    pairwise, _humans, _items = build_pairwise(researcher, name="Pairwise security study")
    item_import = ItemImport.objects.create(
        study=study,
        file="imports/items.csv",
        original_name="items.csv",
        format=ItemImport.Format.CSV,
        status=ItemImport.Status.DONE,
        items_created=6,
        created_by=researcher,
    )
    export = export_create(study=study, user=researcher, fmt="csv")
    export = export_run(export=export_claim(export_id=export.pk))
    judge = judge_create(owner=researcher, name="owner's random judge", baseline="random")
    run = run_create(study=study, judge=judge, created_by=researcher, enqueue=False)
    tournament = tournament_create(
        owner=researcher, name="Owner's tournament", source_study=pairwise, judge=judge, enqueue=False
    )
    ensure_builtin_templates()
    template = template_save(
        owner=researcher, name="owners-critic", task_type="ordinal", user_text="Rate {{ text }}: one digit."
    )
    report = report_request(study=study, params=AlignmentParams(seed=study.seed), inline=True)
    invitation = Invitation.objects.create(study=study, email="erin@example.org")

    clients = {role: Client() for role in ("anonymous", "crowd", "expert", "owner", "other")}
    clients["owner"].force_login(researcher)
    clients["other"].force_login(other_researcher)
    clients["expert"].force_login(expert)
    assert clients["expert"].get(f"/invite/{invitation.token}/").status_code == 200  # the accept button
    assert clients["expert"].post(f"/invite/{invitation.token}/", {"decision": "accept"}).status_code == 302
    assert clients["expert"].post(annotator_url(study, "consent"), {"decision": "agree"}).status_code == 302
    assert clients["expert"].post(annotator_url(study, "instructions")).status_code == 302
    begin_as_crowdworker(clients["crowd"], study, "worker-1")
    assignments = {
        "crowd": current_assignment(clients["crowd"], study),
        "expert": current_assignment(clients["expert"], study),
    }
    return World(
        owner=researcher,
        other=other_researcher,
        expert=expert,
        study=study,
        pairwise=pairwise,
        item_import=item_import,
        export=export,
        judge=judge,
        run=run,
        tournament=tournament,
        template=template,
        report=report,
        invitation=invitation,
        clients=clients,
        assignments=assignments,
    )


@pytest.fixture
def redis_cache(settings) -> str:
    """Django's default cache on real Redis for one test, as REDIS_URL makes it in production; its URL.

    Skipped locally without a Redis server; a failure where FUNNYBONE_REQUIRE_SERVICES is set.
    """
    url = os.environ.get("REDIS_URL") or os.environ.get("FUNNYBONE_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
            pytest.fail(f"This test needs Redis at {url}: {exc}")
        pytest.skip(f"needs Redis at {url} ({exc})")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
    return url
