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


def test_templates_from_before_owners_go_to_the_researchers_relying_on_them_and_judges_keep_their_prompt():
    apps = migrate([("judging", "0002_match_studies_link_their_contest")])
    User = apps.get_model("auth", "User")
    Study = apps.get_model("annotation", "Study")
    Rater = apps.get_model("annotation", "Rater")
    JudgeConfig = apps.get_model("judging", "JudgeConfig")
    JudgeRun = apps.get_model("judging", "JudgeRun")
    Template = apps.get_model("judging", "PromptTemplate")
    alice, bob, carol, dave = (User.objects.create(username=n) for n in ("alice", "bob", "carol", "dave"))

    def template(name, version, author, task_type="ordinal", builtin=False):
        return Template.objects.create(
            name=name,
            version=version,
            task_type=task_type,
            user_text=f"{name} v{version} {{{{ text }}}}",
            created_by=author,
            builtin=builtin,
        )

    def judge(owner, name, templates):
        rater = Rater.objects.create(kind="llm", name=name)
        return JudgeConfig.objects.create(
            owner=owner, name=name, rater=rater, base_url="http://127.0.0.1:9/v1", model="m", templates=templates
        )

    template("alice-critic", 1, alice)
    template("alice-critic", 2, bob)  # saved over Alice's template while templates were global
    shared_v1 = template("team-critic", 1, alice)
    template("lonely", 1, dave)
    template("mixed", 1, alice)
    template("mixed", 2, bob)
    template("funny-or-not", 1, None, task_type="binary", builtin=True)
    template("funny-or-not", 2, bob, task_type="binary")  # an edited built-in that no judge names
    judge(alice, "a1", {"ordinal": "alice-critic"})
    judge(alice, "a2", {"ordinal": "team-critic", "binary": "nonexistent"})
    carols = judge(carol, "c1", {"ordinal": "team-critic", "binary": "explanation-quality-stepwise"})
    judge(dave, "d1", {"binary": "alice-critic"})  # another task type's template: a run was refused
    study = Study.objects.create(owner=carol, name="carol's", slug="carols", task_type="ordinal")
    carols_run = JudgeRun.objects.create(study=study, judge=carols, template=shared_v1)

    migrate()
    from judging.models import JudgeConfig as Judge
    from judging.models import JudgeRun as Run
    from judging.models import PromptTemplate

    def owners(name):
        rows = PromptTemplate.objects.filter(name=name).order_by("version", "owner__username")
        return [(t.version, t.owner.username if t.owner else None) for t in rows]

    assert owners("alice-critic") == [(1, "alice"), (2, "alice")]
    assert owners("team-critic") == [(1, "alice"), (1, "carol")]
    assert owners("lonely") == [(1, "dave")]
    assert owners("mixed") == [(1, None), (2, None)]
    assert owners("funny-or-not") == [(1, None), (2, "bob")]

    def pins(name):
        judge = Judge.objects.get(name=name)
        return {
            p.task_type: (p.template.name, p.template.version, p.template.owner_id) for p in judge.template_pins.all()
        }

    assert pins("a1") == {"ordinal": ("alice-critic", 2, alice.pk)}
    assert pins("a2") == {"ordinal": ("team-critic", 1, alice.pk)}
    assert pins("c1") == {
        "ordinal": ("team-critic", 1, carol.pk),
        "binary": ("explanation-quality-stepwise", 1, None),
    }
    assert pins("d1") == {}
    assert Run.objects.get(pk=carols_run.pk).template.owner_id == carol.pk
