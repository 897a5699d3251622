"""`manage.py generate`: one generator per call, a queued run, progress and a JSON summary with --wait."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Candidate
from judging.models import GenerationRun, GeneratorConfig
from judging.services.judges import ensure_baseline_judges
from judging.services.tournaments import tournament_create

pytestmark = pytest.mark.django_db


def generate(*args):
    out, err = StringIO(), StringIO()
    call_command("generate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


class TestGenerateCommand:
    def test_waiting_prints_progress_and_the_summary(self, make_study, fault_server):
        study = make_study(n_items=3)
        out, err = generate(
            study.slug, "--base-url", fault_server.url("ok"), "--model", "m", "--name", "alpha", "--inline", "--wait"
        )
        summary = json.loads(out)
        assert (summary["generated"], summary["failed"], summary["status"]) == (3, 0, "done")
        assert summary["tokens"] > 0
        assert summary["seconds"] >= 0
        assert "Created generator 'alpha'" in err
        assert "3/3 prompts" in err
        assert sorted(Candidate.objects.filter(item__study=study).values_list("key", flat=True)) == ["alpha"] * 3

    def test_a_failing_endpoint_is_counted_as_failed(self, make_study, fault_server):
        study = make_study(n_items=2)
        out, _ = generate(
            study.slug, "--base-url", fault_server.url("503"), "--model", "m", "--inline", "--timeout", "2"
        )
        summary = json.loads(out)
        assert (summary["generated"], summary["failed"], summary["status"]) == (0, 2, "done")

    def test_one_call_per_contestant_makes_a_tournament_source(self, make_study, fault_server, researcher):
        study = make_study(n_items=2)
        url = fault_server.url("ok")
        for name in ("alpha", "beta"):
            generate(study.slug, "--base-url", url, "--model", "m", "--name", name, "--temperature", "0.9", "--inline")
        _, err = generate(study.slug, "--base-url", url, "--model", "m", "--name", "alpha", "--inline")
        assert "Reusing generator 'alpha'" in err
        assert GeneratorConfig.objects.filter(owner=researcher).count() == 2
        assert GeneratorConfig.objects.get(name="beta").temperature == 0.9
        assert Candidate.objects.filter(item__study=study).count() == 4
        judge = ensure_baseline_judges(owner=researcher)[0]
        tournament = tournament_create(owner=researcher, name="cup", source_study=study, judge=judge, enqueue=False)
        assert tournament.source_study == study

    def test_without_a_name_the_generator_is_named_after_the_model(self, make_study, fault_server):
        study = make_study(n_items=1)
        generate(study.slug, "--base-url", fault_server.url("ok"), "--model", "Joker 7B", "--inline")
        assert GeneratorConfig.objects.get().name == "joker-7b"

    def test_without_wait_it_only_queues(self, make_study, fault_server):
        study = make_study(n_items=1)
        out, _ = generate(study.slug, "--base-url", fault_server.url("ok"), "--model", "m")
        assert out == ""
        assert GenerationRun.objects.get(study=study).status == "queued"

    def test_a_pairwise_study_is_refused_with_the_reason(self, make_study, fault_server):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        with pytest.raises(CommandError, match="bare prompts"):
            generate(study.slug, "--base-url", fault_server.url("ok"), "--model", "m", "--inline")

    def test_an_unknown_study_is_an_error(self, db, fault_server):
        with pytest.raises(CommandError, match="No study"):
            generate("no-such-study", "--base-url", fault_server.url("ok"), "--model", "m")
