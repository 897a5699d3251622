# SPDX-License-Identifier: GPL-3.0-or-later
"""Turning several raters' labels into one label per item.

* ``item_mean`` / ``item_median``: NaN-aware, NaN for an item nobody rated.
* ``majority_vote``: the most frequent label; a tie between the top labels is
  resolved toward the higher label, the lower label, or left undecided (NaN).
* ``dawid_skene``: the Dawid & Skene (1979) latent-class model fitted by EM.
  Each rater r has a confusion matrix π_r[j, l] = P(rater says l | true class
  j); classes have prior p_j.  E-step: posterior over the true class of each
  item from the priors and the raters' confusion rows.  M-step: priors and
  confusion matrices re-estimated from those posteriors.  We start from the
  per-item vote shares (the "soft" majority vote), add a small pseudo-count
  (``smoothing``) to every confusion cell so no probability is exactly 0, and
  stop when no posterior moves by more than ``tol`` or after ``max_iter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ._validation import as_categories, as_rating_matrix, category_index
from .matrix import category_counts

TieRule = Literal["higher", "lower", "undecided"]


def item_mean(matrix) -> np.ndarray:
    """Mean rating of each item over the raters who rated it (NaN if none did)."""
    arr = as_rating_matrix(matrix)
    n = (~np.isnan(arr)).sum(axis=1)
    total = np.nansum(arr, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)


def item_median(matrix) -> np.ndarray:
    """Median rating of each item (NaN if nobody rated it).

    With an even number of ratings the median is the midpoint of the two
    middle values (e.g. 1.5), as numpy computes it.
    """
    arr = as_rating_matrix(matrix)
    out = np.full(arr.shape[0], np.nan)
    rated = ~np.isnan(arr).all(axis=1)
    out[rated] = np.nanmedian(arr[rated], axis=1)
    return out


def majority_vote(
    matrix,
    *,
    categories: Sequence[float] | np.ndarray | None = None,
    tie: TieRule = "higher",
) -> np.ndarray:
    """Most frequent label per item; NaN for unrated items and undecided ties.

    ``categories`` defaults to the sorted set of values in the matrix; "higher"
    and "lower" refer to the numeric value of the tied labels.
    """
    arr = as_rating_matrix(matrix)
    if tie not in ("higher", "lower", "undecided"):
        raise ValueError(f"tie must be 'higher', 'lower' or 'undecided', got {tie!r}")
    if categories is None:
        cats = np.unique(arr[~np.isnan(arr)])
        if cats.size == 1:
            cats = np.append(cats, cats[0] + 1.0)
    else:
        cats = as_categories(categories)
    order = np.argsort(cats)
    cats = cats[order]
    counts = category_counts(arr, cats)
    top = counts.max(axis=1)
    is_top = (counts == top[:, None]) & (top[:, None] > 0)
    n_top = is_top.sum(axis=1)
    highest = cats.size - 1 - np.argmax(is_top[:, ::-1], axis=1)
    lowest = np.argmax(is_top, axis=1)
    if tie == "higher":
        pick = highest
    elif tie == "lower":
        pick = lowest
    else:
        pick = np.where(n_top == 1, lowest, -1)
    out = np.where(pick >= 0, cats[np.clip(pick, 0, None)], np.nan)
    out[top == 0] = np.nan
    return out


@dataclass
class DawidSkeneResult:
    """Fitted Dawid–Skene model.

    ``confusion[r, j, l]`` = P(rater r says categories[l] | true class j);
    ``posterior[i, j]`` = P(true class of item i is categories[j] | ratings);
    ``labels`` = most probable class per item, ``confidence`` its posterior.
    """

    categories: np.ndarray
    priors: np.ndarray
    confusion: np.ndarray
    posterior: np.ndarray
    labels: np.ndarray
    confidence: np.ndarray
    iterations: int
    converged: bool
    log_likelihood: float
    warnings: list[str] = field(default_factory=list)
    #: Columns of raters left out of the fit: they gave one label to every item they rated.
    constant_raters: list[int] = field(default_factory=list)

    @property
    def fitted(self) -> bool:
        """False when the data could not identify the model (fewer than two raters using two labels)."""
        return self.iterations > 0


#: Fewest raters who use more than one label for the model to say anything about the items.
MIN_INFORMATIVE_RATERS = 2


def _constant_raters(idx: np.ndarray) -> np.ndarray:
    """Columns whose given ratings (two or more) all carry the same label."""
    given = idx >= 0
    low = np.where(given, idx, np.iinfo(idx.dtype).max).min(axis=0, initial=np.iinfo(idx.dtype).max)
    high = np.where(given, idx, -1).max(axis=0, initial=-1)
    return np.flatnonzero((given.sum(axis=0) >= 2) & (low == high))


def _not_fitted(n_items: int, n_raters: int, cats: np.ndarray, notes: list[str], constant: list[int]):
    nan = np.full((n_items, cats.size), np.nan)
    return DawidSkeneResult(
        categories=cats,
        priors=np.full(cats.size, np.nan),
        confusion=np.full((n_raters, cats.size, cats.size), np.nan),
        posterior=nan,
        labels=np.full(n_items, np.nan),
        confidence=np.full(n_items, np.nan),
        iterations=0,
        converged=False,
        log_likelihood=float("nan"),
        warnings=notes,
        constant_raters=constant,
    )


def dawid_skene(
    matrix,
    *,
    categories: Sequence[float] | np.ndarray,
    max_iter: int = 200,
    tol: float = 1e-6,
    smoothing: float = 0.01,
    rater_names: Sequence[str] | None = None,
    category_names: Sequence[str] | None = None,
) -> DawidSkeneResult:
    """Fit the Dawid–Skene model by EM to an items × raters label matrix.

    Missing ratings (NaN) simply contribute nothing.  Items nobody rated get
    the prior as posterior.  ``smoothing`` (> 0) is a pseudo-count added to
    every confusion-matrix cell (and to the class counts) at each M-step.

    A rater who gave one label to every item (two or more) they rated says
    nothing about the items' classes — the model would fit them as "always
    says 1" whatever the truth — so they are left out of the fit, named in
    ``constant_raters`` and ``warnings``. With fewer than two raters left who
    use more than one label the model is not identified: nothing is fitted,
    every label, confidence and posterior is NaN, ``iterations`` is 0, and
    ``warnings`` says why, instead of a confident answer from the start
    values. ``rater_names`` (one per column) and ``category_names`` (one per
    category) name raters and labels in the warnings.
    """
    arr = as_rating_matrix(matrix)
    cats = as_categories(categories)
    if max_iter < 1:
        raise ValueError(f"max_iter must be ≥ 1, got {max_iter}")
    if tol <= 0 or smoothing <= 0:
        raise ValueError(f"tol and smoothing must be > 0, got tol={tol}, smoothing={smoothing}")
    n_items, n_raters = arr.shape
    n_cats = cats.size
    idx = category_index(arr, cats)
    names = list(rater_names) if rater_names is not None else [f"column {c + 1}" for c in range(n_raters)]
    if len(names) != n_raters:
        raise ValueError(f"rater_names has {len(names)} names for {n_raters} raters")
    label_names = list(category_names) if category_names is not None else [f"{c:g}" for c in cats]
    constant = _constant_raters(idx).tolist()
    notes: list[str] = []
    if constant:
        said = ", ".join(f"{names[c]} (always {label_names[idx[idx[:, c] >= 0, c][0]]})" for c in constant)
        notes.append(
            f"Dawid–Skene: {len(constant)} rater(s) gave one label to every item they rated: {said}. Such answers "
            "say nothing about which class an item is in, so these raters are left out of the fit."
        )
        idx = idx.copy()
        idx[:, constant] = -1
    informative = int(np.sum((idx >= 0).any(axis=0)))
    if informative < MIN_INFORMATIVE_RATERS:
        notes.append(
            f"Dawid–Skene needs at least {MIN_INFORMATIVE_RATERS} raters who use more than one label; these data "
            f"have {informative}, so no Dawid–Skene label is estimated (a fit would only echo its starting values)."
        )
        return _not_fitted(n_items, n_raters, cats, notes, constant)
    # Work on the list of given ratings (item, rater, label), so sparse
    # designs with many raters cost memory in proportion to the ratings.
    ii, rr = np.nonzero(idx >= 0)
    ll = idx[ii, rr]
    rater_label = rr * n_cats + ll

    counts = np.zeros((n_items, n_cats))
    np.add.at(counts, np.nonzero(idx >= 0)[0], np.eye(n_cats)[idx[idx >= 0]])
    rated = counts.sum(axis=1) > 0
    posterior = np.full((n_items, n_cats), 1.0 / n_cats)
    posterior[rated] = counts[rated] / counts[rated].sum(axis=1, keepdims=True)

    converged = False
    iterations = 0
    log_lik = float("nan")
    change = float("nan")
    confusion = np.empty((n_raters, n_cats, n_cats))
    log_post = np.empty((n_items, n_cats))
    while iterations < max_iter:
        iterations += 1
        # M-step: class priors and each rater's confusion rows.
        priors = posterior.sum(axis=0) + smoothing
        priors /= priors.sum()
        for j in range(n_cats):
            confusion[:, j, :] = np.bincount(
                rater_label, weights=posterior[ii, j], minlength=n_raters * n_cats
            ).reshape(n_raters, n_cats)
        confusion += smoothing
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step, in logs for stability.
        log_conf = np.log(confusion)
        for j in range(n_cats):
            log_post[:, j] = np.bincount(ii, weights=log_conf[rr, j, ll], minlength=n_items)
        log_post += np.log(priors)[None, :]
        top = log_post.max(axis=1, keepdims=True)
        weights = np.exp(log_post - top)
        norm = weights.sum(axis=1, keepdims=True)
        new_posterior = weights / norm
        log_lik = float(np.sum(np.log(norm) + top))
        change = float(np.max(np.abs(new_posterior - posterior)))
        posterior = new_posterior
        if change < tol:
            converged = True
            break
    if not converged:
        notes.append(f"Dawid–Skene: EM did not converge within {max_iter} iterations (last change {change:.2e})")
    if (~rated).any():
        left_out = " from a rater in the fit" if constant else ""
        notes.append(
            f"Dawid–Skene: {int((~rated).sum())} item(s) had no rating{left_out}; their posterior is the prior"
        )
    best = np.argmax(posterior, axis=1)
    return DawidSkeneResult(
        categories=cats,
        priors=priors,
        confusion=confusion,
        posterior=posterior,
        labels=cats[best],
        confidence=posterior[np.arange(n_items), best],
        iterations=iterations,
        converged=converged,
        log_likelihood=log_lik,
        warnings=notes,
        constant_raters=constant,
    )
