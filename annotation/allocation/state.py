"""Adaptive allocation in the database: the state kept on each answer, the hand-out's hook, the log and its replay.

- ``arm_add`` — each person's usable answer to a regular item adds its reward to the item's
  ``AllocationArm`` (one upsert, under the item's row lock the answer already holds), so a
  policy reads per-item sums, never the judgments; ``arms_recount`` rebuilds them from the
  judgments (when a study changes policy, or after an import).
- ``choose`` — what ``services.assignment`` asks before handing out a regular item: nothing for
  a uniform study (its walk, as always); for an adaptive one, whether this item is one of the
  passive share (the walk again), the policy's candidates in its order, or that the budget is
  spent. ``Choice.record`` logs the item handed out with what the decision was made from.
- ``replay`` — recomputes each logged decision from the log alone.
- ``allocation_summary`` — the policy at work, for the study page and the analysis report.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, Q, Sum

from ..models import (
    HUMAN_KINDS,
    AllocationArm,
    AllocationLog,
    Assignment,
    Enrollment,
    Item,
    Judgment,
    Study,
)
from ..plainsql import insert, table
from ..services.ordering import unit_draw
from ..task_types import get_task_type
from . import AllocationPolicy, Arms, Params, Plan, get_policy, order, scale_ends

#: Candidates handed to the hand-out per request: enough to get past items other requests hold.
CANDIDATES = 64


def study_policy(study: Study) -> AllocationPolicy | None:
    """The study's adaptive policy, or None when it allocates uniformly (or the policy does not fit its task type)."""
    try:
        policy = get_policy(study.allocation_policy)
    except KeyError:
        return None
    task_type = get_task_type(study.task_type)
    if not policy.adaptive or not policy.applies_to(task_type, task_type.config(study.config)):
        return None
    return policy


def policy_problem(*, task_type: str, config: dict[str, Any] | None, policy: str) -> str | None:
    """Why a policy cannot run on a study of this task type, or None when it can."""
    try:
        chosen = get_policy(policy)
    except KeyError as unknown:
        return str(unknown.args[0])
    kind = get_task_type(task_type)
    if chosen.applies_to(kind, kind.config(config)):
        return None
    return f"The {policy} policy does not apply to {kind.title} studies."


def study_params(study: Study) -> Params:
    """The study's allocation settings, the target width turned into a half-width on the [0, 1] scale."""
    task_type = get_task_type(study.task_type)
    low, high = scale_ends(task_type, task_type.config(study.config))
    span = high - low if high > low else 1.0
    return Params(
        k=study.allocation_k,
        delta=study.allocation_delta,
        target=study.allocation_target_width / span / 2.0,
        worth=study.allocation_min_worth,
        passive_share=study.allocation_passive_share,
        budget=study.allocation_budget,
    )


# -- the state kept on each answer -------------------------------------------------------------


def arm_add(*, study: Study, item: Item, value: Any, candidate_keys: list[str]) -> None:
    """Add a person's answer to the item's state, when the study allocates adaptively (else nothing).

    The caller holds the item's row lock (the answer's transaction), so adding is one statement.
    """
    if item.is_attention_check:
        return
    policy = study_policy(study)
    if policy is None:
        return
    task_type = get_task_type(study.task_type)
    reward = policy.reward(task_type, task_type.config(study.config), value, candidate_keys)
    if reward is None:
        return
    arms = table(AllocationArm)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {arms} (item_id, study_id, n, total, total_sq) VALUES (%s, %s, 1, %s, %s)"  # noqa: S608
            f" ON CONFLICT (item_id) DO UPDATE SET n = {arms}.n + 1, total = {arms}.total + EXCLUDED.total,"
            f" total_sq = {arms}.total_sq + EXCLUDED.total_sq",
            [item.pk, study.pk, reward, reward * reward],
        )


def _counted_answers(study: Study):  # noqa: ANN202 - a queryset of judgments
    return Judgment.objects.filter(
        study=study, status=Judgment.Status.OK, rater__kind__in=HUMAN_KINDS, item__is_attention_check=False
    )


