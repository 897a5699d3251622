# SPDX-License-Identifier: GPL-3.0-or-later
"""Parameters, the consensus rules and the containers shared by the alignment computations."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from annotation.task_types import Level, TaskType

from ..selectors import (
    RaterInfo,
)
from ..stats import (
    DEFAULT_SEED,
    item_median,
    majority_vote,
)

REFERENCES: dict[str, str] = {
    "passers": "Humans who passed the attention checks",
    "humans": "All human raters",
    "experts": "Experts only",
    "crowd": "Crowdworkers only",
    "selected": "Chosen human raters",
}


class Family:
    """Which tables an alignment report has, read from the task type's statistics family.

    The values are what stored reports carry in ``family`` (so older reports still display).
    """

    ORDINAL = "ordinal"  # a scale: quadratic kappa against the median consensus
    BINARY = "binary"  # two labels, one positive: accuracy, MCC, FPR, FNR
    CHOICE = "pick_one"  # one of the candidates: accuracy against gold and the majority
    PAIRWISE = "pairwise"  # first / tie / second: agreement, position consistency, rankings

    ALL = (ORDINAL, BINARY, CHOICE, PAIRWISE)


def family_of(task_type: TaskType) -> str | None:
    """The alignment family of a task type; None when its values are not one answer per item."""
    if task_type.level == Level.ORDINAL:
        return Family.ORDINAL
    if task_type.level == Level.PAIRWISE:
        return Family.PAIRWISE
    if task_type.level == Level.NOMINAL:
        return Family.BINARY if task_type.dichotomous else Family.CHOICE
    return None


def family_flags(family: str | None) -> dict[str, bool]:
    """``is_ordinal``, ``is_binary``, ``is_choice``, ``is_pairwise`` for the report templates."""
    names = {Family.ORDINAL: "ordinal", Family.BINARY: "binary", Family.CHOICE: "choice", Family.PAIRWISE: "pairwise"}
    return {f"is_{name}": family == value for value, name in names.items()}


MISSING_REASONS = ("unparseable", "failed", "not_judged")
NOT_SET = "(not set)"
#: Breakdown groups shown at most; the rest are named in a warning.
MAX_GROUPS = 30
#: Bootstrap resamples inside breakdown groups (the overall figures use the report's own number).
BREAKDOWN_RESAMPLES = 300
#: Resamples of the Bradley–Terry bootstrap behind the leaderboard intervals (HumorRank used 100; the
#: 95% interval under-covers there, see bench/bench_bt_coverage.py).
BT_RESAMPLES = 1000

Progress = Callable[[float, str], None]


class AlignmentUnavailable(ValueError):
    """The study's task type or data cannot give an alignment report."""


@dataclass(frozen=True)
class AlignmentParams:
    """What a report compares: a human reference, judges, an optional metadata breakdown."""

    reference: str = "passers"
    reference_rater_ids: tuple[int, ...] = ()
    judge_ids: tuple[int, ...] = ()
    breakdown: str = ""
    #: A questionnaire question: the judges against the human raters of each answer (``ratings.rater_groups``).
    rater_breakdown: str = ""
    n_resamples: int = 1000
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if self.reference not in REFERENCES:
            raise ValueError(f"unknown reference {self.reference!r}; choose one of {', '.join(REFERENCES)}")
        if self.reference == "selected" and not self.reference_rater_ids:
            raise ValueError("choose at least one human rater for a selected reference")
        if not 2 <= self.n_resamples <= 20_000:
            raise ValueError("the bootstrap needs between 2 and 20,000 resamples")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reference_rater_ids"] = sorted(self.reference_rater_ids)
        data["judge_ids"] = sorted(self.judge_ids)
        return data

    @property
    def key(self) -> str:
        """A stable digest of the parameters, to find a stored report."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:32]


# -- numbers ------------------------------------------------------------------------------


def finite(value: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def bootstrap_interval(estimate: float, low: float, high: float, p: float | None, n_resamples: int) -> dict[str, Any]:
    return {
        "estimate": finite(estimate),
        "ci_low": finite(low),
        "ci_high": finite(high),
        "p_value": finite(p),
        "p_below": 1.0 / n_resamples if p == 0 else None,
    }


def spread(values: Sequence[float]) -> dict[str, Any]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return {"mean": None, "min": None, "max": None, "n": 0}
    return {"mean": float(np.mean(finite)), "min": float(min(finite)), "max": float(max(finite)), "n": len(finite)}


# -- consensus ------------------------------------------------------------------------------


def ordinal_consensus(matrix: np.ndarray, points: Sequence[float]) -> np.ndarray:
    """Median per item snapped to the nearest scale point; a tie goes to the higher point.

    An item nobody rated stays NaN.
    """
    pts = np.sort(np.asarray(points, dtype=float))
    median = item_median(matrix)
    out = np.full(median.shape, np.nan)
    rated = ~np.isnan(median)
    m = median[rated]
    hi = np.clip(np.searchsorted(pts, m, side="left"), 0, pts.size - 1)
    lo = np.clip(np.searchsorted(pts, m, side="right") - 1, 0, pts.size - 1)
    out[rated] = np.where(np.abs(pts[hi] - m) <= np.abs(m - pts[lo]), pts[hi], pts[lo])
    return out


def majority_labels(matrix: np.ndarray, codes: Sequence[float]) -> np.ndarray:
    """Majority label per item; NaN for an undecided tie or an unrated item."""
    arr = np.asarray(matrix, dtype=float)
    if arr.shape[1] == 0:
        return np.full(arr.shape[0], np.nan)
    return majority_vote(arr, categories=codes, tie="undecided")


# -- per task type, on arrays -----------------------------------------------------------------


@dataclass
class JudgeColumn:
    """One judge's answers on the report's items (NaN = missing) and why each missing one is."""

    info: RaterInfo
    values: np.ndarray
    reasons: list[str | None]  # per item: None when answered, else one of MISSING_REASONS
    #: Pairwise judges asked in both orders: ``values`` holds the answers given in the items' own (A/B)
    #: order and ``swapped`` those given in the B/A order (NaN = missing); None for a judge asked in one order.
    swapped: np.ndarray | None = None

    def subset(self, rows: np.ndarray) -> JudgeColumn:
        swapped = self.swapped[rows] if self.swapped is not None else None
        return JudgeColumn(self.info, self.values[rows], [self.reasons[i] for i in rows], swapped)


def counted_answers(
    reference: np.ndarray, answers: np.ndarray, swapped: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The (reference label, judge answer) pairs a judge is scored on, over the items with a reference label.

    One pair per item; a judge asked in both orders (``swapped``: its B/A answers) gives two, the B/A
    answer counting as its own verdict as in the rankings (``ratings.leaderboards``). A missing answer
    stays NaN. The agreement figures and the confusion matrix both count these, so their totals agree.
    """
    decided = ~np.isnan(reference)
    truth, given = reference[decided], answers[decided]
    if swapped is not None:
        truth, given = np.concatenate([truth, truth]), np.concatenate([given, swapped[decided]])
    return truth, given


