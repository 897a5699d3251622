# SPDX-License-Identifier: GPL-3.0-or-later
"""Pairwise answers and contestants: the one home for what a pairwise judgment means.

Every page, report, export and the judging run page read a pairwise judgment
through here, so that they cannot disagree:

- :func:`contestant_of`: who a candidate stands for in a ranking, from its provenance;
- :func:`outcome_of`: what an answer says (1 the item's first candidate won, 0.5 a tie,
  0 the second won, None unusable), asked of the study's task type (its ``to_number``)
  rather than decoded by hand;
- :func:`winner_of`: the same outcome as the winning name (or the tie);
- :func:`judge_consistency`: position consistency, the share of comparisons whose
  verdict survived swapping the order of the two candidates, by the one definition
  in :func:`ratings.stats.leaderboard.order_consistency`.

A test (``tests/test_pairwise_home.py``) fails when a module elsewhere in
``ratings`` or ``judging`` reads the ``choice`` of an answer or a contestant
field of a candidate's provenance by hand.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from django.db.models import QuerySet

from annotation.models import Candidate, Judgment, Study, trial_as_set
from annotation.task_types import TIE, TaskType, get_task_type

from .stats.leaderboard import TIED, OrderConsistency, order_consistency

#: Provenance fields naming who a candidate stands for, most specific first: the contestant a
#: protocol set, else the model or generator that wrote it, else the source or system it came
#: from (an imported table's column). A candidate without any is called by its key.
CONTESTANT_FIELDS = ("contestant", "model", "generator", "source", "system")


def contestant_of(key: str, provenance: dict[str, Any] | None) -> str:
    """Who a candidate stands for in a ranking: the first of :data:`CONTESTANT_FIELDS` its provenance sets, else its key."""
    provenance = provenance if isinstance(provenance, dict) else {}
    for name in CONTESTANT_FIELDS:
        if provenance.get(name):
            return str(provenance[name])
    return key


def item_candidates(
    *, study: Study, regular_only: bool = False, item_ids: QuerySet | None = None
) -> dict[int, list[tuple[str, str]]]:
    """Per item of the study: its (candidate key, contestant) pairs in the candidates' order.

    ``item_ids`` (a query of item ids) reads only those items' candidates.
    """
    rows = Candidate.objects.filter(item__study=study)
    if item_ids is not None:
        rows = rows.filter(item_id__in=item_ids)
    if regular_only:
        rows = rows.filter(item__is_attention_check=False)
    candidates: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for item_id, key, provenance in rows.order_by("item_id", "position", "pk").values_list(
        "item_id", "key", "provenance"
    ):
        candidates[item_id].append((key, contestant_of(key, provenance)))
    return dict(candidates)


def outcome_of(task_type: TaskType, value: Any, candidate_keys: Sequence[str]) -> float | None:
    """The answer's outcome for the first candidate (1 won, 0.5 tie, 0 lost), read by the task type.

    None when the answer names neither candidate nor a tie (or is no answer at all).
    """
    try:
        number = task_type.to_number(value, candidate_keys=list(candidate_keys), config=task_type.default_config)
    except (KeyError, ValueError, TypeError, IndexError, AttributeError):
        return None
    return None if number is None or math.isnan(number) else float(number)


def winner_of(score: float, first: str, second: str) -> str:
    """The winning name of an outcome, or :data:`annotation.task_types.TIE` for a tie."""
    if score == 0.5:
        return TIE
    return first if score == 1.0 else second


def _comparison_outcome(task_type: TaskType, status: str, value: Any, keys: Sequence[str]) -> Hashable | None:
    """One answer as :func:`order_consistency` compares it: the winning candidate, a tie, or None (unusable)."""
    if status != Judgment.Status.OK or len(keys) != 2:
        return None
    score = outcome_of(task_type, value, keys)
    if score is None:
        return None
    return TIED if score == 0.5 else winner_of(score, keys[0], keys[1])


#: One judge's comparisons: (item, trial) → shown first → the outcomes given in that order.
Comparisons = dict[tuple[int, int], dict[str, list[Hashable | None]]]


def judge_comparisons(*, study: Study, judgments: QuerySet[Judgment]) -> dict[int, Comparisons]:
    """Per judge rater among ``judgments``: its answers grouped by comparison, for :func:`order_consistency`.

    Each (item, trial) is one comparison; every trial counts, and a judgment of any
    status counts as shown (an unparseable or failed side makes the pair incomplete).
    """
    task_type = get_task_type(study.task_type)
    # Only the judged items' candidates: the run page asks this on every poll of a run.
    judged = item_candidates(study=study, item_ids=judgments.order_by().values("item_id"))
    keys = {item: [key for key, _ in pair] for item, pair in judged.items()}
    groups: dict[int, Comparisons] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    rows = judgments.values_list("rater_id", "item_id", "assignment__trial", "shown_order", "status", "value")
    for rater_id, item_id, trial, shown, status, value in rows.iterator(chunk_size=20_000):
        outcome = _comparison_outcome(task_type, status, value, keys.get(item_id, []))
        shown_first = shown[0] if shown else ""
        groups[rater_id][(item_id, trial_as_set(trial or 0))][shown_first].append(outcome)
    return dict(groups)


def consistency_over(comparisons: Comparisons, item_ids: Iterable[int] | None = None) -> OrderConsistency:
    """Position consistency of one judge's comparisons, on ``item_ids`` only when given."""
    if item_ids is None:
        return order_consistency(comparisons.values())
    wanted = set(item_ids)
    return order_consistency(group for (item_id, _trial), group in comparisons.items() if item_id in wanted)


def judge_consistency(*, study: Study, judgments: QuerySet[Judgment]) -> dict[int, OrderConsistency]:
    """Per judge rater among ``judgments``: its position consistency (see the module docstring)."""
    return {
        rater: consistency_over(found) for rater, found in judge_comparisons(study=study, judgments=judgments).items()
    }


def study_judge_comparisons(*, study: Study, rater_ids: Iterable[int]) -> dict[int, Comparisons]:
    """Per judge rater: its comparisons on the study's regular items."""
    judgments = Judgment.objects.filter(study=study, rater_id__in=list(rater_ids), item__is_attention_check=False)
    return judge_comparisons(study=study, judgments=judgments)
