"""Every answer of the adversarial corpus parses to what it means, or is refused with the reason."""

import pytest

from annotation.task_types import get_task_type
from judging.parsing import parse_answer

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
