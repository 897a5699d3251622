"""Every answer of the adversarial corpus parses to what it means, or is refused with the reason."""

import pytest

from annotation.models import Judgment
from annotation.task_types import get_task_type
from judging.parsing import parse_answer
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import ScriptedServer, prompt_text

from .answer_corpus import CASES, CONFIGS, SHOWN, UNPARSEABLE


def _case_id(case) -> str:
    task_type, config, text, _expected, _note = case
    return f"{task_type}/{config}/{text[:40]}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_the_answer_parses_to_what_it_means_or_says_why_not(case):
    task_type, config_name, text, expected, note = case
    parsed = parse_answer(
        task_type=task_type,
        text=text,
        shown_order=SHOWN.get(task_type, []),
        config=get_task_type(task_type).config(CONFIGS[config_name]),
    )
    if expected == UNPARSEABLE:
        assert parsed.value is None, f"{text!r} was read as {parsed.value} ({parsed.method})"
        assert note in parsed.error, f"{text!r}: {parsed.error!r}"
    else:
        assert (parsed.value, parsed.method) == (expected, note), parsed.error


def test_the_corpus_covers_every_task_type_that_reads_free_text_and_both_protocol_languages():
    covered = {task_type for task_type, *_ in CASES}
    assert covered >= {"pairwise", "binary", "ordinal", "pick_one", "best_worst", "explanation"}
    texts = " ".join(text for _, _, text, _, _ in CASES)
    assert "好笑" in texts and "面白" in texts


@pytest.mark.django_db
class TestARunStoresHowEachAnswerWasRead:
    def test_prose_repaired_json_and_a_hedge_are_stored_with_their_method_or_reason(self, researcher, make_study):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2)
        answers = {
            "Joke 0-": "The answer is a tie.",
            "Joke 1-": '{"reasoning": "The second one\nlands.", "decision": "B"}',
            "Joke 2-": "Hard to choose: maybe A or B.",
        }

        def answer(request):
            prompt = prompt_text(request)
            return next(text for marker, text in answers.items() if marker in prompt)

        with ScriptedServer(answer) as server:
            judge = judge_create(
                owner=researcher,
                name="prose judge",
                base_url=server.url,
                model="m",
                concurrency=1,
                structured_output=False,
                backoff_seconds=0.01,
            )
            run = run_create(study=study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        stored = {j.item.external_id: j for j in Judgment.objects.filter(rater=judge.rater).select_related("item")}
        tie, repaired, hedge = stored["item-0"], stored["item-1"], stored["item-2"]
        assert (tie.status, tie.value) == ("ok", {"choice": "tie"})
        assert tie.provenance["parse"]["method"] == "text_pattern:labelled"
        assert (repaired.status, repaired.value) == ("ok", {"choice": repaired.shown_order[1]})
        assert repaired.provenance["parse"]["method"] == "json_repaired"
        assert (hedge.status, hedge.value) == ("unparseable", None)
        assert "hedges ('maybe')" in hedge.provenance["parse"]["error"]
        assert hedge.provenance["raw_response"]
