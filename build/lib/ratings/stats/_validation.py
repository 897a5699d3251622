# SPDX-License-Identifier: GPL-3.0-or-later
"""Input checks shared by the statistics modules.

Every public function turns what it was given into plain numpy arrays through
these helpers, so that nonsense (empty input, ragged shapes, values outside a
declared label set) fails early with a ValueError that says what was wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Seed used by every randomised function when the caller gives none, so that
#: two runs on the same data print the same confidence interval.
DEFAULT_SEED = 20250101


def as_rating_matrix(matrix, *, name: str = "matrix", min_raters: int = 1) -> np.ndarray:
    """Return ``matrix`` as a 2-D float array (items × raters, NaN = missing)."""
    try:
        arr = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (use NaN for a missing rating): {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (items × raters), got {arr.ndim}-D")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.shape[1] < min_raters:
        raise ValueError(f"{name} needs at least {min_raters} raters, got {arr.shape[1]}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    if np.isnan(arr).all():
        raise ValueError(f"{name} has no ratings at all (every cell is NaN)")
    return arr


def as_vector(values, *, name: str, allow_nan: bool = False, min_length: int = 1) -> np.ndarray:
    """Return ``values`` as a 1-D float array, rejecting NaN unless allowed."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {arr.ndim}-D")
    if arr.size < min_length:
        raise ValueError(f"{name} needs at least {min_length} values, got {arr.size}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(f"{name} contains missing values (NaN); drop or impute them first")
    return arr


def same_length(**arrays: np.ndarray) -> int:
    """Check that all named arrays have the same length and return it."""
    lengths = {name: len(arr) for name, arr in arrays.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"inputs must have the same length: {detail}")
    return next(iter(lengths.values()))


def as_categories(categories: Sequence[float] | np.ndarray, *, name: str = "categories") -> np.ndarray:
    """Return an explicit label set as a float array, checking it is usable."""
    if categories is None:
        raise ValueError(f"{name} must be given explicitly")
    arr = np.asarray(categories, dtype=float)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} must list at least two labels, got {arr.tolist()}")
    if np.isnan(arr).any() or np.isinf(arr).any():
        raise ValueError(f"{name} must not contain NaN or infinity")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} contains duplicates: {arr.tolist()}")
    return arr


def category_index(values: np.ndarray, categories: np.ndarray, *, name: str = "values") -> np.ndarray:
    """Map each non-NaN value to its position in ``categories`` (NaN → -1).

    Raises ValueError naming the offending values when some are not in the set.
    """
    order = np.argsort(categories, kind="stable")
    sorted_cats = categories[order]
    flat = values.ravel()
    present = ~np.isnan(flat)
    pos = np.searchsorted(sorted_cats, flat[present])
    pos_clipped = np.minimum(pos, sorted_cats.size - 1)
    ok = sorted_cats[pos_clipped] == flat[present]
    if not ok.all():
        bad = np.unique(flat[present][~ok])[:10]
        raise ValueError(f"{name} contain labels outside the declared set {categories.tolist()}: {bad.tolist()}")
    out = np.full(flat.shape, -1, dtype=np.int64)
    out[present] = order[pos_clipped]
    return out.reshape(values.shape)


def check_confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return float(confidence)


def check_resamples(n_resamples: int, *, minimum: int = 1) -> int:
    if int(n_resamples) != n_resamples or n_resamples < minimum:
        raise ValueError(f"n_resamples must be an integer ≥ {minimum}, got {n_resamples}")
    return int(n_resamples)
