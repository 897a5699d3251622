# SPDX-License-Identifier: GPL-3.0-or-later
"""Bradley–Terry ratings on the Elo scale, fitted with Hunter's MM iteration.

Model: P(i beats j) = p_i / (p_i + p_j) = 1 / (1 + 10^((R_j − R_i) / 400)) with
R_i = 400 · log10(p_i).  Ties are half a win to each side.

Fit (Hunter 2004, MM / Zermelo): repeat
``p_i ← W_i / Σ_j n_ij / (p_i + p_j)`` (W_i = i's total wins, n_ij = games
between i and j), renormalise, until no rating moves by more than ``tol``
Elo points.  Ratings are then shifted so their mean is 1000.  MM converges
linearly and can crawl on near-degenerate data; a fit still moving after
1000 MM iterations is finished with Newton steps on the same likelihood
(same maximum, reached in a few steps).

When the MLE does not exist (a contestant undefeated or winless, or the
comparison graph not strongly connected) we do not return infinities: we add
``regularization`` virtual games between every pair of contestants, scored as
ties (half a win each way), which makes the MLE finite, and we return a
warning naming the contestants concerned.  With the default 0.01 virtual
games per pair, an undefeated contestant ends up far above the rest (roughly
``400·log10(real wins / 0.005 per opponent)`` points) but finite.  Data for
which the MLE exists are fitted without any regularisation.

Bootstrap: the match list is resampled with replacement.  Resampling N
matches is the same as drawing multinomial counts of the distinct
(a, b, score) match types, so each resample is one multinomial draw and one
small matrix product, and all resamples are iterated together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.csgraph import connected_components

from ._bootstrap import percentile_interval
from ._validation import DEFAULT_SEED, check_confidence, check_resamples
from .pairwise import Matches, _as_wins, _wins, as_matches, graph_warnings

ELO_SCALE = 400.0 / np.log(10.0)
ANCHOR = 1000.0


@dataclass
class BTResult:
    ratings: np.ndarray
    strengths: np.ndarray
    iterations: int
    converged: bool
    regularized: bool
    names: tuple[str, ...] | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class BTBootstrapResult:
    ratings: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    samples: np.ndarray
    confidence: float
    n_resamples: int
    n_regularized_resamples: int
    seed: int | None
    names: tuple[str, ...] | None = None
    warnings: list[str] = field(default_factory=list)


def _regularise(wins: np.ndarray, amount: float) -> np.ndarray:
    k = wins.shape[-1]
    return wins + (amount / 2.0) * (1.0 - np.eye(k))


def _log_likelihood(wins: np.ndarray, beta: np.ndarray) -> np.ndarray:
    diff = beta[:, :, None] - beta[:, None, :]
    return -(wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))


def _newton(wins: np.ndarray, beta: np.ndarray, *, tol: float, max_steps: int) -> tuple[np.ndarray, int, bool]:
    """Newton steps with step halving on the same log-likelihood (natural-log strengths)."""
    games = wins + np.swapaxes(wins, 1, 2)
    total = wins.sum(axis=2)
    ll = _log_likelihood(wins, beta)
    for step in range(1, max_steps + 1):
        prob = 1.0 / (1.0 + np.exp(beta[:, None, :] - beta[:, :, None]))  # P(i beats j)
        grad = total - (games * prob).sum(axis=2)
        weight = games * prob * np.swapaxes(prob, 1, 2)
        info = -weight
        idx = np.arange(beta.shape[1])
        info[:, idx, idx] = weight.sum(axis=2)
        # The information matrix is singular along (1, …, 1); fix the last strength.
        move = np.zeros_like(beta)
        move[:, :-1] = np.linalg.solve(info[:, :-1, :-1], grad[:, :-1, None])[..., 0]
        size = np.ones(beta.shape[0])
        for _ in range(40):
            cand = beta + size[:, None] * move
            cand -= cand.mean(axis=1, keepdims=True)
            ll_cand = _log_likelihood(wins, cand)
            worse = ll_cand < ll - 1e-12 * np.abs(ll)
            if not worse.any():
                break
            size = np.where(worse, size / 2.0, size)
        shift = ELO_SCALE * np.max(np.abs(cand - beta))
        beta, ll = cand, ll_cand
        if shift < tol:
            return beta, step, True
    return beta, max_steps, False


#: MM iterations before slow, near-degenerate fits are finished with Newton steps.
MM_ITERATIONS_BEFORE_NEWTON = 1000


def _mm(wins: np.ndarray, *, tol: float, max_iter: int) -> tuple[np.ndarray, int, bool]:
    """Fit a stack of win matrices (B × K × K); returns anchored ratings, iterations, converged.

    Hunter's MM iteration converges linearly; on near-degenerate data (e.g. a
    regularised undefeated contestant) it can need tens of thousands of
    iterations.  If it has not met ``tol`` after ``MM_ITERATIONS_BEFORE_NEWTON``
    iterations, Newton steps on the same likelihood finish the job from the MM
    point.  Both stop at the same maximum, so the result is the same MLE.
    """
    games = wins + np.swapaxes(wins, 1, 2)
    total = wins.sum(axis=2)
    log_p = np.zeros(total.shape)
    ratings = np.full(total.shape, ANCHOR)
    it = 0
    mm_budget = min(max_iter, MM_ITERATIONS_BEFORE_NEWTON)
    while it < mm_budget:
        it += 1
        p = np.exp(log_p)
        denom = (games / (p[:, :, None] + p[:, None, :])).sum(axis=2)
        log_p = np.log(total) - np.log(denom)
        log_p -= log_p.mean(axis=1, keepdims=True)
        new = ANCHOR + ELO_SCALE * log_p
        delta = float(np.max(np.abs(new - ratings)))
        ratings = new
        if delta < tol:
            return ratings, it, True
    if it >= max_iter:
        return ratings, it, False
    beta, steps, converged = _newton(wins, log_p, tol=tol, max_steps=min(100, max_iter - it))
    return ANCHOR + ELO_SCALE * beta, it + steps, converged


def _needs_help(wins: np.ndarray) -> bool:
    n_strong, _ = connected_components(wins > 0, directed=True, connection="strong")
    return n_strong > 1


def _check_fit_args(tol: float, max_iter: int, regularization: float) -> None:
    if tol <= 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be ≥ 1, got {max_iter}")
    if regularization <= 0:
        raise ValueError(f"regularization must be > 0, got {regularization}")


def bradley_terry_from_wins(
    wins,
    *,
    tol: float = 1e-6,
    max_iter: int = 100_000,
    regularization: float = 0.01,
    names=None,
) -> BTResult:
    """Fit Bradley–Terry to a K × K win matrix (see module docstring)."""
    w = _as_wins(wins)
    _check_fit_args(tol, max_iter, regularization)
    if w.sum() == 0:
        raise ValueError("no games were played")
    names = tuple(str(x) for x in names) if names is not None else None
    notes, needs = graph_warnings(w, names)
    if needs:
        w = _regularise(w, regularization)
        notes.append(
            f"regularised: added {regularization} virtual tied games between every pair so that all ratings are finite"
        )
    ratings, iterations, converged = _mm(w[None], tol=tol, max_iter=max_iter)
    if not converged:
        notes.append(f"MM did not reach tol={tol} within {max_iter} iterations")
    strengths = 10.0 ** ((ratings[0] - ANCHOR) / 400.0)
    return BTResult(
        ratings=ratings[0],
        strengths=strengths,
        iterations=iterations,
        converged=converged,
        regularized=needs,
        names=names,
        warnings=notes,
    )


def bradley_terry(
    a,
    b,
    score,
    *,
    n_contestants: int | None = None,
    names=None,
    tol: float = 1e-6,
    max_iter: int = 100_000,
    regularization: float = 0.01,
) -> BTResult:
    """Fit Bradley–Terry ratings (Elo scale, mean 1000) to a match list."""
    m = as_matches(a, b, score, n_contestants=n_contestants, names=names)
    return bradley_terry_from_wins(_wins(m), tol=tol, max_iter=max_iter, regularization=regularization, names=m.names)


def _type_table(m: Matches) -> tuple[np.ndarray, np.ndarray]:
    """Distinct match types, their counts, and each type's K×K win contribution."""
    k = m.n_contestants
    code = (m.a * k + m.b) * 3 + np.rint(m.score * 2).astype(np.int64)
    types, counts = np.unique(code, return_counts=True)
    pair, outcome = np.divmod(types, 3)
    ta, tb = np.divmod(pair, k)
    s = outcome / 2.0
    contrib = np.zeros((types.size, k * k))
    rows = np.arange(types.size)
    contrib[rows, ta * k + tb] += s
    contrib[rows, tb * k + ta] += 1.0 - s
    return counts, contrib


