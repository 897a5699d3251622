# SPDX-License-Identifier: GPL-3.0-or-later
"""``active_pairs``: the adaptive policy for pairwise studies (registered in ``annotation.allocation``).

It lives here because it ranks pairs by the Bradley–Terry fit (``ratings.stats.bradley_terry``) of the
contestants the pairwise home names (``ratings.pairwise``), which ``annotation`` may not import.
Each item of a pairwise study is one pair of candidates; its state is the comparisons it has had and
the first candidate's outcomes (1 won, 0.5 tie, 0 lost). From those sums the contestants' strengths
are fitted, with each strength's variance from the fit's Fisher information. A pair is worth a
comparison by how likely the fit has its two contestants in the wrong order times how much one more
comparison shrinks the variance of their difference; a pair whose order is settled (misordered with
probability under δ) retires. Positions are still shown in each rater's own random order: the
hand-out's candidate order is untouched.
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
#: has a large but finite variance.
PRIOR_INFORMATION = 0.05


def strengths(a: np.ndarray, b: np.ndarray, n: np.ndarray, total: np.ndarray, contestants: int) -> tuple:
    """Bradley–Terry strengths (natural-log scale, mean 0) and their variances, from per-pair sums."""
    wins = np.zeros((contestants, contestants))
    usable = (a >= 0) & (b >= 0) & (n > 0)
    np.add.at(wins, (a[usable], b[usable]), total[usable])
    np.add.at(wins, (b[usable], a[usable]), n[usable] - total[usable])
    if wins.sum() > 0:
        theta = (bradley_terry_from_wins(wins, tol=1e-3).ratings - ANCHOR) / ELO_SCALE
    else:
        theta = np.zeros(contestants)
    games = wins + wins.T
    p = expit(theta[:, None] - theta[None, :])
    information = (games * p * (1 - p)).sum(axis=1) + PRIOR_INFORMATION
    return theta, 1.0 / information


class ActivePairs(AllocationPolicy):
    name = "active_pairs"
    label = "Active pairs: compare where the Bradley–Terry ranking is least sure"
    description = (
        "Each comparison goes to the pair whose order the Bradley–Terry fit is most likely to have wrong, "
        "weighted by how much one more comparison would tell; pairs whose order is settled stop."
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
        theta, variance = strengths(a, b, arms.n, arms.total, contestants)
        context = {"theta": theta.tolist(), "variance": variance.tolist()}
        columns = {"a": a, "b": b}
        priority = self.priorities(arms.n, arms.total, arms.total_sq, columns, context, params)
        names = arms.columns.get("names")
        ranking = np.argsort(-theta, kind="stable")
        half = 1.96 * np.sqrt(variance) * ELO_SCALE
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

    def priorities(self, n, total, total_sq, columns, context, params):  # noqa: ANN001, ANN201 - see base
        a, b = np.asarray(columns["a"], dtype=np.int64), np.asarray(columns["b"], dtype=np.int64)
        valid = (a >= 0) & (b >= 0)
        theta = np.append(np.asarray(context["theta"], dtype=float), 0.0)
        variance = np.append(np.asarray(context["variance"], dtype=float), 1.0)
        d = theta[a] - theta[b]
        v = variance[a] + variance[b]
        p = expit(d)
        gain = v - 1.0 / (1.0 / v + p * (1 - p))
        misordered = ndtr(-np.abs(d) / np.sqrt(v))
        return np.where(valid & (misordered >= params.delta), misordered * gain, -np.inf)


ACTIVE_PAIRS = register_policy(ActivePairs())
