# SPDX-License-Identifier: GPL-3.0-or-later
"""Descriptive agreement on rating scales and nominal labels.

All functions take an items × raters matrix (NaN = not rated).  Items with
fewer than two ratings say nothing about agreement: they are left out of
every summary here, and the result counts how many were left out.

Definitions (our choices, see docs/stats.md):

* exact agreement: share of items on which every rater gave the same value;
* adjacent agreement: share of items whose ratings span at most one point
  (max − min ≤ 1, the JEST definition: all raters within one point);
* mean per-item SD: the sample standard deviation (ddof=1) of each item's
  ratings, averaged over items.  JEST reports "mean SD" without saying which
  SD; with a handful of raters per item the sample SD is the usual
  descriptive choice, and ``ddof`` lets a reproduction switch to ddof=0;
* mean absolute deviation: for each item, the mean of |x − centre| over its
  ratings, centre = the item's mean (default) or its median; averaged over items;
* percentage agreement: for nominal labels, the share of agreeing rater
  pairs on each item (Σ n_c (n_c − 1) / (m (m − 1))), averaged over items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._validation import as_rating_matrix


@dataclass(frozen=True)
class AgreementResult:
    """A share or mean over the items that had at least two ratings."""

    value: float
    n_items: int
    n_excluded: int


@dataclass(frozen=True)
class ItemSummary:
    """Per-item figures (one entry per row of the matrix; NaN where undefined)."""

    n_ratings: np.ndarray
    mean: np.ndarray
    median: np.ndarray
    sd: np.ndarray
    mad: np.ndarray
    exact: np.ndarray
    adjacent: np.ndarray
    share_at_median: np.ndarray
    share_within_one_of_median: np.ndarray


def _usable(matrix) -> tuple[np.ndarray, np.ndarray, int]:
    arr = as_rating_matrix(matrix)
    count = (~np.isnan(arr)).sum(axis=1)
    keep = count >= 2
    return arr[keep], count[keep], int((~keep).sum())


def _result(per_item: np.ndarray, n_excluded: int) -> AgreementResult:
    if per_item.size == 0:
        return AgreementResult(value=float("nan"), n_items=0, n_excluded=n_excluded)
    return AgreementResult(value=float(np.mean(per_item)), n_items=int(per_item.size), n_excluded=n_excluded)


def exact_agreement(matrix) -> AgreementResult:
    """Share of items on which all raters gave exactly the same value."""
    arr, _, excluded = _usable(matrix)
    spread = np.nanmax(arr, axis=1) - np.nanmin(arr, axis=1) if arr.size else np.empty(0)
    return _result((spread == 0).astype(float), excluded)


def adjacent_agreement(matrix, *, tolerance: float = 1.0) -> AgreementResult:
    """Share of items whose ratings lie within ``tolerance`` points (max − min ≤ 1)."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be ≥ 0, got {tolerance}")
    arr, _, excluded = _usable(matrix)
    spread = np.nanmax(arr, axis=1) - np.nanmin(arr, axis=1) if arr.size else np.empty(0)
    return _result((spread <= tolerance).astype(float), excluded)


def mean_item_sd(matrix, *, ddof: int = 1) -> AgreementResult:
    """Mean over items of the per-item standard deviation (sample SD by default)."""
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    arr, _, excluded = _usable(matrix)
    sd = np.nanstd(arr, axis=1, ddof=ddof) if arr.size else np.empty(0)
    return _result(sd, excluded)


def mean_absolute_deviation(matrix, *, center: Literal["mean", "median"] = "mean") -> AgreementResult:
    """Mean over items of the mean |rating − item centre| (centre = mean or median)."""
    arr, _, excluded = _usable(matrix)
    return _result(_mad(arr, center), excluded)


def _mad(arr: np.ndarray, center: str) -> np.ndarray:
    if center not in ("mean", "median"):
        raise ValueError(f"center must be 'mean' or 'median', got {center!r}")
    if arr.size == 0:
        return np.empty(0)
    mid = np.nanmean(arr, axis=1) if center == "mean" else np.nanmedian(arr, axis=1)
    return np.nanmean(np.abs(arr - mid[:, None]), axis=1)


def percentage_agreement(matrix) -> AgreementResult:
    """Pairwise percentage agreement for nominal labels, averaged over items.

    On each item with m ≥ 2 labels, the share of the m (m − 1) / 2 rater pairs
    that gave the same label; then the mean over items.  Labels are compared
    for equality only (their numeric codes carry no order).
    """
    arr, m, excluded = _usable(matrix)
    if arr.size == 0:
        return _result(np.empty(0), excluded)
    labels, inverse = np.unique(arr[~np.isnan(arr)], return_inverse=True)
    rows = np.nonzero(~np.isnan(arr))[0]
    counts = np.bincount(rows * labels.size + inverse.ravel(), minlength=arr.shape[0] * labels.size).reshape(
        arr.shape[0], labels.size
    )
    same = (counts * (counts - 1)).sum(axis=1)
    return _result(same / (m * (m - 1.0)), excluded)


def item_summary(matrix, *, ddof: int = 1, mad_center: Literal["mean", "median"] = "mean") -> ItemSummary:
    """Per-item figures for a "Dataset A" style sheet.

    ``share_at_median`` is the share of an item's raters whose rating equals
    the item's median, ``share_within_one_of_median`` the share within one
    point of it.  ``exact`` and ``adjacent`` are 1.0/0.0 flags per item.  Items
    with fewer than two ratings get NaN for every spread figure.
    """
    arr = as_rating_matrix(matrix)
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    n = (~np.isnan(arr)).sum(axis=1)
    out = {name: np.full(arr.shape[0], np.nan) for name in ItemSummary.__dataclass_fields__}
    out["n_ratings"] = n
    some = n >= 1
    pair = n >= 2
    sub = arr[some]
    out["mean"][some] = np.nanmean(sub, axis=1)
    med = np.nanmedian(sub, axis=1)
    out["median"][some] = med
    shares_at = np.nansum(sub == med[:, None], axis=1) / n[some]
    shares_near = np.nansum(np.abs(sub - med[:, None]) <= 1, axis=1) / n[some]
    paired = arr[pair]
    if paired.size:
        spread = np.nanmax(paired, axis=1) - np.nanmin(paired, axis=1)
        out["sd"][pair] = np.nanstd(paired, axis=1, ddof=ddof)
        out["mad"][pair] = _mad(paired, mad_center)
        out["exact"][pair] = (spread == 0).astype(float)
        out["adjacent"][pair] = (spread <= 1).astype(float)
    out["share_at_median"][some] = shares_at
    out["share_within_one_of_median"][some] = shares_near
    out["share_at_median"][~pair] = np.nan
    out["share_within_one_of_median"][~pair] = np.nan
    return ItemSummary(**out)
