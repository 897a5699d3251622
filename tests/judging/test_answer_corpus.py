"""Every answer of the corpus (tests/judging/answer_corpus/*.yaml) is read as it means, or refused.

A wrong-but-valid reading fails the test; answers whose meaning is plain but that were refused are
counted per category and printed (``pytest -s``), and fail the test above 5 %.
"""

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from annotation.models import Judgment
from annotation.task_types import get_task_type
from judging.parsing import parse_answer
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import Reply, ScriptedServer, prompt_text

CORPUS = Path(__file__).parent / "answer_corpus"
UNPARSEABLE = "unparseable"
NEEDLESSLY_UNPARSEABLE_LIMIT = 0.05

#: Candidate keys in the order shown, per task type.
SHOWN = {
    "pairwise": ["cand-x", "cand-y"],
    "pick_one": ["opt-1", "opt-2", "opt-3"],
    "best_worst": ["k-1", "k-2", "k-3", "k-4"],
    "vote_allocation": ["r-1", "r-2", "r-3"],
}

#: Study configs the entries name (None: the task type's default): Chumor's explanation studies.
CONFIGS = {
    "default": None,
    "chumor_explanation": {
        "options": [
            {"value": "good", "label": "Fully explains"},
            {"value": "bad", "label": "Does not fully explain"},
        ],
        "positive": "good",
    },
    "chumor_preference": {
        "labels": ["Explanation 1", "Explanation 2", "Equally good"],
        "allow_tie": True,
        "side_by_side": False,
    },
    "no_tie": {"allow_tie": False},
}


def _entries() -> list[dict[str, Any]]:
    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")):
            entry.setdefault("task_type", path.stem)
            out.append(entry)
    return out


def _value(task_type: str, expect: Any) -> Any:
    """The stored value an expected reading in the prompt's own terms stands for."""
    shown = SHOWN.get(task_type, [])
    if task_type == "pairwise":
        return {"choice": {"A": shown[0], "B": shown[1], "tie": "tie"}[expect]}
    if task_type == "pick_one":
        return {"choice": shown[expect - 1]}
    if task_type == "best_worst":
        return {"best": shown[expect[0] - 1], "worst": shown[expect[1] - 1]}
    if task_type == "vote_allocation":
        return {"votes": {shown[int(number) - 1]: count for number, count in expect.items()}}
    if task_type == "ordinal":
        return {"rating": expect}
    if task_type == "binary":
        return {"label": expect}
    if task_type == "micro_edit":
        return {"replacement": expect}
    return {"text": expect}


def _read(entry: dict[str, Any]):
    task_type = entry["task_type"]
    return parse_answer(
        task_type=task_type,
        text=entry["answer"],
        shown_order=SHOWN.get(task_type, []),
        config=get_task_type(task_type).config(CONFIGS[entry.get("config", "default")]),
    )


ENTRIES = _entries()


def test_the_corpus_holds_hundreds_of_answers_in_every_task_type_and_language():
    assert len(ENTRIES) >= 400
    types = {e["task_type"] for e in ENTRIES}
    assert types >= {"pairwise", "binary", "ordinal", "pick_one", "best_worst", "vote_allocation"}
    assert types >= {"explanation", "micro_edit"}
    assert {e["lang"] for e in ENTRIES} == {"en", "zh", "ja"}
    assert {e["source"].split(":")[0] for e in ENTRIES} >= {"hand", "issue-23", "template", "llama.cpp"}


def test_no_answer_is_read_as_a_value_it_does_not_mean_and_few_plain_ones_are_refused():
    wrong, misreported, needless = [], [], Counter()
    plain, by_category = Counter(), Counter()
    for entry in ENTRIES:
        parsed, expect, category = _read(entry), entry["expect"], entry["category"]
        by_category[category] += 1
        if expect == UNPARSEABLE:
            if parsed.ok:
                wrong.append(f"{entry['answer']!r} read as {parsed.value} ({parsed.method}), means nothing certain")
            elif entry.get("reason") and entry["reason"] not in parsed.error:
                misreported.append(f"{entry['answer']!r}: {parsed.error!r} does not say {entry['reason']!r}")
            continue
        plain[category] += 1
        if not parsed.ok:
            needless[category] += 1
        elif parsed.value != _value(entry["task_type"], expect):
            wrong.append(f"{entry['answer']!r} read as {parsed.value} ({parsed.method}), means {expect!r}")
        elif entry.get("method") and parsed.method != entry["method"]:
            misreported.append(f"{entry['answer']!r} recorded as {parsed.method}, read as {entry['method']}")
    print(f"\n{'category':<22}{'answers':>8}{'plain':>7}{'refused':>9}")
    for category in sorted(by_category):
        rate = needless[category] / plain[category] if plain[category] else 0.0
        print(f"{category:<22}{by_category[category]:>8}{plain[category]:>7}{needless[category]:>5} {rate:>4.0%}")
    rate = sum(needless.values()) / sum(plain.values())
    print(f"{'all':<22}{len(ENTRIES):>8}{sum(plain.values()):>7}{sum(needless.values()):>5} {rate:>4.1%}")
    print(f"wrong-but-valid: {len(wrong)}")
    assert not wrong, "\n".join(wrong)
    assert not misreported, "\n".join(misreported)
    assert rate <= NEEDLESSLY_UNPARSEABLE_LIMIT


