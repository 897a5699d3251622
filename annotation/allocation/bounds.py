"""Confidence bounds for the mean of rewards in [0, 1], vectorised over items.

Two families, each chosen for what it is used for (docs/adaptive.md):

- **KL bounds, anytime-valid** (``kl_bounds``): the Chernoff bound in its
  Kullback–Leibler form holds for any reward in [0, 1], not only 0/1, so after
  ``n`` rewards with mean ``m`` the true mean lies in
  ``{q : n · kl(m, q) ≤ level}``. The level ``log(2 · K · n · (n + 1) / δ)``
  pays a union over the K items and over every ``n`` (Σ 1/(n(n+1)) = 1), so
  the bounds hold for all items at all times at once with probability ≥ 1 − δ —
  whatever rule chose which item to sample next. This is what makes them
  valid under adaptive allocation; ``top_k`` uses and reports them.
- **Normal-approximation intervals** (``normal_halfwidth``): ± z · s / √n with a
  variance shrunk toward a prior so that two equal answers do not read as
  certainty; the prior's weight halves with each answer that agrees with all
  before it (``shrunk_sd``). Not anytime-valid: ``precision`` only uses it to decide when an
  item is measured well enough; reports give the KL bounds beside it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

_EPS = 1e-12
_STEPS = 40  # bisection halvings: the bound to about 1e-12


def kl_bernoulli(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """kl(p, q) = p log(p/q) + (1−p) log((1−p)/(1−q)), elementwise, with 0 log 0 = 0."""
    p = np.clip(p, 0.0, 1.0)
    q = np.clip(q, _EPS, 1.0 - _EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0) / (1 - q)), 0.0)
    return a + b


def kl_level(n: np.ndarray, *, delta: float, arms: int) -> np.ndarray:
    """The anytime level log(2·K·n·(n+1)/δ) for items sampled ``n`` times (see the module docstring)."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    return np.log(2.0 * max(arms, 1) * n * (n + 1.0) / delta)


def kl_bounds(
    n: np.ndarray, total: np.ndarray, *, delta: float, arms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, lower, upper) per item from its count and sum of rewards; an unsampled item is (0.5, 0, 1).

    Items with the same count and sum share their bounds, which are computed once: on a rating scale
    most items do (every unrated item, every item rated once "unfunny"), so the cost follows the
    distinct (count, sum) pairs, not the items.
    """
    n = np.asarray(n, dtype=float)
    total = np.asarray(total, dtype=float)
    if n.size > 64:
        # One number per (count, sum): 0 ≤ sum ≤ count, so count · (largest sum + 1) + sum tells them apart.
        key = n * (float(total.max(initial=0.0)) + 1.0) + total
        _keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        if len(first) <= FEW:
            found = np.array([_one(float(n[i]), float(total[i]), delta, arms) for i in first]).reshape(-1, 3)
            return found[inverse, 0], found[inverse, 1], found[inverse, 2]
        if len(first) < n.size:
            mean, lower, upper = kl_bounds(n[first], total[first], delta=delta, arms=arms)
            return mean[inverse], lower[inverse], upper[inverse]
    seen = n > 0
    mean = np.where(seen, total / np.where(seen, n, 1.0), 0.5)
    mean = np.clip(mean, 0.0, 1.0)
    limit = np.where(seen, kl_level(n, delta=delta, arms=arms) / np.where(seen, n, 1.0), np.inf)
    low, high = mean.copy(), np.ones_like(mean)  # the upper bound lies in [mean, 1]
    for _ in range(_STEPS):
        mid = (low + high) / 2
        inside = kl_bernoulli(mean, mid) <= limit
        low, high = np.where(inside, mid, low), np.where(inside, high, mid)
    upper = np.where(seen, low, 1.0)
    low, high = np.zeros_like(mean), mean.copy()  # the lower bound lies in [0, mean]
    for _ in range(_STEPS):
        mid = (low + high) / 2
        inside = kl_bernoulli(mean, mid) <= limit
        low, high = np.where(inside, low, mid), np.where(inside, mid, high)
    lower = np.where(seen, high, 0.0)
    return mean, lower, upper


#: Up to this many distinct (count, sum) pairs, each pair's bounds are looked up (``_one``) rather than
#: recomputed on arrays: a request on a big study then costs a few lookups.
FEW = 512


@lru_cache(maxsize=65_536)
def _one(n: float, total: float, delta: float, arms: int) -> tuple[float, float, float]:
    """``kl_bounds`` of one item (the same computation), remembered across requests."""
    mean, lower, upper = kl_bounds(np.array([n]), np.array([total]), delta=delta, arms=arms)
    return float(mean[0]), float(lower[0]), float(upper[0])


#: The prior shrinking the sample variance of ``shrunk_sd``: the largest variance a [0, 1] reward can
#: have, worth two answers at first, so one or two equal answers are not taken for certainty.
PRIOR_ANSWERS = 2.0
PRIOR_VARIANCE = 0.25
#: Each answer equal to every answer before it multiplies the prior's weight by this: agreement that
#: keeps holding is believed, so an item raters agree on settles after a few answers. The first
#: disagreement gives the prior its whole weight back (the spread is then in the answers themselves).
AGREEMENT_DECAY = 0.5


def shrunk_sd(n: np.ndarray, total: np.ndarray, total_sq: np.ndarray) -> np.ndarray:
    """Each item's standard deviation of rewards, its sample variance shrunk toward ``PRIOR_VARIANCE``
    with a weight that halves per agreeing answer (0.5 for an item with no answers)."""
    n = np.asarray(n, dtype=float)
    total = np.asarray(total, dtype=float)
    total_sq = np.asarray(total_sq, dtype=float)
    safe = np.where(n > 0, n, 1.0)
    squares = np.maximum(total_sq - total * total / safe, 0.0)  # Σ (x − mean)²
    # No spread, allowing for rounding (a four-point scale's thirds): every answer so far the same.
    unanimous = squares <= 1e-9 * safe
    weight = PRIOR_ANSWERS * np.where(unanimous, AGREEMENT_DECAY ** np.maximum(n - 1.0, 0.0), 1.0)
    return np.sqrt((squares + weight * PRIOR_VARIANCE) / (np.maximum(n - 1.0, 0.0) + weight))


def normal_halfwidth(n: np.ndarray, total: np.ndarray, total_sq: np.ndarray, *, z: float) -> np.ndarray:
    """Half the width of the mean's normal-approximation interval, z · s / √n, per item; infinite below
    two answers."""
    n = np.asarray(n, dtype=float)
    half = z * shrunk_sd(n, total, total_sq) / np.sqrt(np.where(n > 0, n, 1.0))
    return np.where(n >= 2, half, np.inf)


def narrowing(n: np.ndarray, total: np.ndarray, total_sq: np.ndarray) -> np.ndarray:
    """What one more answer is worth to each item: how much it narrows the standard error of the mean,
    s · (1/√n − 1/√(n + 1)); infinite for an item with no answers."""
    n = np.asarray(n, dtype=float)
    safe = np.where(n > 0, n, 1.0)
    worth = shrunk_sd(n, total, total_sq) * (1.0 / np.sqrt(safe) - 1.0 / np.sqrt(safe + 1.0))
    return np.where(n > 0, worth, np.inf)


def z_for(delta: float) -> float:
    """The two-sided normal quantile for confidence 1 − δ."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - delta / 2.0)
