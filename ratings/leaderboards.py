# SPDX-License-Identifier: GPL-3.0-or-later
"""Leaderboards of a pairwise study's judges, read from the judgments: one rule for every page, report and export.

Which verdicts count: a judge's OK judgments on the study's items (attention
checks left out) whose item has two candidates; one per judge, item and order
shown — the earliest trial — so repeated trials do not count twice while the
B/A order of a both-orders judge counts as its own verdict. A candidate stands
for its contestant (``ratings.pairwise.contestant_of``) and an answer's outcome
is the task type's (``ratings.pairwise.outcome_of``). Position consistency counts
every trial (``ratings.pairwise.judge_consistency``). The seed is the study's own seed. The numbers come from
:func:`ratings.stats.leaderboard.leaderboard`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from annotation.models import Judgment, Study
from annotation.task_types import TaskType, get_task_type

from .pairwise import Comparisons, consistency_over, item_candidates, outcome_of, study_judge_comparisons
from .selectors import JUDGE_KINDS
from .stats.leaderboard import DEFAULT_ORDERINGS, DEFAULT_RESAMPLES, Leaderboard, MatchVerdict, leaderboard


def verdict_from(
    *,
    task_type: TaskType,
    item_id: int,
    value: Any,
    shown_order: list[str] | None,
    candidates: list[tuple[str, str]],
    features=None,
) -> MatchVerdict | None:
    """One pairwise judgment as a verdict between contestants; None when it names neither candidate nor a tie."""
    if len(candidates) != 2:
        return None
    (key_a, first), (key_b, second) = candidates
    if first == second:
        return None
    score = outcome_of(task_type, value, [key_a, key_b])
    if score is None:
        return None
    by_key = dict(candidates)
    shown_first = by_key.get(shown_order[0]) if shown_order else None
    return MatchVerdict(first, second, score, match=str(item_id), shown_first=shown_first, features=features or {})


def counted_judge_judgments(
    *, study: Study, rater_ids: Iterable[int] | None = None
) -> Iterator[tuple[int, int, Any, list[str] | None, Any]]:
    """(rater, item, value, shown order, provenance) of each judge's OK judgments that count: one per judge,
    item and order shown, the earliest trial (see the module docstring). Rankings and alignment both read these."""
    rows = Judgment.objects.filter(
        study=study, status=Judgment.Status.OK, rater__kind__in=JUDGE_KINDS, item__is_attention_check=False
    )
    if rater_ids is not None:
        rows = rows.filter(rater_id__in=list(rater_ids))
    rows = rows.order_by("rater_id", "item_id", "assignment__trial", "pk").values_list(
        "rater_id", "item_id", "value", "shown_order", "provenance"
    )
    seen: set[tuple[int, int, str]] = set()
    for rater_id, item_id, value, shown_order, provenance in rows.iterator(chunk_size=2000):
        order = shown_order[0] if shown_order else ""
        if (rater_id, item_id, order) in seen:
            continue
        seen.add((rater_id, item_id, order))
        yield rater_id, item_id, value, shown_order, provenance


def judge_verdicts(*, study: Study, rater_ids: Iterable[int] | None = None) -> dict[int, list[MatchVerdict]]:
    """Per judge rater (LLM or baseline): the verdicts that count (see the module docstring)."""
    task_type = get_task_type(study.task_type)
    candidates = item_candidates(study=study)
    verdicts: dict[int, list[MatchVerdict]] = {}
    for rater_id, item_id, value, shown_order, provenance in counted_judge_judgments(study=study, rater_ids=rater_ids):
        features = (provenance or {}).get("features") if isinstance(provenance, dict) else None
        verdict = verdict_from(
            task_type=task_type,
            item_id=item_id,
            value=value,
            shown_order=shown_order,
            candidates=candidates.get(item_id, []),
            features=features if isinstance(features, dict) else None,
        )
        if verdict is not None:
            verdicts.setdefault(rater_id, []).append(verdict)
    return verdicts


def study_leaderboard(
    *,
    study: Study,
    verdicts: list[MatchVerdict],
    n_resamples: int = DEFAULT_RESAMPLES,
    n_orderings: int = DEFAULT_ORDERINGS,
    judge_id: int | None = None,
    comparisons: Comparisons | None = None,
) -> Leaderboard | None:
    """The leaderboard of verdicts collected in ``study`` (seeded by the study); None with fewer than two contestants.

    ``judge_id``: the judge whose verdicts these are, so that its position consistency counts
    every trial, as on the alignment and run pages, while the ranking counts the earliest.
    ``comparisons``: that judge's comparisons when the caller read several judges' at once.
    """
    if not verdicts or len({v.first for v in verdicts} | {v.second for v in verdicts}) < 2:
        return None
    consistency = None
    if comparisons is None and judge_id is not None:
        comparisons = study_judge_comparisons(study=study, rater_ids=[judge_id]).get(judge_id, {})
    if comparisons is not None:
        consistency = consistency_over(comparisons)
    return leaderboard(
        verdicts, n_resamples=n_resamples, n_orderings=n_orderings, seed=study.seed, consistency=consistency
    )


def judge_leaderboard(*, study: Study, rater_id: int) -> tuple[Leaderboard | None, list[MatchVerdict]]:
    """One judge's leaderboard in a pairwise study, and the verdicts it counts."""
    verdicts = judge_verdicts(study=study, rater_ids=[rater_id]).get(rater_id, [])
    return study_leaderboard(study=study, verdicts=verdicts, judge_id=rater_id), verdicts
