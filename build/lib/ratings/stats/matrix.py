# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn long-format judgments into an items × raters matrix, and back.

The matrix is the common currency of the package: rows are items (jokes,
texts), columns are raters (people or LLMs), cells hold the rating as a float
and NaN marks a rating that was never given.  Building it from a million
(item, rater, value) rows uses ``np.unique(..., return_inverse=True)`` and a
single fancy-index assignment, never a Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._validation import as_categories, as_rating_matrix, category_index, same_length


@dataclass(frozen=True)
class RatingMatrix:
    """An items × raters matrix with the original identifiers of rows and columns."""

    values: np.ndarray
    item_ids: np.ndarray
    rater_ids: np.ndarray

    @property
    def n_items(self) -> int:
        return self.values.shape[0]

    @property
    def n_raters(self) -> int:
        return self.values.shape[1]


def long_to_matrix(
    items: Sequence | np.ndarray,
    raters: Sequence | np.ndarray,
    values: Sequence | np.ndarray,
    *,
    duplicates: Literal["error", "mean", "last"] = "error",
) -> RatingMatrix:
    """Pivot parallel (item, rater, value) arrays into a :class:`RatingMatrix`.

    Items and raters may be any sortable identifiers (ints, strings); rows and
    columns come out in sorted identifier order.  ``values`` must be numeric;
    NaN values are treated as "not rated".

    ``duplicates`` says what to do when the same rater rated the same item
    twice: ``"error"`` (default) raises, ``"mean"`` averages the repeats,
    ``"last"`` keeps the last one in input order.
    """
    item_arr = np.asarray(items)
    rater_arr = np.asarray(raters)
    try:
        value_arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be numeric: {exc}") from exc
    for name, arr in (("items", item_arr), ("raters", rater_arr), ("values", value_arr)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    n = same_length(items=item_arr, raters=rater_arr, values=value_arr)
    if n == 0:
        raise ValueError("no judgments given (empty input)")
    if np.isinf(value_arr).any():
        raise ValueError("values contain infinite numbers")
    if duplicates not in ("error", "mean", "last"):
        raise ValueError(f"duplicates must be 'error', 'mean' or 'last', got {duplicates!r}")

    keep = ~np.isnan(value_arr)
    item_ids, item_idx = np.unique(item_arr, return_inverse=True)
    rater_ids, rater_idx = np.unique(rater_arr, return_inverse=True)
    item_idx, rater_idx, value_arr = item_idx[keep], rater_idx[keep], value_arr[keep]
    n_items, n_raters = item_ids.size, rater_ids.size
    out = np.full((n_items, n_raters), np.nan)
    if value_arr.size == 0:
        raise ValueError("every value is NaN: there are no ratings")

    cell = item_idx.astype(np.int64) * n_raters + rater_idx
    counts = np.bincount(cell, minlength=n_items * n_raters)
    if (counts > 1).any():
        if duplicates == "error":
            first = int(np.flatnonzero(counts > 1)[0])
            raise ValueError(
                f"{int((counts > 1).sum())} (item, rater) cells were rated more than once, "
                f"e.g. item {item_ids[first // n_raters]!r} by rater "
                f"{rater_ids[first % n_raters]!r}; pass duplicates='mean' or 'last'"
            )
        if duplicates == "mean":
            sums = np.bincount(cell, weights=value_arr, minlength=n_items * n_raters)
            rated = counts > 0
            flat = out.reshape(-1)
            flat[rated] = sums[rated] / counts[rated]
            return RatingMatrix(values=out, item_ids=item_ids, rater_ids=rater_ids)
    # With "last" (or no repeats) plain assignment keeps the final occurrence,
    # because numpy applies repeated fancy-index writes in order.
    out.reshape(-1)[cell] = value_arr
    return RatingMatrix(values=out, item_ids=item_ids, rater_ids=rater_ids)


def matrix_to_long(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (item_index, rater_index, value) arrays for the rated cells."""
    arr = as_rating_matrix(matrix)
    item_idx, rater_idx = np.nonzero(~np.isnan(arr))
    return item_idx, rater_idx, arr[item_idx, rater_idx]


def ratings_per_item(matrix) -> np.ndarray:
    """Number of non-missing ratings in each row."""
    arr = as_rating_matrix(matrix)
    return (~np.isnan(arr)).sum(axis=1)


def category_counts(matrix, categories: Sequence[float] | np.ndarray) -> np.ndarray:
    """Items × categories table: how many raters gave each label to each item.

    ``categories`` is the explicit label set (its order is the column order).
    A value that is not in the set raises ValueError.
    """
    arr = as_rating_matrix(matrix)
    cats = as_categories(categories)
    idx = category_index(arr, cats)
    n_items, n_cats = arr.shape[0], cats.size
    rows = np.broadcast_to(np.arange(n_items)[:, None], arr.shape)
    present = idx >= 0
    flat = rows[present].astype(np.int64) * n_cats + idx[present]
    return np.bincount(flat, minlength=n_items * n_cats).reshape(n_items, n_cats)


def encode_labels(labels: Sequence | np.ndarray, label_set: Sequence) -> np.ndarray:
    """Code arbitrary labels (strings such as "A"/"B"/"TIE") as their index in ``label_set``.

    ``None`` or NaN become NaN (missing).  Anything else that is not in the set
    raises ValueError.  The result can go into a rating matrix.
    """
    lookup = {label: float(i) for i, label in enumerate(label_set)}
    if len(lookup) != len(label_set):
        raise ValueError(f"label_set contains duplicates: {list(label_set)}")
    arr = np.asarray(labels, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {arr.shape}")
    missing = np.array([x is None or (isinstance(x, float) and x != x) for x in arr], dtype=bool)
    out = np.full(arr.size, np.nan)
    if (~missing).any():
        uniq, inverse = np.unique(arr[~missing].astype(str), return_inverse=True)
        by_text = {str(label): code for label, code in lookup.items()}
        if len(by_text) != len(lookup):
            raise ValueError(f"label_set has labels that print the same: {list(label_set)}")
        unknown = [u for u in uniq if u not in by_text]
        if unknown:
            raise ValueError(f"labels {unknown[:10]} are not in the label set {list(label_set)}")
        codes = np.array([by_text[u] for u in uniq], dtype=float)
        out[~missing] = codes[inverse]
    return out