def arms_recount(*, study: Study) -> int:
    """Rebuild the study's per-item state from its judgments; returns how many items have answers."""
    AllocationArm.objects.filter(study=study).delete()
    policy = study_policy(study)
    if policy is None:
        return 0
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys: dict[int, list[str]] = {}
    if task_type.candidates[1] != 0:
        for item_id, key in (
            Item.objects.filter(study=study, is_attention_check=False)
            .values_list("pk", "candidates__key")
            .order_by("pk", "candidates__position", "candidates__id")
        ):
            if key is not None:
                keys.setdefault(item_id, []).append(key)
    sums: dict[int, list[float]] = {}
    for item_id, value in _counted_answers(study).values_list("item_id", "value").iterator():
        reward = policy.reward(task_type, config, value, keys.get(item_id, []))
        if reward is not None:
            row = sums.setdefault(item_id, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += reward
            row[2] += reward * reward
    AllocationArm.objects.bulk_create(
        [AllocationArm(item_id=i, study=study, n=n, total=t, total_sq=s) for i, (n, t, s) in sums.items()],
        batch_size=2000,
    )
    return len(sums)


def arms_drift(*, study: Study) -> dict[int, tuple[int, int]]:
    """Items whose stored answer count differs from their judgments: {item: (stored, counted)}; empty when in step."""
    stored = dict(AllocationArm.objects.filter(study=study).values_list("item_id", "n"))
    counted = dict(_counted_answers(study).values("item_id").annotate(c=Count("pk")).values_list("item_id", "c"))
    return {
        item: (stored.get(item, 0), counted.get(item, 0))
        for item in set(stored) | set(counted)
        if stored.get(item, 0) != counted.get(item, 0)
    }


def study_arms(study: Study, policy: AllocationPolicy) -> tuple[Arms, np.ndarray]:
    """Every regular item's state (one read, no judgments) and its places taken."""
    items, arms = table(Item), table(AllocationArm)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT i.id, i.places_taken, COALESCE(a.n, 0), COALESCE(a.total, 0), COALESCE(a.total_sq, 0)"  # noqa: S608
            f" FROM {items} i LEFT JOIN {arms} a ON a.item_id = i.id"
            f" WHERE i.study_id = %s AND i.is_attention_check = %s ORDER BY i.id",
            [study.pk, False],
        )
        rows = cursor.fetchall()
    data = np.array(rows, dtype=float).reshape(-1, 5)
    found = Arms(ids=data[:, 0].astype(np.int64), n=data[:, 2], total=data[:, 3], total_sq=data[:, 4])
    policy.add_columns(study, found)
    return found, data[:, 1]


# -- the hand-out's hook --------------------------------------------------------------------------


@dataclass
class Choice:
    """What the hand-out does for one rater's next regular item under an adaptive policy."""

    study: Study
    policy: AllocationPolicy
    passive: bool = False
    #: The policy's candidates, best first (items the rater has not seen, under the quota).
    items: list[int] = field(default_factory=list)
    #: The budget is spent: nothing more is handed out.
    spent: bool = False
    #: The candidates come from a ranking made for an earlier request (``PLAN_SECONDS``), at ``made_at``.
    reused: bool = False
    made_at: float = 0.0
    _plan: Plan | None = None
    _arms: Arms | None = None
    _params: Params | None = None

    def record(self, assignment: Assignment, *, held: list[int], passive: bool) -> None:
        """Log the item handed out; ``held``: candidates passed over because another transaction held them;
        ``passive``: the study's walk found it (the passive share).

        The entry's ``tried`` is every candidate ranked before the item (full since the ranking, or held),
        which the replay passes over; ``held`` says which of them another transaction held."""
        state: dict[str, Any] = {}
        passive = passive or assignment.item_id not in self.items
        if not passive and self._plan is not None and self._arms is not None:
            upto = self.items[: self.items.index(assignment.item_id) + 1]
            state = decision_state(self.policy, self._plan, self._arms, self._params, upto)
            state["tried"] = sorted(upto[:-1])
            state["held"] = sorted(set(held) & set(upto[:-1]))
        insert(
            AllocationLog(
                study=self.study,
                assignment=assignment,
                rater_id=assignment.rater_id,
                item_id=assignment.item_id,
                policy=self.policy.name,
                passive=passive,
                state=state,
            )
        )


