# SPDX-License-Identifier: GPL-3.0-or-later
"""Fleiss' kappa (many raters) and Cohen's kappa (two raters), with a bootstrap.

Fleiss (1971): with N items each rated by the same number n of raters into
categories j, let p_j be the share of all ratings in category j and P_i the
share of agreeing rater pairs on item i.  Then
``kappa = (mean(P_i) − Σ p_j²) / (1 − Σ p_j²)``.

Cohen (1960, weighted 1968): from the K × K table of the two raters' labels,
``kappa = 1 − Σ w·observed / Σ w·expected`` with disagreement weights
w_ij = [i ≠ j] (unweighted), |i − j| / (K − 1) (linear) or
((i − j) / (K − 1))² (quadratic), where i, j are positions in the explicit
label list.  A label nobody used still counts: a gap in the middle of the
scale (nobody said "2" on 0–3) keeps 1 and 3 two steps apart, which a label
set inferred from the data would not.

Bootstrap p-value (documented definition): the share of bootstrap resamples
whose kappa is ≤ 0, i.e. a one-sided test of H0: kappa ≤ 0 read off the
bootstrap distribution.  With B resamples a value of 0 means p < 1/B.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._bootstrap import BootstrapResult, resample_blocks, summarise
from ._validation import (
    DEFAULT_SEED,
    as_categories,
    as_vector,
    category_index,
    check_confidence,
    check_resamples,
    same_length,
)
from .matrix import category_counts

Weights = Literal["linear", "quadratic"] | None


def fleiss_kappa(counts) -> float:
    """Fleiss' kappa from an items × categories table of rating counts.

    Every row must sum to the same number of raters (at least 2).  Returns NaN
    when chance agreement is 1 (every rating fell in one category).
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < 2:
        raise ValueError(f"counts must be a 2-D items × categories table with ≥ 2 categories, got shape {table.shape}")
    if (table < 0).any() or not np.all(table == np.round(table)):
        raise ValueError("counts must be non-negative whole numbers")
    per_item = table.sum(axis=1)
    n = per_item[0]
    if not np.all(per_item == n):
        raise ValueError(
            "Fleiss' kappa needs the same number of ratings on every item; "
            f"got between {int(per_item.min())} and {int(per_item.max())}"
        )
    if n < 2:
        raise ValueError(f"each item needs at least two ratings, got {int(n)}")
    p_j = table.sum(axis=0) / table.sum()
    p_i = (np.sum(table * table, axis=1) - n) / (n * (n - 1))
    p_bar = p_i.mean()
    p_e = np.sum(p_j**2)
    if p_e >= 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))


def fleiss_kappa_from_matrix(matrix, categories: Sequence[float] | np.ndarray) -> float:
    """Fleiss' kappa from an items × raters matrix and the explicit label set.

    Every item must carry the same number of ratings (NaN = not rated); which
    raters gave them may differ, as Fleiss allows.
    """
    return fleiss_kappa(category_counts(matrix, categories))


def _weight_matrix(n_labels: int, weights: Weights) -> np.ndarray:
    i, j = np.indices((n_labels, n_labels))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j) / (n_labels - 1)
    if weights == "quadratic":
        return ((i - j) / (n_labels - 1)) ** 2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def _kappa_from_tables(tables: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kappa for a stack of K × K count tables (shape B × K × K)."""
    totals = tables.sum(axis=(1, 2))
    p = tables / totals[:, None, None]
    expected = p.sum(axis=2)[:, :, None] * p.sum(axis=1)[:, None, :]
    observed_dis = np.einsum("bij,ij->b", p, w)
    expected_dis = np.einsum("bij,ij->b", expected, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected_dis > 0, 1.0 - observed_dis / expected_dis, np.nan)


def _codes(rater_a, rater_b, labels) -> tuple[np.ndarray, int]:
    a = as_vector(rater_a, name="rater_a")
    b = as_vector(rater_b, name="rater_b")
    same_length(rater_a=a, rater_b=b)
    cats = as_categories(labels, name="labels")
    ia = category_index(a, cats, name="rater_a labels")
    ib = category_index(b, cats, name="rater_b labels")
    return ia * cats.size + ib, cats.size


def confusion_table(rater_a, rater_b, *, labels: Sequence[float] | np.ndarray) -> np.ndarray:
    """K × K table of counts: rows are rater A's label, columns rater B's."""
    codes, k = _codes(rater_a, rater_b, labels)
    return np.bincount(codes, minlength=k * k).reshape(k, k)


def cohen_kappa(
    rater_a,
    rater_b,
    *,
    labels: Sequence[float] | np.ndarray,
    weights: Weights = None,
) -> float:
    """Cohen's kappa between two raters on an explicit, ordered label list.

    ``weights``: None (unweighted), "linear" or "quadratic".  Missing values
    are rejected (drop those items first, and say so).  Returns NaN when the
    expected disagreement is zero (both raters used a single, same label).
    """
    codes, k = _codes(rater_a, rater_b, labels)
    table = np.bincount(codes, minlength=k * k).reshape(1, k, k).astype(float)
    return float(_kappa_from_tables(table, _weight_matrix(k, weights))[0])


def cohen_kappa_bootstrap(
    rater_a,
    rater_b,
    *,
    labels: Sequence[float] | np.ndarray,
    weights: Weights = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
) -> BootstrapResult:
    """Cohen's kappa with a percentile bootstrap CI and a bootstrap p-value.

    Items (pairs of labels) are resampled with replacement.  ``p_value`` is
    the share of resamples with kappa ≤ 0 (one-sided, H0: kappa ≤ 0); see the
    module docstring.
    """
    n_resamples = check_resamples(n_resamples)
    confidence = check_confidence(confidence)
    codes, k = _codes(rater_a, rater_b, labels)
    w = _weight_matrix(k, weights)
    n = codes.size
    point = float(_kappa_from_tables(np.bincount(codes, minlength=k * k).reshape(1, k, k).astype(float), w)[0])
    rng = np.random.default_rng(seed)
    parts = []
    for block in resample_blocks(rng, n, n_resamples):
        rows = np.arange(block.shape[0])[:, None] * (k * k)
        flat = (rows + codes[block]).ravel()
        tables = np.bincount(flat, minlength=block.shape[0] * k * k).reshape(-1, k, k)
        parts.append(_kappa_from_tables(tables.astype(float), w))
    samples = np.concatenate(parts)
    return summarise(point, samples, confidence=confidence, seed=seed, n=n, p_value_at_or_below=0.0)