def _judge_answers(*, researcher, study, answers: dict[str, "str | Reply"], structured: bool) -> dict[str, Judgment]:
    """Run a judge whose endpoint gives, for the item whose prompt holds each marker, that answer."""

    def answer(request):
        prompt = prompt_text(request)
        return next(text for marker, text in answers.items() if marker in prompt)

    with ScriptedServer(answer) as server:
        judge = judge_create(
            owner=researcher,
            name="scripted judge",
            base_url=server.url,
            model="m",
            concurrency=1,
            structured_output=structured,
            backoff_seconds=0.01,
        )
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
    return {j.item.external_id: j for j in Judgment.objects.filter(rater=judge.rater).select_related("item")}


@pytest.mark.django_db
class TestARunStoresHowEachAnswerWasRead:
    def test_prose_repaired_json_and_a_hedge_are_stored_with_their_method_or_reason(self, researcher, make_study):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2)
        answers = {
            "Joke 0-": "The answer is a tie.",
            "Joke 1-": '{"reasoning": "The second one\nlands.", "decision": "B"}',
            "Joke 2-": "Hard to choose: maybe A or B.",
        }
        stored = _judge_answers(researcher=researcher, study=study, answers=answers, structured=False)
        tie, repaired, hedge = stored["item-0"], stored["item-1"], stored["item-2"]
        assert (tie.status, tie.value) == ("ok", {"choice": "tie"})
        assert tie.provenance["parse"]["method"] == "text_pattern:labelled"
        assert (repaired.status, repaired.value) == ("ok", {"choice": repaired.shown_order[1]})
        assert repaired.provenance["parse"]["method"] == "json_repaired"
        assert (hedge.status, hedge.value) == ("unparseable", None)
        assert "hedges ('maybe')" in hedge.provenance["parse"]["error"]
        assert hedge.provenance["raw_response"]

    def test_a_think_trace_is_skipped_and_a_json_answer_taken_back_is_stored_unparseable(self, researcher, make_study):
        study = make_study(task_type="pairwise", n_items=4, n_candidates=2)
        answers = {
            "Joke 0-": "<think>Initially I would choose A, its pun is neat.</think>\nOn reflection the second joke is funnier.",
            "Joke 1-": '{"reasoning": "A is tighter.", "decision": "A"}\n\nActually, on reflection, B is funnier.',
            "Joke 2-": '{"winner": "A"}',
            "Joke 3-": Reply("B", reasoning_content="Joke A is funnier. Decision: A"),
        }
        stored = _judge_answers(researcher=researcher, study=study, answers=answers, structured=True)
        traced, retracted, alias = stored["item-0"], stored["item-1"], stored["item-2"]
        assert (traced.status, traced.value) == ("ok", {"choice": traced.shown_order[1]})
        assert traced.provenance["parse"]["method"] == "text_pattern:comparative"
        assert "<think>" in traced.provenance["raw_response"]
        assert (retracted.status, retracted.value) == ("unparseable", None)
        assert "takes it back" in retracted.provenance["parse"]["error"]
        assert (alias.status, alias.value) == ("ok", {"choice": alias.shown_order[0]})
        assert alias.provenance["parse"]["method"] == "json_alias"
        # The server's separate reasoning is kept as provenance and never read as the answer.
        beside = stored["item-3"]
        assert (beside.status, beside.value) == ("ok", {"choice": beside.shown_order[1]})
        assert "Decision: A" in beside.provenance["raw_response"]