def decision_state(policy: AllocationPolicy, plan: Plan, arms: Arms, params: Params, upto: list[int]) -> dict[str, Any]:
    """What an adaptive decision was made from, as a log keeps it: the rule's version, what of the plan's
    context its ``priorities`` reads, the study's settings, and the counts and columns of the items ranked
    ``upto`` the one chosen (in that order). ``logged_order`` ranks them again from this alone.

    The one shape of a logged decision: the crowd's (``Choice.record``, one item per row) and a judge run's
    waves (``judging.services.adaptive_runs``, a wave's items per row)."""
    at = np.searchsorted(arms.ids, upto)
    columns = plan.columns
    logged = {name: columns[name][at] for name in columns}
    return {
        "rule": policy.rule,
        "context": policy.logged_context(plan.context, logged),
        "params": {"k": params.k, "delta": params.delta, "target": params.target, "worth": params.worth},
        "arms": [
            [
                int(arms.ids[i]),
                int(arms.n[i]),
                float(arms.total[i]),
                float(arms.total_sq[i]),
                {name: columns[name][i].item() for name in columns},
            ]
            for i in at
        ],
    }


#: How long a process reuses a study's ranking (seconds). Within it every request ranks from the same
#: snapshot — which its log row records, so the replay still holds — and the leases decide, as always,
#: who gets an item; a request then costs a lookup instead of reading every item. Once it is older, one
#: request at a time recomputes it while the others carry on with the one before (no herd of threads all
#: reading and ranking every item at once); a request waits only when there is none yet.
PLAN_SECONDS = 1.0


@dataclass
class _Ranking:
    made_at: float
    policy: str
    params: Params
    arms: Arms
    places: np.ndarray
    plan: Plan

    def fits(self, policy: AllocationPolicy, params: Params) -> bool:
        return self.policy == policy.name and self.params == params


_plans: dict[int, _Ranking] = {}
_plans_lock = threading.Lock()
_computing: dict[int, threading.Lock] = {}


def _ranking(
    study: Study, policy: AllocationPolicy, params: Params, *, newer_than: float | None = None
) -> tuple[_Ranking, bool]:
    """The study's items, their places taken and the policy's plan, and whether it was made for an
    earlier request: at most ``PLAN_SECONDS`` old, or a little older while another thread of the process
    is making the next one. ``newer_than``: made after that moment (``time.monotonic()``), because the
    one made then is out of date; threads that ask this at once wait for one of them to make it."""
    if PLAN_SECONDS <= 0:
        return _rank(study, policy, params), False
    with _plans_lock:
        cached = _plans.get(study.pk)
        computing = _computing.setdefault(study.pk, threading.Lock())
    usable = cached is not None and cached.fits(policy, params)
    if newer_than is None and usable and cached.made_at + PLAN_SECONDS > time.monotonic():
        return cached, True
    # Stale: make the next one unless another thread is at it, and use this one meanwhile.
    if not computing.acquire(blocking=not usable or newer_than is not None):
        return cached, True
    try:
        latest = _plans.get(study.pk)
        floor = newer_than if newer_than is not None else (cached.made_at if cached is not None else -np.inf)
        if latest is not None and latest.fits(policy, params) and latest.made_at > floor:
            return latest, True  # made while this thread waited
        ranking = _rank(study, policy, params)
        with _plans_lock:
            if len(_plans) > 64:
                old = time.monotonic() - 60 * PLAN_SECONDS
                for key in [key for key, entry in _plans.items() if entry.made_at <= old]:
                    del _plans[key]
            _plans[study.pk] = ranking
        return ranking, False
    finally:
        computing.release()


