"""Data migrations: studies made before the protocol templates get their template keys and links."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Study as CurrentStudy

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0004_auditentry"), ("judging", "0001_initial")]


def migrate(targets=None):
    """Migrate to ``targets`` (every app's latest when None) and return the historical models there."""
    executor = MigrationExecutor(connection)
    targets = targets or executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_old_protocol_labels_become_template_keys_and_match_studies_find_their_contest():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Study = apps.get_model("annotation", "Study")
    Tournament = apps.get_model("judging", "Tournament")
    JudgeConfig = apps.get_model("judging", "JudgeConfig")
    Rater = apps.get_model("annotation", "Rater")
    owner = User.objects.create(username="old-timer")

    def study(name, protocol, task_type):
        return Study.objects.create(owner=owner, name=name, slug=name, protocol=protocol, task_type=task_type)

    study("chumor-labels", "chumor", "binary")
    study("chumor-pref", "chumor", "pairwise")
    study("jest-panel", "jest", "ordinal")
    study("semeval-grades", "semeval2020t7", "ordinal")
    study("plain", "", "ordinal")
    contest = study("contest", "humorrank", "pick_one")
    matches = study("matches", "humorrank", "pairwise")
    rater = Rater.objects.create(kind="baseline", name="length")
    judge = JudgeConfig.objects.create(owner=owner, name="length", rater=rater, baseline="length")
    Tournament.objects.create(
        owner=owner, name="cup", source_study=contest, match_study=matches, judge=judge, schedule="swiss", budget=9
    )

    migrate()  # the test leaves the database fully migrated
    protocols = dict(CurrentStudy.objects.values_list("slug", "protocol"))
    assert protocols == {
        "chumor-labels": "chumor-explanation",
        "chumor-pref": "chumor-preference",
        "jest-panel": "jest",
        "semeval-grades": "semeval2020t7-grading",
        "plain": "",
        "contest": "humorrank-contest",
        "matches": "humorrank-matches",
    }
    config = CurrentStudy.objects.get(slug="matches").config
    assert (config["source_study"], config["tournament"], config["schedule"], config["budget"]) == (
        "contest",
        "cup",
        "swiss",
        9,
    )
