"""Adaptive allocation: which items a study's next judgments go to (docs/adaptive.md).

The registry of allocation policies, like the task types' and the session
outcomes': each ``AllocationPolicy`` declares its name, label, the task types
it fits, how an answer becomes a reward in [0, 1], and — on arrays, so the
server and the simulations in ``bench/bench_adaptive.py`` run the same code —
how it ranks the items still in contention (``plan``) and how that ranking is
recomputed from what the log kept (``priorities``).

``uniform`` (today's hand-out, every item to its quota) and the rating
policies ``top_k`` and ``precision`` are registered here (``policies.py``);
``active_pairs`` needs the Bradley–Terry fit, which lives in ``ratings``, so
``ratings`` registers it when it loads (``ratings/allocation.py``).

The database side — the per-item state kept on each answer, the hook the
hand-out calls, the log and its replay, the study page's summary — is
``annotation/allocation/state.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..task_types import Level, TaskType

#: Today's hand-out: no policy state, no log.
UNIFORM = "uniform"


@dataclass(frozen=True)
class Params:
    """A study's allocation settings, rewards normalised to [0, 1] (``target`` is a half-width there).

    ``worth``: ``precision`` retires an item only once one more answer would narrow the standard error
    of its mean by less than this (``bounds.narrowing``); the study's ``allocation_min_worth``, logged
    with every decision so the replay uses the value the decision did.
    """

    k: int = 10
    delta: float = 0.05
    target: float = 0.125
    worth: float = 0.005
    passive_share: float = 0.1
    budget: int | None = None


@dataclass
class Arms:
    """The items a policy ranks: ids, answers counted, sum of rewards and of squared rewards.

    ``columns`` holds what a policy adds per item (a pairwise item's two contestants); ``room`` says
    which items a new judgment may still go to (unseen by the rater, under the quota).
    """

    ids: np.ndarray
    n: np.ndarray
    total: np.ndarray
    total_sq: np.ndarray
    room: np.ndarray | None = None
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def empty(cls, size: int) -> Arms:
        return cls(
            ids=np.arange(size, dtype=np.int64),
            n=np.zeros(size),
            total=np.zeros(size),
            total_sq=np.zeros(size),
        )

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Plan:
    """A policy's ranking of the items: priority per item (−inf: retired), and what it was computed from."""

    priority: np.ndarray
    context: dict[str, Any]
    #: Per item, the values ``priorities`` reads besides n, total and total_sq (logged for replay).
    columns: dict[str, np.ndarray]
    #: What the study page shows: the current best items with intervals, and similar (JSON-ready).
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def retired(self) -> np.ndarray:
        return self.priority == -np.inf


def tiebreak(ids: np.ndarray, *, seed: int, rater: int) -> np.ndarray:
    """A value in [0, 1) per item, fixed for (study seed, rater, item): equal priorities are taken in an
    order of the rater's own, so raters who arrive together do not all want the same item."""
    x = (np.asarray(ids, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(
        (seed * 0x632BE59BD9B4E019 + rater * 0x85EBCA77C2B2AE63) & 0xFFFFFFFFFFFFFFFF
    )
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def order(
    priority: np.ndarray,
    ids: np.ndarray,
    *,
    seed: int,
    rater: int,
    among: np.ndarray | None = None,
    limit: int | None = None,
) -> np.ndarray:
    """Indexes of the items in contention (finite or +inf priority), highest priority first, equal
    priorities in the rater's own order (``tiebreak``). ``among``: only the items marked True (e.g. those
    the rater may still get); ``limit``: only the first so many, the same as the full order's first, found
    by a linear selection instead of a sort of every item (a hand-out wants a few dozen of 20,000)."""
    eligible = ~(priority == -np.inf)
    if among is not None:
        eligible &= among
    live = np.flatnonzero(eligible)
    if limit is not None and len(live) > limit:
        live = _first(priority, ids, live, limit, seed=seed, rater=rater)
    if not len(live):
        return live
    jitter = tiebreak(ids[live], seed=seed, rater=rater)
    return live[np.lexsort((jitter, -priority[live]))]


def _first(priority: np.ndarray, ids: np.ndarray, live: np.ndarray, limit: int, *, seed: int, rater: int) -> np.ndarray:
    """The ``limit`` items of ``live`` that come first in ``order``, unsorted: those above the limit-th
    highest priority, and of those equal to it the ones whose tiebreak comes first."""
    if limit <= 0:
        return live[:0]
    values = priority[live]
    cut = np.partition(values, len(values) - limit)[len(values) - limit]
    above, tied = live[values > cut], live[values == cut]
    need = limit - len(above)
    if len(tied) > need:
        jitter = tiebreak(ids[tied], seed=seed, rater=rater)
        tied = tied[np.argpartition(jitter, need - 1)[:need]] if need > 0 else tied[:0]
    return np.concatenate([above, tied])


class AllocationPolicy(ABC):
    """One way of choosing items. Subclasses set the names and implement the ranking."""

    name: str = ""
    label: str = ""
    description: str = ""
    #: Whether the policy chooses items (False: today's walk, with no state or log).
    adaptive: bool = True
    #: The version of ``priorities``' rule, logged with each decision; raise it whenever the rule or what
    #: ``logged_context`` keeps changes, so the replay never judges a row by a rule that did not write it.
    #: Rows logged before versions were recorded count as version 1.
    rule: int = 1

    def applies_to(self, task_type: TaskType, config: dict[str, Any]) -> bool:
        return True

    def reward(
        self, task_type: TaskType, config: dict[str, Any], value: Any, candidate_keys: list[str]
    ) -> float | None:
        """An answer as a reward in [0, 1]: the task type's number, scaled to its scale's ends."""
        try:
            number = task_type.to_number(value, candidate_keys=candidate_keys, config=config)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError):
            return None
        low, high = scale_ends(task_type, config)
        if number is None or high <= low or not np.isfinite(number):
            return None
        return min(1.0, max(0.0, (float(number) - low) / (high - low)))

    def add_columns(self, study: Any, arms: Arms) -> None:
        """Add the columns the ranking needs beyond the counts (read from the database); nothing by default."""
        return

    def logged_context(self, context: dict[str, Any], columns: dict[str, np.ndarray]) -> dict[str, Any]:
        """What of the plan's context a log row keeps, given the logged items' ``columns``: enough for
        ``priorities`` to rank those items again. The whole context by default."""
        return context

    @abstractmethod
    def plan(self, arms: Arms, params: Params) -> Plan:
        """Rank the items for the next hand-out: each item's priority, the context the replay needs."""

    @abstractmethod
    def priorities(
        self,
        n: np.ndarray,
        total: np.ndarray,
        total_sq: np.ndarray,
        columns: dict[str, np.ndarray],
        context: dict[str, Any],
        params: Params,
    ) -> np.ndarray:
        """The priority of each item from its own values and the plan's context: ``plan``'s rule, which the
        replay runs again on the logged items."""


def scale_ends(task_type: TaskType, config: dict[str, Any]) -> tuple[float, float]:
    """The lowest and highest number the task type's answers code as (0, 0 without a numeric scale)."""
    points = [number for number, _label in task_type.scale(config, max_candidates=lambda: 2)]
    return (min(points), max(points)) if points else (0.0, 0.0)


def is_rating(task_type: TaskType, config: dict[str, Any]) -> bool:
    """A task type whose answer is one number per item on a scale with at least two points."""
    if task_type.candidates[1] != 0 or task_type.level == Level.PAIRWISE:
        return False
    low, high = scale_ends(task_type, config)
    return high > low


def is_pairwise(task_type: TaskType) -> bool:
    return task_type.level == Level.PAIRWISE


POLICIES: dict[str, AllocationPolicy] = {}


def register_policy(policy: AllocationPolicy) -> AllocationPolicy:
    if not policy.name or policy.name in POLICIES:
        raise ValueError(f"An allocation policy needs a new name, got {policy.name!r}.")
    POLICIES[policy.name] = policy
    return policy


def get_policy(name: str) -> AllocationPolicy:
    try:
        return POLICIES[name]
    except KeyError:
        raise KeyError(f"Unknown allocation policy {name!r}; known: {', '.join(POLICIES)}.") from None


def policy_choices() -> list[tuple[str, str]]:
    return [(policy.name, policy.label) for policy in POLICIES.values()]


def policies_for(task_type: TaskType, config: dict[str, Any]) -> list[str]:
    return [name for name, policy in POLICIES.items() if policy.applies_to(task_type, config)]


from . import policies  # noqa: E402,F401 - registers uniform, top_k and precision