def _rank(study: Study, policy: AllocationPolicy, params: Params) -> _Ranking:
    made_at = time.monotonic()
    arms, places = study_arms(study, policy)
    return _Ranking(made_at, policy.name, params, arms, places, policy.plan(arms, params))


def _places_taken(study: Study) -> int:
    return Item.objects.filter(study=study, is_attention_check=False).aggregate(s=Sum("places_taken"))["s"] or 0


def choose(*, enrollment: Enrollment, sequence: int, after: Choice | None = None) -> Choice | None:
    """None for a study that allocates uniformly; else this rater's ``Choice`` for their ``sequence``-th item
    (``after``: a choice whose candidates all filled since its ranking was made; this one is ranked later)."""
    study, rater = enrollment.study, enrollment.rater
    policy = study_policy(study)
    if policy is None:
        return None
    params = study_params(study)
    choice = Choice(study=study, policy=policy, _params=params)
    if params.budget is not None and rater.is_human and _places_taken(study) >= params.budget:
        choice.spent = True
        return choice
    choice.passive = unit_draw(study.seed, "passive", rater.pk, sequence) < params.passive_share
    ranking, choice.reused = _ranking(study, policy, params, newer_than=after.made_at if after else None)
    arms, places, plan = ranking.arms, ranking.places, ranking.plan
    choice._arms, choice._plan, choice.made_at = arms, plan, ranking.made_at
    with connection.cursor() as cursor:  # every request: written out, the ORM cost more than the read
        cursor.execute(
            f"SELECT item_id FROM {table(Assignment)} WHERE rater_id = %s AND study_id = %s",  # noqa: S608
            [rater.pk, study.pk],
        )
        seen = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
    room = ~np.isin(arms.ids, seen)
    if rater.is_human:
        room &= places < study.quota_per_item
    ranked = order(plan.priority, arms.ids, seed=study.seed, rater=rater.pk, among=room, limit=CANDIDATES)
    choice.items = arms.ids[ranked].tolist()
    return choice


# -- replay -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replayed:
    """One logged decision recomputed: ``replayed`` is None when nothing was left to choose, or when the row
    is not replayable (``not_replayable`` says why) — never counted as a mismatch."""

    log_id: int
    logged: int
    replayed: int | None
    not_replayable: str = ""

    @property
    def same(self) -> bool:
        return not self.not_replayable and self.logged == self.replayed

    @property
    def differs(self) -> bool:
        return not self.not_replayable and self.logged != self.replayed


@dataclass(frozen=True)
class ReplayCounts:
    same: int
    differs: int
    not_replayable: int


def replay_counts(results: list[Replayed]) -> ReplayCounts:
    """How many decisions replayed the same, differently, and could not be replayed."""
    return ReplayCounts(
        same=sum(r.same for r in results),
        differs=sum(r.differs for r in results),
        not_replayable=sum(bool(r.not_replayable) for r in results),
    )


def _earlier_rule(policy_name: str) -> str:
    return f"not replayable: logged by an earlier version of the {policy_name} rule"


class NotReplayable(Exception):
    """A logged decision the policy's present rule cannot rank again; the message says why."""


def logged_order(policy_name: str, state: dict[str, Any], *, seed: int, rater: int) -> list[int]:
    """The logged items' ids in the order the policy ranks them from ``decision_state``'s record alone,
    equal priorities in the rater's own order (``order``); retired items are left out.

    Raises ``NotReplayable`` for an unknown policy, for a record from an earlier version of the rule (it
    would be a false mismatch), or for one missing what the rule reads."""
    try:
        policy = get_policy(policy_name)
    except KeyError:
        raise NotReplayable(f"not replayable: unknown policy {policy_name!r}") from None
    if (state or {}).get("rule", 1) != policy.rule:
        raise NotReplayable(_earlier_rule(policy.name))
    try:
        rows = state["arms"]
        ids = np.array([row[0] for row in rows], dtype=np.int64)
        n, total, total_sq = (np.array([row[i] for row in rows], dtype=float) for i in (1, 2, 3))
        names = rows[0][4].keys() if rows else []
        columns = {name: np.array([row[4][name] for row in rows]) for name in names}
        params = Params(**state["params"])
        priority = policy.priorities(n, total, total_sq, columns, state["context"], params)
    except (KeyError, IndexError, TypeError, ValueError):
        raise NotReplayable(_earlier_rule(policy.name)) from None
    return [int(ids[i]) for i in order(priority, ids, seed=seed, rater=rater)]


