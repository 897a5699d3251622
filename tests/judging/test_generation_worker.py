"""End to end through a real Celery worker on Redis and PostgreSQL: prompts → generation → tournament → leaderboard."""

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Candidate
from annotation.services.studies import ItemSpec, items_create, study_create
from judging.models import GenerationRun, Tournament
from judging.runner import LEASE_SECONDS
from judging.services.generation import generation_run_create, generator_create
from judging.services.judges import ensure_baseline_judges
from judging.services.tournaments import tournament_create

from .test_worker_integration import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
LIMIT_S = 180


def bare_prompts(owner, n: int):
    study = study_create(owner=owner, name="headlines", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"h{k}", prompt=f"Headline {k}") for k in range(n)])
    return study


def generate_with_the_cli(env, study, url: str, name: str) -> dict:
    result = subprocess.run(
        [sys.executable, "manage.py", "generate", study.slug, "--base-url", url, "--model", f"{name}-model"]
        + ["--name", name, "--timeout", "5", "--wait"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


class TestFromPromptsToALeaderboard:
    def test_generated_candidates_are_ranked_by_a_tournament_on_a_real_worker(
        self, researcher, fault_server, start_worker, worker_env, send_task
    ):
        study = bare_prompts(researcher, 3)
        start_worker("generation")
        url = fault_server.url("ok")
        summaries = [generate_with_the_cli(worker_env, study, url, name) for name in ("alpha", "beta", "gamma")]
        for summary in summaries:
            assert (summary["status"], summary["generated"], summary["failed"]) == ("done", 3, 0)
            assert summary["tokens"] > 0
            assert set(summary) >= {"generated", "failed", "tokens", "seconds"}
        assert Candidate.objects.filter(item__study=study).count() == 9

        judge = ensure_baseline_judges(owner=researcher)[0]
        tournament = tournament_create(owner=researcher, name="cup", source_study=study, judge=judge, enqueue=False)
        send_task("judging.tasks.tournament_task", tournament.pk)
        wait_until(
            lambda: Tournament.objects.get(pk=tournament.pk).status not in ("queued", "running"),
            what="the tournament",
            limit=LIMIT_S,
        )
        tournament.refresh_from_db()
        assert tournament.status == "done", tournament.error
        assert tournament.match_study.items.count() == 3 * 3  # C(3, 2) pairs on 3 prompts

        client = Client()
        client.force_login(researcher)
        page = client.get(f"/judging/tournaments/{tournament.pk}/").content.decode()
        for name in ("alpha", "beta", "gamma"):
            assert name in page


class TestAStartingWorkerRecoversLostWork:
    def test_a_generation_whose_message_was_lost_is_finished_by_the_next_worker(
        self, researcher, fault_server, start_worker
    ):
        study = bare_prompts(researcher, 2)
        gen = generator_create(
            owner=researcher, name="alpha", base_url=fault_server.url("ok"), model="m", timeout_seconds=5
        )
        run = generation_run_create(study=study, generators=[gen], enqueue=False)  # the message is "lost"
        GenerationRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=2 * LEASE_SECONDS))
        start_worker("recovering")
        wait_until(lambda: not GenerationRun.objects.get(pk=run.pk).is_active, what="the recovered run", limit=LIMIT_S)
        run.refresh_from_db()
        assert run.status == "done"
        assert Candidate.objects.filter(item__study=study, key="alpha").count() == 2
