"""Baseline judges: answers that need no model, the floor every report is read against.

- random: a uniformly random answer (seeded per judge, item and trial).
- constant: the same answer for every item, taken from the study's human
  labels: the scale point nearest their mean rating, the majority label, or the
  position (first / second / tie) people chose most. With no human labels yet
  it uses the gold answers; with neither, the scale's middle point or the first
  option, and the provenance says which source it used.
- length: shorter is funnier. Pairwise: the shorter candidate (a tie when both
  are equally long); pick one: the shortest; a rating: higher for shorter texts,
  by the text's length rank within the study; a binary label: the positive
  label for texts no longer than the study's median.

Written answers (micro-edits, explanations) have no baseline. What each
baseline answers for a task type lives with that type's judging side
(judging/task_types/); this module reads the study and dispatches.
"""

import random
from typing import Any

from annotation.models import Candidate, Item, Judgment, Rater, Study

from ..task_types import NoBaseline, StudyFacts, judging_type

RANDOM, CONSTANT, LENGTH = "random", "constant", "length"

__all__ = ["CONSTANT", "LENGTH", "RANDOM", "NoBaseline", "StudyFacts", "baseline_value", "study_facts"]


def _human_values(study: Study) -> list[tuple[Any, list[str]]]:
    rows = Judgment.objects.filter(
        study=study,
        status=Judgment.Status.OK,
        rater__kind__in=[Rater.Kind.EXPERT, Rater.Kind.CROWD],
        item__is_attention_check=False,
    ).values_list("value", "item_id")
    keys = _candidate_keys(study)
    return [(value, keys.get(item_id, [])) for value, item_id in rows]


def _gold_values(study: Study) -> list[tuple[Any, list[str]]]:
    keys = _candidate_keys(study)
    rows = study.items.filter(gold__isnull=False, is_attention_check=False).values_list("gold", "pk")
    return [(gold, keys.get(pk, [])) for gold, pk in rows]


def _candidate_keys(study: Study) -> dict[int, list[str]]:
    keys: dict[int, list[str]] = {}
    rows = Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id")
    for item_id, key in rows.values_list("item_id", "key"):
        keys.setdefault(item_id, []).append(key)
    return keys


def study_facts(*, study: Study, task_type: str, config: dict[str, Any], kind: str) -> StudyFacts:
    facts = StudyFacts()
    answers = judging_type(task_type)
    if kind == CONSTANT:
        for source, values in (("human_labels", _human_values(study)), ("gold", _gold_values(study))):
            constant = answers.constant_from(config=config, values=values) if values else None
            if constant is not None:
                facts.constant, facts.constant_source = constant, source
                break
        else:
            facts.constant_source = "no_labels"
            facts.constant = answers.constant_without_labels(config=config)
    if kind == LENGTH:
        facts.lengths = sorted(
            len(t) for t in study.items.filter(is_attention_check=False).values_list("text", flat=True)
        )
    return facts


def baseline_value(
    *,
    kind: str,
    task_type: str,
    config: dict[str, Any],
    item: Item,
    shown: list[str],
    texts: dict[str, str],
    keys: list[str],
    facts: StudyFacts,
    rng: random.Random,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(value, provenance notes) of a baseline judge on one item; ``shown`` is the display order."""
    answers = judging_type(task_type)
    if answers.no_baseline:
        raise NoBaseline(answers.no_baseline)
    if kind == RANDOM:
        return answers.random_answer(config=config, shown=shown, rng=rng), {}
    if kind == CONSTANT:
        value = answers.constant_answer(dict(facts.constant), shown=shown, keys=keys, config=config)
        return value, {"constant_source": facts.constant_source}
    if kind == LENGTH:
        return answers.length_answer(config=config, item=item, shown=shown, texts=texts, facts=facts), {}
    raise NoBaseline(f"Unknown baseline {kind!r}.")