def _replay_entry(entry: AllocationLog, study: Study) -> Replayed:
    try:
        ranked = logged_order(entry.policy, entry.state, seed=study.seed, rater=entry.rater_id)
        tried = set(entry.state["tried"])
    except NotReplayable as refused:
        return Replayed(entry.pk, entry.item_id, None, str(refused))
    except (KeyError, TypeError):
        return Replayed(entry.pk, entry.item_id, None, _earlier_rule(entry.policy))
    return Replayed(entry.pk, entry.item_id, next((item for item in ranked if item not in tried), None))


def replay(*, study: Study) -> list[Replayed]:
    """Each adaptive decision of the study recomputed from its log entry alone: the policy's ranking of the
    logged items from their logged counts and the logged context, then the first not tried before.

    A row is compared only under the rule that wrote it (``AllocationPolicy.rule``, logged as ``rule``);
    a row from an earlier rule, or missing what the rule reads, is reported as not replayable."""
    entries = AllocationLog.objects.filter(study=study, passive=False).order_by("pk")
    return [_replay_entry(entry, study) for entry in entries]


# -- the policy at work -----------------------------------------------------------------------------


def allocation_summary(*, study: Study) -> dict[str, Any] | None:
    """The policy at work, for the study page and the analysis report; None for a uniform study."""
    policy = study_policy(study)
    if policy is None:
        return None
    params = study_params(study)
    arms, places = study_arms(study, policy)
    plan = policy.plan(arms, params)
    logged = AllocationLog.objects.filter(study=study).aggregate(
        adaptive=Count("pk", filter=Q(passive=False)), passive=Count("pk", filter=Q(passive=True))
    )
    task_type = get_task_type(study.task_type)
    low, high = scale_ends(task_type, task_type.config(study.config))
    span = high - low

    def on_scale(x: float) -> float:
        return low + x * span

    summary = dict(plan.summary)
    for row in summary.get("best", []):
        row.update(mean=on_scale(row["mean"]), lower=on_scale(row["lower"]), upper=on_scale(row["upper"]))
    for row in summary.get("widest", []):
        row.update(width=2 * row.pop("halfwidth") * span)
    rows = [*summary.get("best", []), *summary.get("widest", [])]
    names = dict(Item.objects.filter(pk__in=[r["item"] for r in rows]).values_list("pk", "external_id"))
    for row in rows:
        row["external_id"] = names.get(row["item"], "")
    answers = int(arms.n.sum())
    return {
        "policy": policy.name,
        "label": policy.label,
        "items": len(arms),
        "spent": int(places.sum()),
        "answers": answers,
        "budget": params.budget,
        "uniform_budget": len(arms) * study.quota_per_item,
        "adaptive": logged["adaptive"],
        "passive": logged["passive"],
        "passive_share": params.passive_share,
        **summary,
    }


def adaptive_assignment_ids(*, study: Study) -> set[int]:
    """The assignments an adaptive policy chose (not the passive share), for reports that mark them."""
    return set(AllocationLog.objects.filter(study=study, passive=False).values_list("assignment_id", flat=True))


def passive_means(*, study: Study) -> dict[int, tuple[int, float]]:
    """Per item, the passive share's answers alone: (count, mean reward in [0, 1]) — an unbiased sample."""
    policy = study_policy(study)
    if policy is None:
        return {}
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    found: dict[int, list[float]] = {}
    rows = _counted_answers(study).filter(assignment__allocation__passive=True).values_list("item_id", "value")
    for item_id, value in rows:
        reward = policy.reward(task_type, config, value, [])
        if reward is not None:
            found.setdefault(item_id, []).append(reward)
    return {item: (len(v), sum(v) / len(v)) for item, v in found.items()}
