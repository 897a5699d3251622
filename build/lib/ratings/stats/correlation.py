# SPDX-License-Identifier: GPL-3.0-or-later
"""Rank correlations with bootstrap intervals, and the rater × rater Spearman matrix.

Point estimates and p-values come from scipy (``spearmanr``; ``kendalltau``,
which is tau-b, i.e. corrected for ties).  Intervals are percentile bootstraps
over items (pairs resampled with replacement).  The bootstrap p-value, when
asked for, is the share of resamples whose correlation is ≤ 0 (one-sided,
H0: correlation ≤ 0), the same definition as for kappa.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ._bootstrap import resample_blocks, summarise
from ._validation import (
    DEFAULT_SEED,
    as_rating_matrix,
    as_vector,
    check_confidence,
    check_resamples,
    same_length,
)


@dataclass(frozen=True)
class CorrelationResult:
    """A correlation with scipy's two-sided p-value and a bootstrap interval."""

    estimate: float
    p_value: float
    ci_low: float
    ci_high: float
    bootstrap_p_value: float | None
    confidence: float
    n: int
    n_resamples: int
    n_valid: int
    seed: int | None
    warnings: list[str]
    samples: np.ndarray = field(repr=False)


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    a = as_vector(x, name="x", min_length=3)
    b = as_vector(y, name="y", min_length=3)
    same_length(x=a, y=b)
    return a, b


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (a * b).sum(axis=1) / denom, np.nan)


def spearman(
    x,
    y,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
) -> CorrelationResult:
    """Spearman's rho between two equal-length vectors with a bootstrap CI.

    Resamples are ranked row-wise (ties get average ranks), so the bootstrap
    is vectorised.  A resample in which one side is constant has no rho and is
    skipped (counted in ``n_valid``).
    """
    a, b = _pair(x, y)
    n_resamples = check_resamples(n_resamples)
    confidence = check_confidence(confidence)
    res = stats.spearmanr(a, b)
    rng = np.random.default_rng(seed)
    parts = []
    for block in resample_blocks(rng, a.size, n_resamples):
        ra = stats.rankdata(a[block], axis=1)
        rb = stats.rankdata(b[block], axis=1)
        parts.append(_rowwise_pearson(ra, rb))
    samples = np.concatenate(parts)
    return _result(float(res.statistic), float(res.pvalue), samples, confidence, seed, a.size)


def kendall(
    x,
    y,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
) -> CorrelationResult:
    """Kendall's tau-b between two vectors with a bootstrap CI (scipy per resample)."""
    a, b = _pair(x, y)
    n_resamples = check_resamples(n_resamples)
    confidence = check_confidence(confidence)
    res = stats.kendalltau(a, b)
    rng = np.random.default_rng(seed)
    samples = np.empty(n_resamples)
    for i in range(n_resamples):
        idx = rng.integers(0, a.size, size=a.size)
        xa, yb = a[idx], b[idx]
        if np.ptp(xa) == 0 or np.ptp(yb) == 0:
            samples[i] = np.nan
        else:
            samples[i] = stats.kendalltau(xa, yb).statistic
    return _result(float(res.statistic), float(res.pvalue), samples, confidence, seed, a.size)


def _result(estimate, p_value, samples, confidence, seed, n) -> CorrelationResult:
    boot = summarise(estimate, samples, confidence=confidence, seed=seed, n=n, p_value_at_or_below=0.0)
    return CorrelationResult(
        estimate=estimate,
        p_value=p_value,
        ci_low=boot.ci_low,
        ci_high=boot.ci_high,
        bootstrap_p_value=boot.p_value,
        confidence=confidence,
        n=n,
        n_resamples=boot.n_resamples,
        n_valid=boot.n_valid,
        seed=seed,
        warnings=boot.warnings,
        samples=samples,
    )


def spearman_matrix(matrix, *, min_overlap: int = 3) -> np.ndarray:
    """Rater × rater Spearman matrix using pairwise-complete items.

    Cell (i, j) is Spearman's rho over the items both raters rated; it is NaN
    when they share fewer than ``min_overlap`` items or one of them is
    constant on the shared items.  The diagonal is 1 for any rater with at
    least ``min_overlap`` ratings that are not all equal, NaN otherwise.
    """
    arr = as_rating_matrix(matrix)
    if min_overlap < 2:
        raise ValueError(f"min_overlap must be at least 2, got {min_overlap}")
    k = arr.shape[1]
    out = np.full((k, k), np.nan)
    rated = ~np.isnan(arr)
    if rated.all():
        # Complete data: rank every column once and correlate all at once.
        if arr.shape[0] < min_overlap:
            return out
        ranks = stats.rankdata(arr, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.atleast_2d(np.corrcoef(ranks, rowvar=False))
        constant = np.ptp(arr, axis=0) == 0
        out[constant, :] = np.nan
        out[:, constant] = np.nan
        return out
    for i in range(k):
        for j in range(i, k):
            both = rated[:, i] & rated[:, j]
            if both.sum() < min_overlap:
                continue
            xi, xj = arr[both, i], arr[both, j]
            if np.ptp(xi) == 0 or np.ptp(xj) == 0:
                continue
            if i == j:
                out[i, i] = 1.0
                continue
            ri, rj = _average_ranks(xi), _average_ranks(xj)
            out[i, j] = out[j, i] = float(np.corrcoef(ri, rj)[0, 1])
    return out


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (1-based), like ``scipy.stats.rankdata``.

    Rating scales hold a few whole numbers, so ranks come from a bincount of
    the values in linear time; anything else goes to scipy.
    """
    lo, hi = x.min(), x.max()
    if hi - lo <= 10_000 and np.all(x == np.round(x)):
        codes = (x - lo).astype(np.int64)
        counts = np.bincount(codes)
        below = np.cumsum(counts) - counts
        return (below + (counts + 1) / 2.0)[codes]
    return stats.rankdata(x)


def mean_offdiagonal(square) -> float:
    """Mean of the off-diagonal cells of a square matrix, ignoring NaN cells.

    Returns NaN when every off-diagonal cell is NaN.
    """
    arr = np.asarray(square, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"need a square matrix of size ≥ 2, got shape {arr.shape}")
    upper = arr[np.triu_indices(arr.shape[0], k=1)]
    if np.isnan(upper).all():
        return float("nan")
    return float(np.nanmean(upper))
