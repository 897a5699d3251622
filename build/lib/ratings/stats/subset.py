# SPDX-License-Identifier: GPL-3.0-or-later
"""Choosing k of n raters whose rating distributions are most balanced (JEST).

Each rater's distribution over the scale is compared with the uniform
distribution.  The default distance is the total-variation distance,
``TV(p) = ½ Σ_c |p_c − 1/C|`` (0 = perfectly balanced, bounded by 1 − 1/C);
``distance="kl"`` uses ``KL(p ‖ uniform) = log C − H(p)`` instead.  TV is the
default because it is bounded and does not blow up for a rater who never
uses a category.

A subset's score (lower is better) is

    mean distance of its members − correlation_weight × mean pairwise Spearman ρ

so ``correlation_weight=0`` (default) picks on balance alone, as JEST
describes, and a positive weight also favours raters who agree in rank.
When C(n, k) ≤ ``exhaustive_limit`` every subset is scored (ties go to the
first subset in lexicographic order); otherwise a greedy search starts from
the most balanced rater and repeatedly adds the rater that most lowers the
score.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats

from ._validation import as_categories, as_rating_matrix, category_index
from .aggregation import item_mean
from .correlation import spearman_matrix
from .report import METRICS, AgreementSummary, agreement_summary


@dataclass
class SubsetResult:
    """Selected raters (column indices) and the agreement table before/after."""

    selected: tuple[int, ...]
    method: Literal["exhaustive", "greedy"]
    score: float
    n_candidates: int
    distance_to_uniform: np.ndarray
    distributions: np.ndarray
    before: AgreementSummary
    after: AgreementSummary
    table: dict[str, tuple[float, float]]
    mean_rank_correlation: float
    warnings: list[str] = field(default_factory=list)


def rater_distributions(matrix, *, categories: Sequence[float] | np.ndarray) -> np.ndarray:
    """Raters × categories array: the share of each rater's ratings in each category.

    A rater with no ratings gets a row of NaN.
    """
    arr = as_rating_matrix(matrix)
    cats = as_categories(categories)
    idx = category_index(arr, cats)
    n_raters, n_cats = arr.shape[1], cats.size
    cols = np.broadcast_to(np.arange(n_raters)[None, :], arr.shape)
    present = idx >= 0
    counts = np.bincount(cols[present] * n_cats + idx[present], minlength=n_raters * n_cats).reshape(n_raters, n_cats)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, counts / totals, np.nan)


def distance_to_uniform(distributions: np.ndarray, *, distance: Literal["tv", "kl"] = "tv") -> np.ndarray:
    """Distance of each row distribution from the uniform one (see module docstring)."""
    p = np.asarray(distributions, dtype=float)
    n_cats = p.shape[1]
    if distance == "tv":
        return 0.5 * np.abs(p - 1.0 / n_cats).sum(axis=1)
    if distance == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(p > 0, p * np.log(p), 0.0)
        out = math.log(n_cats) + plogp.sum(axis=1)
        return np.where(np.isnan(p).any(axis=1), np.nan, out)
    raise ValueError(f"distance must be 'tv' or 'kl', got {distance!r}")


def _scores(combos: np.ndarray, dist: np.ndarray, rho: np.ndarray, weight: float) -> np.ndarray:
    score = dist[combos].mean(axis=1)
    k = combos.shape[1]
    if weight and k >= 2:
        pairs = list(itertools.combinations(range(k), 2))
        vals = np.stack([rho[combos[:, a], combos[:, b]] for a, b in pairs], axis=1)
        valid = ~np.isnan(vals)
        n_valid = valid.sum(axis=1)
        sums = np.where(valid, vals, 0.0).sum(axis=1)
        # A subset with no defined pairwise rho gets no correlation bonus.
        mean_rho = np.where(n_valid > 0, sums / np.maximum(n_valid, 1), 0.0)
        score = score - weight * mean_rho
    return score


def select_raters(
    matrix,
    *,
    k: int,
    categories: Sequence[float] | np.ndarray,
    correlation_weight: float = 0.0,
    distance: Literal["tv", "kl"] = "tv",
    exhaustive_limit: int = 200_000,
) -> SubsetResult:
    """Pick ``k`` raters with the most balanced rating distributions.

    Returns the chosen column indices (sorted), how they were found, the JEST
    agreement table for all raters and for the subset, and Spearman's rho
    between the all-rater and the subset per-item mean ratings.
    """
    arr = as_rating_matrix(matrix, min_raters=2)
    cats = as_categories(categories)
    n_raters = arr.shape[1]
    if not 1 <= k <= n_raters:
        raise ValueError(f"k must be between 1 and the number of raters ({n_raters}), got {k}")
    if correlation_weight < 0:
        raise ValueError(f"correlation_weight must be ≥ 0, got {correlation_weight}")
    dists = rater_distributions(arr, categories=cats)
    dist = distance_to_uniform(dists, distance=distance)
    usable = ~np.isnan(dist)
    if usable.sum() < k:
        raise ValueError(f"only {int(usable.sum())} raters have ratings; cannot choose {k}")
    notes: list[str] = []
    if (~usable).any():
        notes.append(f"{int((~usable).sum())} rater(s) with no ratings were not eligible")
    dist_eff = np.where(usable, dist, np.inf)
    rho = spearman_matrix(arr) if correlation_weight else np.zeros((n_raters, n_raters))

    n_candidates = math.comb(n_raters, k)
    if n_candidates <= exhaustive_limit:
        method: Literal["exhaustive", "greedy"] = "exhaustive"
        combos = np.array(list(itertools.combinations(range(n_raters), k)), dtype=np.int64)
        scores = _scores(combos, dist_eff, rho, correlation_weight)
        best = int(np.argmin(scores))
        selected = tuple(int(i) for i in combos[best])
        score = float(scores[best])
    else:
        method = "greedy"
        chosen = [int(np.argmin(dist_eff))]
        while len(chosen) < k:
            rest = np.array([r for r in range(n_raters) if r not in chosen and usable[r]])
            trial = np.column_stack([np.tile(chosen, (rest.size, 1)), rest])
            scores = _scores(trial, dist_eff, rho, correlation_weight)
            chosen.append(int(rest[int(np.argmin(scores))]))
        selected = tuple(sorted(chosen))
        score = float(_scores(np.array([selected]), dist_eff, rho, correlation_weight)[0])
        notes.append(f"C({n_raters},{k}) = {n_candidates} subsets exceed exhaustive_limit; used greedy search")

    before = agreement_summary(arr, categories=cats)
    sub = arr[:, list(selected)]
    after = agreement_summary(sub, categories=cats) if k >= 2 else None
    if after is None:
        nan_metrics = dict.fromkeys(METRICS, float("nan"))
        after = AgreementSummary(metrics=nan_metrics, n_items=arr.shape[0], n_raters=1)
        notes.append("agreement needs at least two raters; the subset table is NaN")
    table = {m: (before.metrics[m], after.metrics[m]) for m in METRICS}
    all_mean, sub_mean = item_mean(arr), np.full(arr.shape[0], np.nan)
    has = ~np.isnan(sub).all(axis=1)
    sub_mean[has] = np.nanmean(sub[has], axis=1)
    both = ~np.isnan(all_mean) & ~np.isnan(sub_mean)
    if both.sum() >= 3 and np.ptp(all_mean[both]) > 0 and np.ptp(sub_mean[both]) > 0:
        mean_rank_corr = float(stats.spearmanr(all_mean[both], sub_mean[both]).statistic)
    else:
        mean_rank_corr = float("nan")
    return SubsetResult(
        selected=selected,
        method=method,
        score=score,
        n_candidates=n_candidates,
        distance_to_uniform=dist,
        distributions=dists,
        before=before,
        after=after,
        table=table,
        mean_rank_correlation=mean_rank_corr,
        warnings=notes + before.warnings + after.warnings,
    )
