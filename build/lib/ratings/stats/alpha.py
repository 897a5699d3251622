# SPDX-License-Identifier: GPL-3.0-or-later
"""Krippendorff's alpha for nominal, ordinal, interval and ratio data.

Alpha compares the disagreement observed inside items with the disagreement
expected if all pairable values were shuffled across items:
``alpha = 1 - D_observed / D_expected``.  Both are computed from the
coincidence matrix, where every ordered pair of values given to the same item
by two different raters adds ``1 / (m_u - 1)`` (``m_u`` = number of values the
item received).  Items with a single value cannot be paired and are ignored,
as Krippendorff prescribes.

Our implementation works from the items × categories count table, so the
coincidence matrix is one weighted matrix product; that is what makes a
bootstrap over items cheap (each resample only changes the item weights).  It
is cross-checked against the ``krippendorff`` package in the tests.

Input orientation: items × raters (the ``krippendorff`` package uses the
transpose, raters × units).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._bootstrap import BootstrapResult, summarise
from ._validation import (
    DEFAULT_SEED,
    as_categories,
    as_rating_matrix,
    check_confidence,
    check_resamples,
)
from .matrix import category_counts

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


def _domain(arr: np.ndarray, value_domain, level: str) -> np.ndarray:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if value_domain is None:
        domain = np.unique(arr[~np.isnan(arr)])
        if domain.size < 2:
            # A single observed value: alpha is undefined unless the caller
            # declares the scale.  Keep going so the caller gets NaN.
            domain = np.append(domain, domain[0] + 1.0)
        _check_ratio(domain, level)
        return domain
    domain = as_categories(value_domain, name="value_domain")
    if level != "nominal" and np.any(np.diff(domain) <= 0):
        raise ValueError(f"value_domain must be in increasing order for level={level!r}: {domain.tolist()}")
    return domain


def _distance(domain: np.ndarray, level: str, n_c: np.ndarray) -> np.ndarray:
    """Squared distance δ²(c, k) between the domain values for the given level."""
    c = domain[:, None]
    k = domain[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        total = c + k
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(total != 0, (c - k) / total, 0.0)
        return d**2
    # ordinal: the marginal frequencies from one value up to the other, minus
    # half of the two end points, squared.  Positions come from the domain order.
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(domain.size)
    lo = np.minimum(i[:, None], i[None, :])
    hi = np.maximum(i[:, None], i[None, :])
    between = cum[hi + 1] - cum[lo]
    return (between - (n_c[lo] + n_c[hi]) / 2.0) ** 2


def _pairable_counts(arr: np.ndarray, domain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = category_counts(arr, domain).astype(float)
    m = counts.sum(axis=1)
    keep = m >= 2
    if not keep.any():
        raise ValueError("no item has two or more ratings, so nothing can be paired and alpha is undefined")
    return counts[keep], m[keep]


def _alpha_from_weights(
    counts: np.ndarray, m: np.ndarray, weights: np.ndarray, domain: np.ndarray, level: str
) -> float:
    """Alpha for item weights (1 for the data itself, bootstrap multiplicities otherwise)."""
    scale = weights / (m - 1.0)
    o = (counts * scale[:, None]).T @ counts
    o -= np.diag((counts * scale[:, None]).sum(axis=0))
    n_c = o.sum(axis=0)
    n = n_c.sum()
    if n <= 1:
        return float("nan")
    d = _distance(domain, level, n_c)
    observed = (o * d).sum()
    expected = (np.outer(n_c, n_c) * d).sum() / (n - 1.0)
    if expected <= 0:
        return float("nan")
    return float(1.0 - observed / expected)


def krippendorff_alpha(
    matrix,
    *,
    level: Level = "interval",
    value_domain: Sequence[float] | np.ndarray | None = None,
) -> float:
    """Krippendorff's alpha of an items × raters matrix (NaN = missing).

    ``level`` is one of "nominal", "ordinal", "interval", "ratio".
    ``value_domain`` is the ordered scale (e.g. ``[0, 1, 2, 3]``); when given,
    a value outside it raises ValueError.  For ordinal data the domain order
    sets the rank of each value.  Returns NaN when alpha is undefined (all
    pairable values identical, so no disagreement can be expected).
    """
    arr = as_rating_matrix(matrix)
    domain = _domain(arr, value_domain, level)
    counts, m = _pairable_counts(arr, domain)
    return _alpha_from_weights(counts, m, np.ones(m.size), domain, level)


def _check_ratio(domain: np.ndarray, level: str) -> None:
    if level == "ratio" and (domain < 0).any():
        raise ValueError("ratio-level alpha needs non-negative values (a true zero)")


def krippendorff_alpha_bootstrap(
    matrix,
    *,
    level: Level = "interval",
    value_domain: Sequence[float] | np.ndarray | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
) -> BootstrapResult:
    """Alpha with a percentile bootstrap interval, resampling items with replacement.

    Only pairable items (two or more ratings) are resampled; each resample
    draws as many of them as there are.  This is a plain item bootstrap, not
    Krippendorff's own resampling of pairable values.  Resamples where alpha is
    undefined are skipped and counted in ``n_valid``.
    """
    arr = as_rating_matrix(matrix)
    n_resamples = check_resamples(n_resamples)
    confidence = check_confidence(confidence)
    domain = _domain(arr, value_domain, level)
    counts, m = _pairable_counts(arr, domain)
    estimate = _alpha_from_weights(counts, m, np.ones(m.size), domain, level)
    rng = np.random.default_rng(seed)
    n_items = m.size
    samples = np.empty(n_resamples)
    for b in range(n_resamples):
        weights = np.bincount(rng.integers(0, n_items, size=n_items), minlength=n_items)
        samples[b] = _alpha_from_weights(counts, m, weights.astype(float), domain, level)
    return summarise(estimate, samples, confidence=confidence, seed=seed, n=n_items)


def krippendorff_alpha_all_levels(
    matrix, *, value_domain: Sequence[float] | np.ndarray | None = None
) -> dict[str, float]:
    """Alpha at all four levels of measurement, sharing one count table.

    The ratio level needs non-negative values; with negative values it is NaN.
    """
    arr = as_rating_matrix(matrix)
    domain = _domain(arr, value_domain, "ordinal" if value_domain is not None else "nominal")
    counts, m = _pairable_counts(arr, domain)
    ones = np.ones(m.size)
    out = {}
    for lvl in LEVELS:
        if lvl == "ratio" and (domain < 0).any():
            out[lvl] = float("nan")
        else:
            out[lvl] = _alpha_from_weights(counts, m, ones, domain, lvl)
    return out
