"""The policies for any study (``uniform``) and for rating studies (``top_k``, ``precision``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..task_types import TaskType
from . import UNIFORM, AllocationPolicy, Arms, Params, Plan, is_rating, register_policy
from .bounds import kl_bounds, narrowing, normal_halfwidth, z_for

#: How many of the best items the study page lists beyond k.
SHOWN_BEYOND_K = 5


class Uniform(AllocationPolicy):
    name = UNIFORM
    label = "Uniform: every item up to its quota"
    description = "Each rater walks the items in the study's order; every item gets its quota of judgments."
    adaptive = False

    def plan(self, arms: Arms, params: Params) -> Plan:
        return Plan(priority=np.zeros(len(arms)), context={}, columns={})

    def priorities(self, n, total, total_sq, columns, context, params) -> np.ndarray:
        return np.zeros(len(n))  # no ranking: the study's own walk decides


class TopK(AllocationPolicy):
    """KL-LUCB: find the k items with the highest mean rating, with confidence 1 − δ.

    The k items with the best means are the current top. What is unresolved is
    how far the weakest lower bound in the top falls below the strongest upper
    bound outside it: an item in the top needs answers while its lower bound is
    under the best outsider's upper bound, an outsider while its upper bound is
    over the weakest insider's lower bound. The item that needs it most first
    (the two LUCB would sample tie for first); items with no such need retire.
    """

    name = "top_k"
    label = "Top k: find the k funniest items (KL-LUCB)"
    description = (
        "Spends answers on the items whose place in or out of the top k is still in doubt; "
        "items whose confidence bounds settle it stop receiving raters."
    )

    def applies_to(self, task_type: TaskType, config: dict[str, Any]) -> bool:
        return is_rating(task_type, config)

    def plan(self, arms: Arms, params: Params) -> Plan:
        size = len(arms)
        mean, lower, upper = kl_bounds(arms.n, arms.total, delta=params.delta, arms=size)
        k = min(params.k, size)
        # Unsampled items join the top only when fewer than k were sampled.
        ranked = np.lexsort((arms.ids, -arms.n, -np.where(arms.n > 0, mean, -1.0)))
        top = np.zeros(size, dtype=bool)
        top[ranked[:k]] = True
        lcb_in = float(lower[top].min()) if k else 1.0
        ucb_out = float(upper[~top].max()) if size > k else 0.0
        context = {"arms": size, "lcb_in": lcb_in, "ucb_out": ucb_out}
        columns = {"top": top.astype(np.int8)}
        priority = self.priorities(arms.n, arms.total, arms.total_sq, columns, context, params)
        shown = ranked[: k + SHOWN_BEYOND_K]
        summary = {
            "k": k,
            "retired": int((priority == -np.inf).sum()),
            "in_contention": int((priority != -np.inf).sum()),
            "resolved": bool(size > k and lcb_in > ucb_out),
            "best": [
                {
                    "item": int(arms.ids[i]),
                    "n": int(arms.n[i]),
                    "mean": float(mean[i]),
                    "lower": float(lower[i]),
                    "upper": float(upper[i]),
                    "top": bool(top[i]),
                    "settled": bool(priority[i] == -np.inf),
                }
                for i in shown
            ],
        }
        return Plan(priority=priority, context=context, columns=columns, summary=summary)

    def priorities(self, n, total, total_sq, columns, context, params):  # noqa: ANN001, ANN201 - see base
        _mean, lower, upper = kl_bounds(n, total, delta=params.delta, arms=context["arms"])
        top = np.asarray(columns["top"], dtype=bool)
        need = np.where(top, context["ucb_out"] - lower, upper - context["lcb_in"])
        return np.where(need > 0, need, -np.inf)


class Precision(AllocationPolicy):
    """Each answer goes where it narrows a mean's interval most; an item retires once its interval is within
    the target and one more answer would be worth little.

    An item's worth is how much one more answer narrows the standard error of its mean,
    s · (1/√n − 1/√(n + 1)) (``bounds.narrowing``), with s its standard deviation shrunk toward a prior
    whose weight halves with each agreeing answer (``bounds.shrunk_sd``). Spending by that worth gives an
    item answers in proportion to s^(2/3), the allocation that minimises the mean absolute error of the
    means for a given budget. Retiring needs both the interval within the target and the worth below
    ``Params.worth``: an item whose first answers agree reaches the target at once, but keeps receiving
    raters until that agreement has held long enough to be believed, so a disputed item that agreed at
    first is not retired early.
    """

    name = "precision"
    #: 2: retires only once one more answer is worth under ``Params.worth`` (1: on the interval alone).
    rule = 2
    label = "Precision: stop once each item's mean is known to a target width"
    description = (
        "Each answer goes to the item whose mean's interval it narrows most; an item stops receiving raters "
        "once its interval is narrower than the target width and one more answer would narrow it little."
    )

    def applies_to(self, task_type: TaskType, config: dict[str, Any]) -> bool:
        return is_rating(task_type, config)

    def plan(self, arms: Arms, params: Params) -> Plan:
        context = {"z": z_for(params.delta), "target": params.target}
        priority = self.priorities(arms.n, arms.total, arms.total_sq, {}, context, params)
        half = normal_halfwidth(arms.n, arms.total, arms.total_sq, z=context["z"])
        live = np.flatnonzero(priority != -np.inf)
        widest = live[np.argsort(-half[live], kind="stable")[:SHOWN_BEYOND_K]]
        summary = {
            "retired": int((priority == -np.inf).sum()),
            "in_contention": int(len(live)),
            "resolved": not len(live),
            "widest": [{"item": int(arms.ids[i]), "n": int(arms.n[i]), "halfwidth": float(half[i])} for i in widest],
        }
        return Plan(priority=priority, context=context, columns={}, summary=summary)

    def priorities(self, n, total, total_sq, columns, context, params):  # noqa: ANN001, ANN201 - see base
        half = normal_halfwidth(n, total, total_sq, z=context["z"])
        worth = narrowing(n, total, total_sq)
        settled = (half <= context["target"]) & (worth < params.worth)
        return np.where(settled, -np.inf, worth)


register_policy(Uniform())
register_policy(TopK())
register_policy(Precision())
