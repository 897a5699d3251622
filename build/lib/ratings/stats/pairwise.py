# SPDX-License-Identifier: GPL-3.0-or-later
"""Pairwise comparisons: match lists, win matrices, win rates, transitivity.

A match list is three parallel arrays: ``a`` and ``b`` are contestant indices
(0 … K−1) and ``score`` is a's result: 1 = a won, 0.5 = tie, 0 = b won.
Ties count as half a win to each side everywhere in this package.
:func:`encode_matches` builds such a list from labels such as "A"/"B"/"TIE".

The win matrix ``W[i, j]`` holds how many (possibly half) wins i scored
against j; ``W + W.T`` is the number of games between each pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.sparse.csgraph import connected_components

from ._validation import as_vector, same_length


@dataclass(frozen=True)
class Matches:
    """A validated match list."""

    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    n_contestants: int
    names: tuple[str, ...] | None = None

    def name(self, i: int) -> str:
        return self.names[i] if self.names is not None else f"#{i}"


def _whole(arr: np.ndarray) -> bool:
    try:
        as_float = arr.astype(float)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(as_float)) and np.all(np.mod(as_float, 1) == 0))


def as_matches(a, b, score, *, n_contestants: int | None = None, names=None) -> Matches:
    """Validate a match list (see module docstring) and return it as :class:`Matches`."""
    a_arr = np.asarray(a)
    b_arr = np.asarray(b)
    s_arr = as_vector(score, name="score", min_length=0)
    for label, arr in (("a", a_arr), ("b", b_arr)):
        if arr.ndim != 1:
            raise ValueError(f"{label} must be 1-D, got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer) and not _whole(arr):
            raise ValueError(f"{label} must hold integer contestant indices (use encode_matches for labels)")
    n = same_length(a=a_arr, b=b_arr, score=s_arr)
    if n == 0:
        raise ValueError("the match list is empty")
    a_arr = a_arr.astype(np.int64)
    b_arr = b_arr.astype(np.int64)
    if (a_arr < 0).any() or (b_arr < 0).any():
        raise ValueError("contestant indices must be ≥ 0")
    if (a_arr == b_arr).any():
        raise ValueError(f"{int((a_arr == b_arr).sum())} match(es) pit a contestant against itself")
    if not np.isin(s_arr, (0.0, 0.5, 1.0)).all():
        raise ValueError("score must be 1 (a won), 0.5 (tie) or 0 (b won)")
    top = int(max(a_arr.max(), b_arr.max())) + 1
    k = top if n_contestants is None else int(n_contestants)
    if k < top:
        raise ValueError(f"n_contestants={k} but an index {top - 1} appears")
    if k < 2:
        raise ValueError("need at least two contestants")
    if names is not None:
        names = tuple(str(x) for x in names)
        if len(names) != k:
            raise ValueError(f"{len(names)} names given for {k} contestants")
    return Matches(a=a_arr, b=b_arr, score=s_arr, n_contestants=k, names=names)


def encode_matches(
    left: Sequence,
    right: Sequence,
    outcome: Sequence,
    *,
    contestants: Sequence | None = None,
    left_wins: str = "A",
    right_wins: str = "B",
    tie: str = "TIE",
) -> Matches:
    """Build a match list from contestant labels and A/B/TIE outcomes.

    ``contestants`` fixes the index order (default: sorted labels seen).
    """
    left_arr = np.asarray(left).astype(str)
    right_arr = np.asarray(right).astype(str)
    out_arr = np.asarray(outcome).astype(str)
    same_length(left=left_arr, right=right_arr, outcome=out_arr)
    if contestants is None:
        names = np.unique(np.concatenate([left_arr, right_arr]))
    else:
        names = np.asarray(contestants).astype(str)
        if np.unique(names).size != names.size:
            raise ValueError("contestants contains duplicates")
    order = np.argsort(names)
    sorted_names = names[order]
    idx = []
    for label, arr in (("left", left_arr), ("right", right_arr)):
        pos = np.clip(np.searchsorted(sorted_names, arr), 0, sorted_names.size - 1)
        if arr.size and not (sorted_names[pos] == arr).all():
            bad = np.unique(arr[sorted_names[pos] != arr])[:5].tolist()
            raise ValueError(f"{label} contestants not in the contestant list: {bad}")
        idx.append(order[pos])
    mapping = {left_wins: 1.0, tie: 0.5, right_wins: 0.0}
    uniq, inverse = np.unique(out_arr, return_inverse=True)
    unknown = [u for u in uniq if u not in mapping]
    if unknown:
        raise ValueError(f"outcomes {unknown} are not one of {list(mapping)}")
    score = np.array([mapping[u] for u in uniq])[inverse] if uniq.size else np.empty(0)
    return as_matches(idx[0], idx[1], score, n_contestants=names.size, names=names.tolist())


def win_matrix(a, b, score, *, n_contestants: int | None = None) -> np.ndarray:
    """K × K matrix of wins (ties as half a win to each side)."""
    m = as_matches(a, b, score, n_contestants=n_contestants)
    return _wins(m)


def _wins(m: Matches) -> np.ndarray:
    k = m.n_contestants
    w = np.bincount(m.a * k + m.b, weights=m.score, minlength=k * k)
    w += np.bincount(m.b * k + m.a, weights=1.0 - m.score, minlength=k * k)
    return w.reshape(k, k)


def _as_wins(wins) -> np.ndarray:
    w = np.asarray(wins, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 2:
        raise ValueError(f"wins must be a square K × K matrix with K ≥ 2, got shape {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("wins must be finite and non-negative")
    if np.any(np.diag(w) != 0):
        raise ValueError("wins must have a zero diagonal (no self-matches)")
    return w


def win_rates(wins) -> np.ndarray:
    """Each contestant's share of points over all its games (NaN if it never played)."""
    w = _as_wins(wins)
    games = (w + w.T).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, w.sum(axis=1) / games, np.nan)


