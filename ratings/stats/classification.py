# SPDX-License-Identifier: GPL-3.0-or-later
"""Scores of predictions against gold labels or grades.

Binary labels (Chumor): accuracy, Matthews correlation, false-positive and
false-negative rates, with an explicit positive label.  A missing prediction
(NaN, e.g. a refused or unparseable LLM answer) counts as wrong: for a gold
positive it is a false negative, for a gold negative a false positive.

Grades (SemEval-2020 Task 7): RMSE, RMSE over the funniest / least funny X%,
MAE per grade bin, and the pairwise "which is funnier" accuracy and reward.

Groups (OOGIRI): Student's two-sample t-test with Cohen's d on the pooled SD.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._validation import as_vector, same_length

#: Why MCC has no value, as :attr:`BinaryScores.mcc_undefined` says it.
MCC_NO_ANSWERS = "the judge gave no usable answers"
MCC_ONE_CLASS_ANSWERED = "the judge answered one class only"
MCC_ONE_CLASS_TRUTH = "the reference has one class only"


@dataclass(frozen=True)
class BinaryScores:
    accuracy: float
    mcc: float | None  # None when undefined; mcc_undefined says why
    fpr: float
    fnr: float
    tp: int
    tn: int
    fp: int
    fn: int
    n_missing: int
    mcc_undefined: str | None = None


def binary_scores(gold, predicted, *, positive: float = 1.0, negative: float | None = None) -> BinaryScores:
    """Accuracy, MCC, FPR and FNR of binary predictions.

    Labels are numbers; ``positive`` names the positive one.  If ``negative``
    is given, every gold and predicted label must be one of the two; if not,
    gold and predictions together may use at most one label besides
    ``positive``.  ``predicted`` may contain NaN for a missing answer, which
    counts as wrong.  MCC is None, with the reason in ``mcc_undefined``, when
    it means nothing: no prediction at all (every answer missing would
    otherwise give −1), or one of its four marginal sums is 0 — the reference
    or the predictions (missing ones on their wrong side) hold one class only,
    where the usual convention's 0 would read as "no better than chance".
    FPR (FNR) is NaN when there are no gold negatives (positives).
    """
    g = as_vector(gold, name="gold")
    p = as_vector(predicted, name="predicted", allow_nan=True)
    same_length(gold=g, predicted=p)
    present = ~np.isnan(p)
    used = set(np.unique(g).tolist()) | set(np.unique(p[present]).tolist())
    if negative is not None:
        if negative == positive:
            raise ValueError("positive and negative labels must differ")
        extra = used - {positive, negative}
        if extra:
            raise ValueError(f"labels {sorted(extra)} are neither positive={positive} nor negative={negative}")
    elif len(used - {positive}) > 1:
        raise ValueError(
            f"more than one non-positive label {sorted(used - {positive})}; binary scores "
            "need two labels (pass negative= to be explicit)"
        )
    gold_pos = g == positive
    pred_pos = np.where(present, p == positive, ~gold_pos)  # missing → the wrong side
    tp = int(np.sum(gold_pos & pred_pos))
    tn = int(np.sum(~gold_pos & ~pred_pos))
    fp = int(np.sum(~gold_pos & pred_pos))
    fn = int(np.sum(gold_pos & ~pred_pos))
    n = g.size
    denom = math.sqrt(float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    undefined = None
    if not present.any():
        undefined = MCC_NO_ANSWERS
    elif tp + fn == 0 or tn + fp == 0:
        undefined = MCC_ONE_CLASS_TRUTH
    elif tp + fp == 0 or tn + fn == 0:
        undefined = MCC_ONE_CLASS_ANSWERED
    return BinaryScores(
        accuracy=(tp + tn) / n,
        mcc=None if undefined else float((tp * tn - fp * fn) / denom),
        mcc_undefined=undefined,
        fpr=fp / (fp + tn) if fp + tn else float("nan"),
        fnr=fn / (fn + tp) if fn + tp else float("nan"),
        tp=tp,
        tn=tn,
        fp=fp,
        fn=fn,
        n_missing=int((~present).sum()),
    )


def accuracy(gold, predicted) -> float:
    """Share of exact matches; a NaN prediction counts as wrong (any number of labels)."""
    g = as_vector(gold, name="gold")
    p = as_vector(predicted, name="predicted", allow_nan=True)
    same_length(gold=g, predicted=p)
    return float(np.mean(g == p))


def rmse(gold, predicted) -> float:
    """Root mean squared error."""
    g = as_vector(gold, name="gold")
    p = as_vector(predicted, name="predicted")
    same_length(gold=g, predicted=p)
    return float(np.sqrt(np.mean((g - p) ** 2)))


@dataclass(frozen=True)
class TailRMSE:
    percent: float
    n: int
    top: float
    bottom: float


def _tail_rmse(gold: np.ndarray, squared: np.ndarray, size: int, *, highest: bool) -> float:
    """RMSE over the ``size`` items with the highest (lowest) gold grade, ties at the cut-off shared equally.

    The items strictly beyond the cut-off grade count fully; the items tied at it share the places left,
    each with weight places / tied, so the result never depends on the order of the rows.
    """
    ranked = np.sort(gold)[::-1] if highest else np.sort(gold)
    cut = ranked[size - 1]
    beyond = gold > cut if highest else gold < cut
    tied = gold == cut
    left = size - int(beyond.sum())
    total = float(squared[beyond].sum()) + left * float(squared[tied].mean())
    return float(np.sqrt(total / size))


def rmse_by_tail(gold, predicted, *, percent: float) -> TailRMSE:
    """RMSE over the ``percent``% items with the highest and with the lowest gold grade.

    The tail size is round(percent/100 · n), at least 1. When several items share the gold grade at
    the tail's edge and only some of them fit, the tied items share the remaining places equally
    (each counts with weight places / tied): a deterministic rule that gives the same figure in any
    row order, where picking some of the tied items would depend on how the file was sorted.
    """
    g = as_vector(gold, name="gold")
    p = as_vector(predicted, name="predicted")
    same_length(gold=g, predicted=p)
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    size = max(1, int(round(percent / 100.0 * g.size)))
    squared = (g - p) ** 2
    return TailRMSE(
        percent=float(percent),
        n=size,
        top=_tail_rmse(g, squared, size, highest=True),
        bottom=_tail_rmse(g, squared, size, highest=False),
    )


@dataclass(frozen=True)
class BinError:
    low: float
    high: float
    n: int
    mae: float


def mae_by_grade_bin(gold, predicted, *, width: float = 0.2, low: float = 0.0, high: float = 3.0) -> list[BinError]:
    """Mean absolute error within gold-grade bins [low, low+width), …, last bin closed.

    Bins with no item are listed with n=0 and mae=NaN.  Gold grades outside
    [low, high] raise ValueError.
    """
    g = as_vector(gold, name="gold")
    p = as_vector(predicted, name="predicted")
    same_length(gold=g, predicted=p)
    if width <= 0 or high <= low:
        raise ValueError(f"need width > 0 and high > low, got width={width}, [{low}, {high}]")
    if (g < low).any() or (g > high).any():
        raise ValueError(f"gold grades must lie in [{low}, {high}]")
    n_bins = int(math.ceil(round((high - low) / width, 9)))
    idx = np.minimum(np.floor(np.round((g - low) / width, 9)).astype(int), n_bins - 1)
    err = np.abs(g - p)
    counts = np.bincount(idx, minlength=n_bins)
    sums = np.bincount(idx, weights=err, minlength=n_bins)
    out = []
    for b in range(n_bins):
        lo = low + b * width
        out.append(
            BinError(
                low=round(lo, 10),
                high=round(min(lo + width, high), 10),
                n=int(counts[b]),
                mae=float(sums[b] / counts[b]) if counts[b] else float("nan"),
            )
        )
    return out


@dataclass(frozen=True)
class FunnierScores:
    accuracy: float
    reward: float
    n_pairs: int
    n_skipped_equal: int


def funnier_of_two(grade_1, grade_2, predicted) -> FunnierScores:
    """SemEval-2020 Task 7, subtask 2: which of two edits is funnier.

    ``predicted`` holds 1 or 2 (the edit the system thinks funnier); NaN means
    no answer and counts as wrong.  Pairs with equal gold grades are skipped.
    reward = mean over scored pairs of (+1 if right, −1 if wrong) × |g1 − g2|.
    """
    g1 = as_vector(grade_1, name="grade_1")
    g2 = as_vector(grade_2, name="grade_2")
    pred = as_vector(predicted, name="predicted", allow_nan=True)
    same_length(grade_1=g1, grade_2=g2, predicted=pred)
    given = pred[~np.isnan(pred)]
    if not np.isin(given, (1.0, 2.0)).all():
        raise ValueError("predicted must contain only 1, 2 or NaN")
    scored = g1 != g2
    if not scored.any():
        raise ValueError("every pair has equal grades; nothing to score")
    truth = np.where(g1 > g2, 1.0, 2.0)[scored]
    right = pred[scored] == truth
    sign = np.where(right, 1.0, -1.0)
    return FunnierScores(
        accuracy=float(np.mean(right)),
        reward=float(np.mean(sign * np.abs(g1 - g2)[scored])),
        n_pairs=int(scored.sum()),
        n_skipped_equal=int((~scored).sum()),
    )


@dataclass(frozen=True)
class GroupComparison:
    t: float
    df: float
    p_value: float
    cohens_d: float
    magnitude: str
    mean_1: float
    mean_2: float
    n_1: int
    n_2: int


def _magnitude(d: float) -> str:
    size = abs(d)
    if size < 0.2:
        return "negligible"
    if size < 0.5:
        return "small"
    if size < 0.8:
        return "medium"
    return "large"


def compare_groups(group_1, group_2) -> GroupComparison:
    """Student's two-sample t-test (equal variances) and Cohen's d with pooled SD.

    d = (mean_1 − mean_2) / s_pooled, s_pooled² = ((n1−1)s1² + (n2−1)s2²)/(n1+n2−2),
    sample variances (ddof=1).  Magnitude labels: |d| < 0.2 negligible, < 0.5
    small, < 0.8 medium, otherwise large.
    """
    a = as_vector(group_1, name="group_1", min_length=2)
    b = as_vector(group_2, name="group_2", min_length=2)
    n1, n2 = a.size, b.size
    pooled = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
    if pooled == 0:
        raise ValueError("both groups are constant; t and d are undefined")
    res = stats.ttest_ind(a, b, equal_var=True)
    d = (a.mean() - b.mean()) / pooled
    return GroupComparison(
        t=float(res.statistic),
        df=float(n1 + n2 - 2),
        p_value=float(res.pvalue),
        cohens_d=float(d),
        magnitude=_magnitude(float(d)),
        mean_1=float(a.mean()),
        mean_2=float(b.mean()),
        n_1=n1,
        n_2=n2,
    )
