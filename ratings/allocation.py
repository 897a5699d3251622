# SPDX-License-Identifier: GPL-3.0-or-later
"""``active_pairs``: the adaptive policy for pairwise studies (registered in ``annotation.allocation``).

It lives here because it ranks pairs by the Bradley–Terry fit (``ratings.stats.bradley_terry``) of the
contestants the pairwise home names (``ratings.pairwise``), which ``annotation`` may not import.
Each item of a pairwise study is one pair of candidates; its state is the comparisons it has had and
the first candidate's outcomes (1 won, 0.5 tie, 0 lost). From those sums the contestants' strengths
are fitted, with their full covariance: the inverse of the fit's Fisher information.

The ranking's risk is the summed probability that the fit has a near pair in the wrong order,
Σ Φ(−|Δ| / σΔ) over contestants up to ``RISK_REACH`` places apart in the fitted order, with
σΔ² = var_i + var_j − 2 cov_ij. A pair is worth a comparison by how much one more comparison of it would
lower that risk (a one-step look-ahead: the comparison adds p(1 − p) of information along the pair's
difference, a rank-one update of the covariance). Only pairs up to ``CANDIDATE_REACH`` places apart are
looked ahead for, which keeps a plan to a few array operations; the other pairs wait behind them at
priority 0, and a pair whose order is settled (misordered with probability under δ) retires. Positions
are still shown in each rater's own random order: the hand-out's candidate order is untouched.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from scipy.special import expit, ndtr

from annotation.allocation import AllocationPolicy, Arms, Params, Plan, is_pairwise, register_policy
from annotation.task_types import TaskType

from .pairwise import item_candidates, outcome_of
from .stats.bradley_terry import ANCHOR, ELO_SCALE, bradley_terry_from_wins

#: Per study, the contestants of its items as ``add_columns`` last read them, with what they were read
#: for (study, its inputs revision — bumped when a candidate is edited or added to an item — and its items).
_contestants: dict[int, tuple[Any, np.ndarray, np.ndarray, np.ndarray]] = {}

#: Comparisons' worth of information every contestant starts with, so a contestant never compared
#: has a large but finite variance (and the information matrix can be inverted).
PRIOR_INFORMATION = 0.05
#: Contestants up to this many places apart in the fitted order count toward the ranking's risk.
RISK_REACH = 2
#: Pairs up to this many places apart are the candidates the look-ahead prices.
CANDIDATE_REACH = 3


def strengths(a: np.ndarray, b: np.ndarray, n: np.ndarray, total: np.ndarray, contestants: int) -> tuple:
    """Bradley–Terry strengths (natural-log scale, mean 0) and their covariance, from per-pair sums."""
    wins = np.zeros((contestants, contestants))
    usable = (a >= 0) & (b >= 0) & (n > 0)
    np.add.at(wins, (a[usable], b[usable]), total[usable])
    np.add.at(wins, (b[usable], a[usable]), n[usable] - total[usable])
    if wins.sum() > 0:
        theta = (bradley_terry_from_wins(wins, tol=1e-3).ratings - ANCHOR) / ELO_SCALE
    else:
        theta = np.zeros(contestants)
    p = expit(theta[:, None] - theta[None, :])
    weight = (wins + wins.T) * p * (1 - p)
    information = np.diag(weight.sum(axis=1) + PRIOR_INFORMATION) - weight
    return theta, np.linalg.inv(information)


def misordering(theta: np.ndarray, covariance: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The probability that the fit has each pair (i, j) in the wrong order, Φ(−|Δ| / σΔ)."""
    spread = covariance[i, i] + covariance[j, j] - 2 * covariance[i, j]
    return ndtr(-np.abs(theta[i] - theta[j]) / np.sqrt(np.maximum(spread, 1e-12)))


