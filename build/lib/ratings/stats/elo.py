# SPDX-License-Identifier: GPL-3.0-or-later
"""Sequential Elo and "Stable Elo" (Elo replayed over random match orders).

After each match, with expected score E_a = 1 / (1 + 10^((R_b − R_a)/400)) and
actual score S (1 win, 0.5 tie, 0 loss for a):
``R_a += K (S − E_a)`` and ``R_b −= K (S − E_a)``.

Sequential Elo depends on the order of the matches, so Stable Elo replays the
same match list in ``n_orderings`` seeded random orders and reports, per
contestant, the mean final rating and its standard deviation across orders
(sample SD, ddof=1, by default).

The update is inherently sequential; it runs as a tight loop over plain
Python floats, which is faster than numpy for one scalar update at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import DEFAULT_SEED
from .pairwise import as_matches


@dataclass
class EloResult:
    mean: np.ndarray
    sd: np.ndarray
    per_ordering: np.ndarray
    k_factor: float
    initial: float
    seed: int | None
    names: tuple[str, ...] | None = None


_INV_400 = 1.0 / 400.0


def _replay(a: list[int], b: list[int], s2: list[int], ratings: list[float], k: float) -> None:
    """Play the matches in list order; ``s2`` is twice a's score (0, 1 or 2).

    Whole-number codes keep the lists made of Python's cached small ints, so
    building and freeing them per ordering costs no float allocations.
    """
    inv = _INV_400  # local names are cheaper than globals inside the loop
    points = (0.0, 0.5, 1.0)
    for i, j, code in zip(a, b, s2, strict=True):
        ri = ratings[i]
        rj = ratings[j]
        delta = k * (points[code] - 1.0 / (1.0 + 10.0 ** ((rj - ri) * inv)))
        ratings[i] = ri + delta
        ratings[j] = rj - delta


def _twice(score: np.ndarray) -> np.ndarray:
    return np.rint(score * 2).astype(np.int64)


def sequential_elo(
    a,
    b,
    score,
    *,
    n_contestants: int | None = None,
    k_factor: float = 32.0,
    initial: float = 1000.0,
) -> np.ndarray:
    """Final Elo ratings after one pass over the matches in the given order."""
    m = as_matches(a, b, score, n_contestants=n_contestants)
    if k_factor <= 0:
        raise ValueError(f"k_factor must be > 0, got {k_factor}")
    ratings = [float(initial)] * m.n_contestants
    _replay(m.a.tolist(), m.b.tolist(), _twice(m.score).tolist(), ratings, float(k_factor))
    return np.array(ratings)


def stable_elo(
    a,
    b,
    score,
    *,
    n_contestants: int | None = None,
    names=None,
    n_orderings: int = 5,
    k_factor: float = 32.0,
    initial: float = 1000.0,
    seed: int | None = DEFAULT_SEED,
    ddof: int = 1,
) -> EloResult:
    """Elo replayed over ``n_orderings`` random permutations of the match list."""
    m = as_matches(a, b, score, n_contestants=n_contestants, names=names)
    if n_orderings < 1:
        raise ValueError(f"n_orderings must be ≥ 1, got {n_orderings}")
    if k_factor <= 0:
        raise ValueError(f"k_factor must be > 0, got {k_factor}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    rng = np.random.default_rng(seed)
    s2 = _twice(m.score)
    per = np.empty((n_orderings, m.n_contestants))
    for o in range(n_orderings):
        order = rng.permutation(m.a.size)
        ratings = [float(initial)] * m.n_contestants
        _replay(m.a[order].tolist(), m.b[order].tolist(), s2[order].tolist(), ratings, float(k_factor))
        per[o] = ratings
    sd = per.std(axis=0, ddof=ddof) if n_orderings > ddof else np.full(m.n_contestants, np.nan)
    return EloResult(
        mean=per.mean(axis=0),
        sd=sd,
        per_ordering=per,
        k_factor=float(k_factor),
        initial=float(initial),
        seed=seed,
        names=m.names,
    )