def win_rate_matrix(wins) -> np.ndarray:
    """Cell (i, j): share of the i-vs-j games that i won; NaN where they never met."""
    w = _as_wins(wins)
    games = w + w.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, w / games, np.nan)


@dataclass(frozen=True)
class TriadResult:
    """Directed 3-cycles i > j > k > i in the majority-preference graph."""

    count: int
    triads: list[tuple[int, int, int]]


def intransitive_triads(wins, *, list_limit: int = 1000) -> TriadResult:
    """Count cyclic triads; i "beats" j when W[i, j] > W[j, i] (equal = no edge).

    ``triads`` lists up to ``list_limit`` cycles, each rotated so its smallest
    index comes first.
    """
    w = _as_wins(wins)
    beats = (w > w.T).astype(np.int64)
    count = int(np.trace(beats @ beats @ beats)) // 3
    found: list[tuple[int, int, int]] = []
    if count:
        k = w.shape[0]
        for i in range(k):
            for j in np.flatnonzero(beats[i]):
                if j <= i:
                    continue
                for m in np.flatnonzero(beats[j] & beats[:, i]):
                    if m > i and len(found) < list_limit:
                        found.append((i, int(j), int(m)))
    return TriadResult(count=count, triads=found)


def ranking_kendall_tau(scores_a, scores_b) -> tuple[float, float]:
    """Kendall's tau-b (and scipy's p-value) between two score vectors over the
    same contestants, e.g. the BT ratings given by two judges."""
    x = as_vector(scores_a, name="scores_a", min_length=2)
    y = as_vector(scores_b, name="scores_b", min_length=2)
    same_length(scores_a=x, scores_b=y)
    res = stats.kendalltau(x, y)
    return float(res.statistic), float(res.pvalue)


def graph_warnings(wins, names: Sequence[str] | None = None) -> tuple[list[str], bool]:
    """Problems that make the Bradley–Terry MLE not exist, as readable warnings.

    Returns (warnings, needs_regularisation).  The MLE exists exactly when the
    directed "scored a point against" graph is strongly connected (Hunter 2004).
    """
    w = _as_wins(wins)
    k = w.shape[0]

    def nm(i: int) -> str:
        return names[i] if names is not None else f"#{i}"

    notes: list[str] = []
    games = w + w.T
    played = games.sum(axis=1) > 0
    for i in np.flatnonzero(~played):
        notes.append(f"contestant {nm(i)} has no matches; its rating only reflects the regularisation")
    n_weak, weak_labels = connected_components(games > 0, directed=False)
    if n_weak > 1:
        groups = [[nm(i) for i in np.flatnonzero(weak_labels == c)] for c in range(n_weak)]
        notes.append(
            f"the comparison graph is disconnected into {n_weak} groups {groups}; ratings are "
            "not comparable across groups"
        )
    scored = w.sum(axis=1)
    conceded = w.sum(axis=0)
    for i in np.flatnonzero(played & (conceded == 0)):
        notes.append(f"contestant {nm(i)} is undefeated (never lost or tied); its MLE rating is infinite")
    for i in np.flatnonzero(played & (scored == 0)):
        notes.append(f"contestant {nm(i)} is winless (never won or tied); its MLE rating is -infinite")
    n_strong, _ = connected_components(w > 0, directed=True, connection="strong")
    needs = n_strong > 1 or k < 2
    if needs and not notes:
        notes.append("some group of contestants never scored against the rest; the MLE does not exist")
    return notes, bool(needs)