def bradley_terry_bootstrap(
    a,
    b,
    score,
    *,
    n_contestants: int | None = None,
    names=None,
    n_resamples: int = 100,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
    tol: float = 1e-6,
    max_iter: int = 100_000,
    regularization: float = 0.01,
) -> BTBootstrapResult:
    """BT ratings with percentile bootstrap intervals from resampling matches.

    Resamples whose MLE does not exist are regularised like the main fit and
    counted in ``n_regularized_resamples``.
    """
    m = as_matches(a, b, score, n_contestants=n_contestants, names=names)
    n_resamples = check_resamples(n_resamples, minimum=2)
    confidence = check_confidence(confidence)
    fit = bradley_terry_from_wins(_wins(m), tol=tol, max_iter=max_iter, regularization=regularization, names=m.names)
    k = m.n_contestants
    counts, contrib = _type_table(m)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(m.a.size, counts / counts.sum(), size=n_resamples)
    wins = (draws @ contrib).reshape(n_resamples, k, k)
    helped = np.array([_needs_help(w) for w in wins])
    wins[helped] = _regularise(wins[helped], regularization)
    samples, _, converged = _mm(wins, tol=tol, max_iter=max_iter)
    notes = list(fit.warnings)
    if helped.any():
        notes.append(f"{int(helped.sum())} of {n_resamples} resamples needed regularisation")
    if not converged:
        notes.append(f"some resamples did not reach tol={tol} within {max_iter} iterations")
    low = np.empty(k)
    high = np.empty(k)
    for i in range(k):
        low[i], high[i], _ = percentile_interval(samples[:, i], confidence)
    return BTBootstrapResult(
        ratings=fit.ratings,
        ci_low=low,
        ci_high=high,
        samples=samples,
        confidence=confidence,
        n_resamples=n_resamples,
        n_regularized_resamples=int(helped.sum()),
        seed=seed,
        names=m.names,
        warnings=notes,
    )