def near_pairs(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The contestants up to ``RISK_REACH`` places apart in the fitted order, as two index arrays."""
    ranked = np.argsort(-theta, kind="stable")
    reach = range(1, min(RISK_REACH, len(ranked) - 1) + 1)
    k = np.concatenate([ranked[:-d] for d in reach] or [ranked[:0]])
    m = np.concatenate([ranked[d:] for d in reach] or [ranked[:0]])
    return k, m


def _covariance(context: dict[str, Any], contestants: int) -> np.ndarray:
    """The covariance a plan's context holds: whole, or (in a log row) the entries ``logged_context`` kept,
    each in its own place (the rest NaN, never read for the logged pairs)."""
    if "covariance" in context:
        return np.asarray(context["covariance"], dtype=float).reshape(contestants, contestants)
    covariance = np.full((contestants, contestants), np.nan)
    for c, column in context["columns"].items():
        covariance[:, int(c)] = column
    for x, y, xx, yy, xy in context["near"]:
        covariance[x, x], covariance[y, y], covariance[x, y] = xx, yy, xy
    return covariance


def lookahead(theta: np.ndarray, covariance: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """How much one more comparison of each pair (i, j) would lower the ranking's risk (module docstring).

    The comparison adds w = p(1 − p) of information along u = e_i − e_j, so the covariance becomes
    Σ − w Σu uᵀΣ / (1 + w uᵀΣu) and a near pair's σΔ² (along v) falls by w (vᵀΣu)² / (1 + w uᵀΣu);
    the estimate's differences are taken to stay where they are.
    """
    k, m = near_pairs(theta)
    gap = np.abs(theta[k] - theta[m])
    spread = np.maximum(covariance[k, k] + covariance[m, m] - 2 * covariance[k, m], 1e-12)
    p = expit(theta[i] - theta[j])
    w = p * (1 - p)
    along = covariance[:, i] - covariance[:, j]  # Σu, one column per pair
    own = along[i, np.arange(len(i))] - along[j, np.arange(len(i))]  # uᵀΣu
    cross = along[k, :] - along[m, :]  # vᵀΣu, near pairs × candidate pairs
    after = np.maximum(spread[:, None] - w * cross**2 / (1 + w * own), 1e-12)
    now = ndtr(-gap / np.sqrt(spread))
    return (now[:, None] - ndtr(-gap[:, None] / np.sqrt(after))).sum(axis=0)


class ActivePairs(AllocationPolicy):
    name = "active_pairs"
    #: 2: one-step look-ahead, the log keeping part of the covariance (1: rows before it).
    rule = 2
    label = "Active pairs: compare where the Bradley–Terry ranking is least sure"
    description = (
        "Each comparison goes to the pair that, compared once more, would most lower the chance that the "
        "Bradley–Terry ranking has neighbouring contestants in the wrong order; pairs whose order is settled stop."
    )

    def applies_to(self, task_type: TaskType, config: dict[str, Any]) -> bool:
        return is_pairwise(task_type)

    def reward(
        self, task_type: TaskType, config: dict[str, Any], value: Any, candidate_keys: list[str]
    ) -> float | None:
        return outcome_of(task_type, value, candidate_keys)

    def add_columns(self, study: Any, arms: Arms) -> None:
        # Which contestants an item pairs changes only with the study's items and candidates: the ranking,
        # recomputed every second on the answer path, reads them once per process, not every time.
        key = (study.pk, study.inputs_revision, hashlib.blake2b(arms.ids.tobytes(), digest_size=16).digest())
        known = _contestants.get(study.pk)
        if known is None or known[0] != key:
            known = (key, *self._contestants(study, arms.ids))
            if len(_contestants) > 64:
                _contestants.clear()
            _contestants[study.pk] = known
        _key, a, b, names = known
        arms.columns.update(a=a, b=b, names=names)

    @staticmethod
    def _contestants(study: Any, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per item, the indexes of its two contestants (−1, −1 unless it pairs two), and their names."""
        pairs = item_candidates(study=study, regular_only=True)
        names: dict[str, int] = {}
        a = np.full(len(ids), -1, dtype=np.int64)
        b = np.full(len(ids), -1, dtype=np.int64)
        for i, item_id in enumerate(ids.tolist()):
            pair = pairs.get(item_id, [])
            if len(pair) == 2 and pair[0][1] != pair[1][1]:
                a[i] = names.setdefault(pair[0][1], len(names))
                b[i] = names.setdefault(pair[1][1], len(names))
        return a, b, np.array(list(names), dtype=object)

    def plan(self, arms: Arms, params: Params) -> Plan:
        a, b = arms.columns["a"], arms.columns["b"]
        contestants = int(max(a.max(initial=-1), b.max(initial=-1)) + 1)
        theta, covariance = strengths(a, b, arms.n, arms.total, contestants)
        context = {"theta": theta.tolist(), "covariance": covariance.tolist()}
        columns = {"a": a, "b": b}
        priority = self.priorities(arms.n, arms.total, arms.total_sq, columns, context, params)
        names = arms.columns.get("names")
        ranking = np.argsort(-theta, kind="stable")
        half = 1.96 * np.sqrt(np.diag(covariance)) * ELO_SCALE
        summary = {
            "retired": int(((priority == -np.inf) & (a >= 0)).sum()),
            "in_contention": int((priority != -np.inf).sum()),
            "resolved": bool((a >= 0).any() and not (priority != -np.inf).any()),
            "ranking": [
                {
                    "contestant": str(names[i]) if names is not None and i < len(names) else str(i),
                    "rating": float(ANCHOR + ELO_SCALE * theta[i]),
                    "lower": float(ANCHOR + ELO_SCALE * theta[i] - half[i]),
                    "upper": float(ANCHOR + ELO_SCALE * theta[i] + half[i]),
                }
                for i in ranking
            ],
        }
        return Plan(priority=priority, context=context, columns=columns, summary=summary)

    def logged_context(self, context: dict[str, Any], columns: dict[str, np.ndarray]) -> dict[str, Any]:
        """The strengths, and of the covariance only what ranking the logged pairs reads: the columns of their
        contestants and the near pairs' variances. For three logged pairs that is 4 kB of JSON with 20
        contestants and 23 kB with 100, where the whole covariance would be 8 kB and 204 kB per answer."""
        theta = np.asarray(context["theta"], dtype=float)
        covariance = np.asarray(context["covariance"], dtype=float)
        k, m = near_pairs(theta)
        named = sorted({int(x) for x in (*columns["a"], *columns["b"]) if x >= 0})
        return {
            "theta": context["theta"],
            "columns": {str(c): covariance[:, c].tolist() for c in named},
            "near": [
                [int(x), int(y), float(covariance[x, x]), float(covariance[y, y]), float(covariance[x, y])]
                for x, y in zip(k, m, strict=True)
            ],
        }

    def priorities(self, n, total, total_sq, columns, context, params):  # noqa: ANN001, ANN201 - see base
        a, b = np.asarray(columns["a"], dtype=np.int64), np.asarray(columns["b"], dtype=np.int64)
        priority = np.full(len(a), -np.inf)
        valid = np.flatnonzero((a >= 0) & (b >= 0))
        if not len(valid):
            return priority
        theta = np.asarray(context["theta"], dtype=float)
        covariance = _covariance(context, len(theta))
        i, j = a[valid], b[valid]
        place = np.empty(len(theta), dtype=np.int64)
        place[np.argsort(-theta, kind="stable")] = np.arange(len(theta))
        near = np.abs(place[i] - place[j]) <= CANDIDATE_REACH
        worth = np.zeros(len(valid))
        if near.any():
            worth[near] = lookahead(theta, covariance, i[near], j[near])
        settled = misordering(theta, covariance, i, j) < params.delta
        priority[valid] = np.where(settled, -np.inf, worth)
        return priority


ACTIVE_PAIRS = register_policy(ActivePairs())