@dataclass
class Block:
    """The items of one table: reference matrix rows, judges' answers, metadata, gold."""

    reference: np.ndarray  # items × reference raters
    raters: list[RaterInfo]
    judges: list[JudgeColumn]
    gold: np.ndarray  # NaN where an item has no gold
    item_ids: list[int]
    extras: dict[str, Any] = field(default_factory=dict)
    #: A reference too large to hold whole (``StudyMatrix.left_out``): ``reference`` holds each item's
    #: ratings packed from the left (``StudyMatrix.packed``: right for every figure computed item by item),
    #: and ``pairs`` the raters' own columns on the items rated twice or more, at rows ``pair_rows``.
    pairs: np.ndarray | None = None
    pair_rows: np.ndarray | None = None

    def by_rater(self, rows: np.ndarray) -> np.ndarray:
        """The reference raters' columns on ``rows``, leaving out items with fewer than two ratings if packed.

        For the figures that compare raters (leave-one-out kappas), to which such items add nothing.
        """
        if self.pairs is None:
            return self.reference[rows]
        kept = np.isin(self.pair_rows, rows) & ((~np.isnan(self.pairs)).sum(axis=1) >= 2)
        return self.pairs[kept]

    def subset(self, rows: np.ndarray) -> Block:
        pairs = pair_rows = None
        if self.pairs is not None:
            where = np.full(len(self.item_ids), -1, dtype=np.int64)
            where[rows] = np.arange(len(rows))
            moved = where[self.pair_rows]
            pairs, pair_rows = self.pairs[moved >= 0], moved[moved >= 0]
        return Block(
            reference=self.reference[rows],
            raters=self.raters,
            judges=[j.subset(rows) for j in self.judges],
            gold=self.gold[rows],
            item_ids=[self.item_ids[i] for i in rows],
            # Rankings are fitted on every item; a subset keeps none rather than repeat the overall ones.
            extras={k: v for k, v in self.extras.items() if k != "rankings"},
            pairs=pairs,
            pair_rows=pair_rows,
        )


def missing_counts(judge: JudgeColumn, rows: np.ndarray) -> dict[str, Any]:
    counts = Counter(judge.reasons[i] for i in rows if judge.reasons[i] is not None)
    return {"n_missing": int(sum(counts.values())), **{reason: int(counts[reason]) for reason in MISSING_REASONS}}


def judge_head(judge: JudgeColumn) -> dict[str, Any]:
    return {"id": judge.info.id, "label": judge.info.label, "kind": judge.info.kind}


# -- breakdown by metadata -----------------------------------------------------------------------


def metadata_groups(values: Sequence[Any]) -> dict[str, list[int]]:
    """Rows per metadata value; a list value puts the item in each of its groups (multi-label)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for row, value in enumerate(values):
        if value is None or value == "" or value == []:
            labels = [NOT_SET]
        elif isinstance(value, list):
            labels = sorted({_group_name(v) for v in value})
        else:
            labels = [_group_name(value)]
        for label in labels:
            groups[label].append(row)
    return dict(groups)


def _group_name(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
