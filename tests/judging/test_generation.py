"""Candidate generation: generator models write contestants' jokes for bare prompts."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Candidate
from annotation.services.studies import ItemSpec, items_create, study_create
from judging.models import GenerationRun
from judging.services.generation import (
    generation_run_create,
    generator_create,
    parse_candidate,
    process_generation_run,
)
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create, tournament_verdicts

pytestmark = pytest.mark.django_db


def prompts_study(owner, n=3):
    # A study of bare prompts: a task type that takes no candidates of its own (here: a rating).
    study = study_create(owner=owner, name="bare prompts", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"h{k}", prompt=f"Headline number {k}") for k in range(n)])
    return study


def generator(owner, fault_server, name, *steps, **settings):
    return generator_create(
        owner=owner,
        name=name,
        base_url=fault_server.url(*steps),
        model=f"{name}-model",
        backoff_seconds=0.0,
        timeout_seconds=2,
        **settings,
    )


class TestGeneration:
    def test_each_generator_writes_one_candidate_per_prompt(self, researcher, fault_server):
        study = prompts_study(researcher)
        gens = [
            generator(researcher, fault_server, "alpha", "ok"),
            generator(researcher, fault_server, "beta", "500", "ok"),
        ]
        run = generation_run_create(study=study, generators=gens, enqueue=False)
        process_generation_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "done"
        for item in study.items.all():
            assert sorted(item.candidates.values_list("key", flat=True)) == ["alpha", "beta"]
        candidate = Candidate.objects.filter(key="alpha").first()
        assert candidate.text.startswith("Why did the walrus")
        assert candidate.provenance["model"] == "alpha-model"
        assert candidate.provenance["temperature"] == 0.7

    def test_running_again_writes_nothing_twice(self, researcher, fault_server):
        study = prompts_study(researcher, n=2)
        gen = generator(researcher, fault_server, "alpha", "ok")
        for _ in range(2):
            run = generation_run_create(study=study, generators=[gen], enqueue=False)
            process_generation_run(run_id=run.pk)
        assert Candidate.objects.filter(item__study=study).count() == 2

    def test_a_generator_that_keeps_failing_is_recorded_as_failed(self, researcher, fault_server):
        study = prompts_study(researcher, n=1)
        gen = generator(researcher, fault_server, "broken", "503", max_retries=1)
        run = generation_run_create(study=study, generators=[gen], enqueue=False)
        process_generation_run(run_id=run.pk)
        unit = GenerationRun.objects.get(pk=run.pk).units.get()
        assert unit.status == "failed"
        assert unit.attempts == 2
        assert "HTTP 503" in unit.error
        assert not Candidate.objects.filter(item__study=study).exists()

    def test_two_generators_need_different_names(self, researcher, fault_server):
        gen = generator(researcher, fault_server, "alpha", "ok")
        with pytest.raises(ValidationError):
            generation_run_create(study=prompts_study(researcher, n=1), generators=[gen, gen], enqueue=False)

    def test_a_pick_one_study_takes_generated_candidates_up_to_its_limit(self, researcher, fault_server, make_study):
        study = make_study(task_type="pick_one", n_items=1, n_candidates=8)
        alpha, beta = (generator(researcher, fault_server, name, "ok") for name in ("alpha", "beta"))
        with pytest.raises(ValidationError, match="at most 9 candidates"):
            generation_run_create(study=study, generators=[alpha, beta], enqueue=False)
        process_generation_run(run_id=generation_run_create(study=study, generators=[alpha], enqueue=False).pk)
        assert study.items.get().candidates.count() == 9

    def test_a_tournament_from_nothing_but_prompts(self, researcher, fault_server):
        study = prompts_study(researcher, n=2)
        gens = [generator(researcher, fault_server, name, "ok") for name in ("alpha", "beta", "gamma")]
        process_generation_run(run_id=generation_run_create(study=study, generators=gens, enqueue=False).pk)
        judge, _ = judge_find_or_create(owner=researcher, baseline="random")
        tournament = tournament_create(owner=researcher, name="cup", source_study=study, judge=judge, enqueue=False)
        process_tournament(tournament_id=tournament.pk)
        tournament.refresh_from_db()
        assert tournament.status == "done"
        assert tournament.match_study.items.count() == 3 * 2  # C(3, 2) pairs on 2 prompts
        verdicts = tournament_verdicts(tournament)
        assert len(verdicts) == 6
        assert {name for v in verdicts for name in (v.first, v.second)} == {"alpha", "beta", "gamma"}


class TestParsingACandidate:
    @pytest.mark.parametrize(
        ("text", "joke"), [('"A joke."', "A joke."), ('{"joke": "From JSON."}', "From JSON."), ("  plain  ", "plain")]
    )
    def test_the_joke_is_taken_from_the_reply(self, text, joke):
        assert parse_candidate(text).value == {"text": joke}

    @pytest.mark.parametrize("text", ["", "   ", '{"other": 1}'])
    def test_an_empty_reply_is_unparseable(self, text):
        assert parse_candidate(text).value is None
