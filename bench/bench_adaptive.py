# SPDX-License-Identifier: GPL-3.0-or-later
"""Adaptive allocation against uniform allocation, in simulation with a fixed seed (issue 26's targets).

    .venv/bin/python bench/bench_adaptive.py [--seed 26] [--only top_k,precision,active_pairs]
                                             [--spreads 3,6] [--uniform-answers 10,20,40]
                                             [--answer-path 5000] [--judge-waves 20000]

Every adaptive run calls the policies the server runs (``annotation.allocation``'s ``top_k`` and
``precision``, ``ratings.allocation``'s ``active_pairs``: their ``plan`` and the shared ``order``),
with a passive uniform share of 10% as a study has by default. The simulation stands in for the
crowd: each round, ``BATCH`` raters arrive at once; each takes the next item of the policy's order
that has room (or, for the passive tenth, a uniformly drawn item with room), answers it, and the
item's state gets the answer as the answer path adds it (count, sum, sum of squares). What it leaves
out: a real rater cannot get the same item twice, which at these sizes (thousands of raters) only
matters on the thin tail — the crowd-path tests check that guarantee.

- ``top_k``: 5,000 items whose true mean (on 0–2) follows a caption-contest shape (Beta(1.2, 6):
  most near "unfunny", a thin tail of funny ones); each answer is Binomial(2, μ) — a noisy rater on
  a three-point scale. Uniform gives every item m answers (m = 1, 2, …); its recall is the share of
  the true top 10 among the 10 best observed means. ``top_k`` (k = 10, δ = 0.05) reports its current
  top (the k best means). The table gives the judgments each needs to first reach 90% recall.
- ``precision``: 1,000 items on a three-point scale in four sets: caption-contest-like (true mean
  μ ~ Beta(1.2, 6), each answer Binomial(2, μ)), and easy/hard mixes (an easy item's raters give the
  same point 95% or 99% of the time, a hard item's split between 0 and 2): 50% easy at 95%, 80% easy
  at 95%, 80% easy at 99%. The reference is uniform, 10 answers per item, and its *expected* mean
  absolute error (computed exactly from each item's distribution). The oracle is the best fixed
  allocation knowing every item's distribution: greedy on the exact expected-error curves (their
  convex hulls), one answer each first. ``precision`` (quota cap 40, passive tenth included) runs until
  every item retires, once per threshold of ``WORTH_SWEEP`` (the target width left wide, so the
  threshold sets the stop), 3 replications each; its judgments at the reference's error are
  interpolated along that sweep. The last column is the default threshold's run. ``--uniform-answers
  10,20,40`` repeats the sets against uniform designs with more answers per item (the cap 4 times
  that, the sweep reaching lower thresholds).
- ``active_pairs``: 20 contestants, each pair one item, Bradley–Terry answers, on three fields: strengths
  spread evenly over 0…3 (natural-log scale: neighbours win 54% of the time), strengths drawn N(0, 1)
  (seed 26; some neighbours nearly tied, some far apart) and strengths spread evenly over 0…6
  (neighbours win 58%; ``--spreads`` names the evenly spaced fields). A round robin repeats every pair r
  times; r is the fewest repeats whose mean τ over 20 replications reaches 0.95. Four allocations are
  then checked at every 5% of that round robin's comparisons: ``active_pairs`` (rounds of 20 raters,
  passive tenth included), uniformly random pairs, "true-order neighbours" (an oracle comparing the 19
  truly adjacent pairs in turn) and "look-ahead on the true strengths" (an oracle running the
  policy's look-ahead at the true strengths and the covariance its design gives there). The table
  gives each one's mean Kendall τ at 30% and the first share at which its mean τ reaches 0.95.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

#: Raters arriving at once: the policy's ranking is computed once per round.
BATCH = 100
PASSIVE_SHARE = 0.1
#: active_pairs: the evenly spaced fields' strongest contestant's strength (the weakest is 0), natural-log
#: scale. Over 20 contestants 3 gives neighbours that win 54% of the time, 6 gives 58%.
SPREADS = (3.0, 6.0)


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


class Crowd:
    """The items' state as the server keeps it (``AllocationArm``), filled by simulated answers."""

    def __init__(self, size: int, answer, rng: np.random.Generator, cap: int | None = None):
        from annotation.allocation import Arms

        self.arms = Arms.empty(size)
        self.answer, self.rng, self.cap = answer, rng, cap
        self.spent = 0

    def add(self, items: np.ndarray) -> None:
        rewards = self.answer(items, self.rng)
        np.add.at(self.arms.n, items, 1)
        np.add.at(self.arms.total, items, rewards)
        np.add.at(self.arms.total_sq, items, rewards * rewards)
        self.spent += len(items)

    def room(self) -> np.ndarray:
        return np.ones(len(self.arms), dtype=bool) if self.cap is None else self.arms.n < self.cap

    def round(self, policy, params, batch: int, round_no: int):
        """One round: ``batch`` raters each take an item; returns the plan they followed (None when done)."""
        from annotation.allocation import order

        plan = policy.plan(self.arms, params)
        room = self.room()
        ranked = order(plan.priority, self.arms.ids, seed=26, rater=round_no)
        ranked = ranked[room[ranked]]
        passive = int(self.rng.binomial(batch, PASSIVE_SHARE))
        chosen = list(ranked[: batch - passive])
        open_items = np.flatnonzero(room)
        if passive and len(open_items):
            chosen += list(self.rng.choice(open_items, size=min(passive, len(open_items)), replace=False))
        if not chosen:
            return None
        self.add(np.asarray(chosen, dtype=np.int64))
        return plan


# -- top_k -------------------------------------------------------------------------------------------


def top_k(seed: int) -> list[tuple]:
    from annotation.allocation import Params, get_policy

    rng = np.random.default_rng(seed)
    size, k = 5000, 10
    mu = rng.beta(1.2, 6.0, size)
    truth = set(np.argsort(-mu)[:k].tolist())

    def answer(items: np.ndarray, r: np.random.Generator) -> np.ndarray:
        return r.binomial(2, mu[items]) / 2.0

    def recall(best) -> float:
        return len(truth & {int(i) for i in best}) / k

    # Uniform: m answers per item, m = 1, 2, ...: the first m whose top 10 holds 9 of the true 10.
    sums = np.zeros(size)
    uniform_needed = uniform_recall = None
    for m in range(1, 401):
        sums += answer(np.arange(size), rng)
        got = recall(np.argsort(-sums, kind="stable")[:k])
        if got >= 0.9:
            uniform_needed, uniform_recall = m * size, got
            break
    crowd = Crowd(size, answer, rng, cap=400)
    policy, params = get_policy("top_k"), Params(k=k, delta=0.05, passive_share=PASSIVE_SHARE)
    adaptive_needed = adaptive_recall = None
    limit = uniform_needed or 2_000_000
    started = time.perf_counter()
    round_no = 0
    while crowd.spent < limit:
        plan = crowd.round(policy, params, BATCH, round_no)
        round_no += 1
        if plan is None:
            break
        if round_no % 10 == 0:
            got = recall(np.flatnonzero(plan.columns["top"]))
            if got >= 0.9:
                adaptive_needed, adaptive_recall = crowd.spent, got
                break
    seconds = time.perf_counter() - started
    ratio = adaptive_needed / uniform_needed if adaptive_needed and uniform_needed else None
    return [
        (
            "top_k",
            "5,000 items, top 10, 0–2 scale",
            "recall ≥ 90% with ≤ 30% of uniform's judgments",
            f"uniform {uniform_needed:,} (recall {uniform_recall:.0%})" if uniform_needed else "uniform: not reached",
            f"top_k {adaptive_needed:,} (recall {adaptive_recall:.0%})" if adaptive_needed else "top_k: not reached",
            f"{ratio:.1%}" if ratio else "–",
            "met" if ratio is not None and ratio <= 0.30 else "MISSED",
            f"{seconds:.1f} s, {round_no} plans",
        )
    ]


# -- precision -----------------------------------------------------------------------------------------

#: precision: items per set, uniform's answers per item (the reference), the most any item may get.
PRECISION_ITEMS, UNIFORM_ANSWERS, QUOTA = 1000, 10, 40
# The quota cap is this many times uniform's answers per item (40 for 10).
CAP_PER_UNIFORM = QUOTA // UNIFORM_ANSWERS
#: precision: the thresholds swept (worth of one more answer, [0, 1] scale), from cheap to thorough.
WORTH_SWEEP = (0.03, 0.02, 0.014, 0.01, 0.007, 0.005, 0.0035, 0.0025, 0.0018, 0.0013)
# Lower thresholds, swept too where uniform gives more than 10 answers per item: a split item's answer
# is worth less than 0.0013 only after about 33 answers.
DEEPER_SWEEP = (0.0009, 0.0006, 0.0004, 0.00028, 0.0002)


def precision_sets(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each set's P(0), P(1), P(2) per item (a three-point scale)."""
    size = PRECISION_ITEMS
    mu = rng.beta(1.2, 6.0, size)  # caption-contest-like: each answer Binomial(2, μ)
    sets = {
        "caption contest: μ ~ Beta(1.2, 6), answers Binomial(2, μ)": np.stack(
            [(1 - mu) ** 2, 2 * mu * (1 - mu), mu**2], axis=1
        )
    }
    for easy_share, agree in ((0.5, 0.95), (0.8, 0.95), (0.8, 0.99)):
        easy = np.arange(size) < int(size * easy_share)
        mode = rng.integers(0, 3, size)  # the point easy items' raters agree on
        probs = np.full((size, 3), (1 - agree) / 2)
        probs[np.flatnonzero(easy), mode[easy]] = agree
        probs[~easy] = [0.5, 0.0, 0.5]  # hard: raters split between the ends
        sets[f"{easy_share:.0%} easy ({agree:.0%} agree), {1 - easy_share:.0%} split 0/2"] = probs
    return sets


def expected_errors(probs: np.ndarray, most: int) -> np.ndarray:
    """E|mean of n answers − true mean| per item (0–2 scale), exactly, for n = 0 … most (column n)."""
    truth = probs @ np.array([0.0, 1.0, 2.0])
    errors = np.full((len(probs), most + 1), np.inf)
    pmf = np.zeros((len(probs), 2 * most + 1))  # of the sum of n answers
    pmf[:, 0] = 1.0
    sums = np.arange(2 * most + 1)
    for n in range(1, most + 1):
        step = pmf * probs[:, :1]
        step[:, 1:] += pmf[:, :-1] * probs[:, 1:2]
        step[:, 2:] += pmf[:, :-2] * probs[:, 2:3]
        pmf = step
        errors[:, n] = (pmf * np.abs(sums[None, :] / n - truth[:, None])).sum(axis=1)
    return errors


def oracle_needs(errors: np.ndarray, goal: float) -> int:
    """The fewest judgments a fixed allocation knowing every item's distribution needs for an expected
    MAE of ``goal``: one answer each, then answers to the items where they lower the expected error most.

    An item's error curve is not convex (for an item split between 0 and 2 a third answer helps no more
    than a second), so the moves are along each curve's lower convex hull: from one hull point to the
    next, at the gain per answer of that step, best first (exact for the hull points).
    """
    import heapq

    size = errors.shape[0]
    hulls = [_hull(errors[i, 1:]) for i in range(size)]  # hull points as answers − 1
    place = [0] * size
    total = float(errors[:, 1].sum())
    heap = []

    def push(i: int) -> None:
        hull, at = hulls[i], place[i]
        if at + 1 < len(hull):
            n0, n1 = hull[at], hull[at + 1]
            gain = errors[i, n0 + 1] - errors[i, n1 + 1]
            heapq.heappush(heap, (-gain / (n1 - n0), i, n1 - n0, gain))

    for i in range(size):
        push(i)
    spent = size
    while total / size > goal and heap:
        _rate, i, cost, gain = heapq.heappop(heap)
        total -= gain
        spent += cost
        place[i] += 1
        push(i)
    return spent if total / size <= goal else -1


def _hull(curve: np.ndarray) -> list[int]:
    """Indexes of the lower convex hull of a decreasing-ish curve, first to last."""
    hull: list[int] = []
    for x in range(len(curve)):
        while len(hull) >= 2:
            x0, x1 = hull[-2], hull[-1]
            if (curve[x1] - curve[x0]) * (x - x0) >= (curve[x] - curve[x0]) * (x1 - x0):
                hull.pop()
            else:
                break
        hull.append(x)
    return hull


def precision_run(probs: np.ndarray, worth: float, rng: np.random.Generator, cap: int = QUOTA) -> tuple[int, float]:
    """``precision`` (with its passive tenth) until every item retires or is full: (judgments, MAE on 0–2)."""
    from annotation.allocation import Params, get_policy

    truth = probs @ np.array([0.0, 0.5, 1.0])

    def answer(items: np.ndarray, r: np.random.Generator) -> np.ndarray:
        cum = probs[items].cumsum(axis=1)
        return (r.random(len(items))[:, None] > cum).sum(axis=1) / 2.0

    crowd = Crowd(len(probs), answer, rng, cap=cap)
    # The target width is left wide (2 points of 0–2) so that the threshold alone sets how far it goes.
    policy, params = get_policy("precision"), Params(delta=0.05, target=0.5, worth=worth, passive_share=PASSIVE_SHARE)
    round_no = 0
    while crowd.spent < len(probs) * cap:
        plan = crowd.round(policy, params, BATCH, round_no)
        round_no += 1
        if plan is None or not (plan.priority != -np.inf).any():
            break
    means = np.where(crowd.arms.n > 0, crowd.arms.total / np.maximum(crowd.arms.n, 1), 0.5)
    return crowd.spent, float(np.abs(means - truth).mean() * 2)


def at_equal_error(points: list[tuple[float, float]], goal: float) -> float | None:
    """Judgments where a (judgments, MAE) curve, cheap to thorough, first reaches ``goal`` (interpolated)."""
    for (spent0, mae0), (spent1, mae1) in zip([(None, None), *points], points, strict=False):
        if mae1 <= goal:
            if spent0 is None or mae0 <= mae1:
                return spent1
            return spent0 + (spent1 - spent0) * (mae0 - goal) / (mae0 - mae1)
    return None


def precision(seed: int, replications: int = 3, each: int = UNIFORM_ANSWERS) -> list[tuple]:
    """The four sets against uniform with ``each`` answers per item (the quota cap ``CAP_PER_UNIFORM``
    times that). The sets and the default's streams are the same whatever ``each`` is."""
    rng = np.random.default_rng(seed)
    rows = []
    uniform, cap = PRECISION_ITEMS * each, CAP_PER_UNIFORM * each
    sweep = WORTH_SWEEP if each <= UNIFORM_ANSWERS else WORTH_SWEEP + DEEPER_SWEEP
    for number, (name, probs) in enumerate(precision_sets(rng).items()):
        errors = expected_errors(probs, cap)
        goal = float(errors[:, each].mean())
        oracle = oracle_needs(errors, goal)
        curve = []
        for step, worth in enumerate(sweep):
            # A stream of its own per run, so a run's answers do not depend on what ran before it.
            stream = [seed, number, step] if each == UNIFORM_ANSWERS else [seed, number, step, each]
            runs = [precision_run(probs, worth, np.random.default_rng([*stream, r]), cap) for r in range(replications)]
            curve.append((float(np.mean([r[0] for r in runs])), float(np.mean([r[1] for r in runs]))))
        needed = at_equal_error(curve, goal)
        default = curve[WORTH_SWEEP.index(0.005)]
        rows.append(
            (
                name if each == UNIFORM_ANSWERS else f"{name}; uniform {each} each, cap {cap}",
                f"{uniform:,} (MAE {goal:.3f})",
                f"{oracle:,} ({oracle / uniform:.0%})" if oracle > 0 else "not within the quota",
                f"{needed:,.0f} ({needed / uniform:.0%})" if needed else "not within the sweep",
                f"{default[0]:,.0f} ({default[0] / uniform:.0%}), MAE {default[1]:.3f}",
                "met" if needed and needed <= 0.6 * uniform else "MISSED",
            )
        )
    return rows


PRECISION_HEADER = (
    "set (1,000 items, 0–2 scale)",
    "uniform (expected MAE)",
    "oracle at that MAE",
    "precision at that MAE",
    "precision at worth 0.005 (default)",
    "≤ 60%",
)


# -- active_pairs -------------------------------------------------------------------------------------

#: active_pairs: budgets are checked at these shares of the round robin that reaches τ 0.95.
FRACTIONS = tuple(round(0.05 * i, 2) for i in range(1, 21))


def active_pairs(seed: int, replications: int = 20, spreads: tuple[float, ...] = SPREADS) -> list[tuple]:
    """Kendall τ against the true order of 20 contestants, on evenly spaced fields and on an uneven one."""
    rng = np.random.default_rng(seed)
    uneven = np.sort(rng.normal(0.0, 1.0, 20))
    # Each field's answers come from a stream named by its place here, so the first evenly spaced field
    # and the uneven one keep their places (and their figures) whatever other spreads are added after.
    fields = {f"20 evenly spaced (0…{spread:g})": np.linspace(0.0, spread, 20) for spread in spreads[:1]}
    fields["20 uneven (N(0, 1))"] = uneven
    fields.update({f"20 evenly spaced (0…{spread:g})": np.linspace(0.0, spread, 20) for spread in spreads[1:]})
    rows = []
    for number, (name, theta) in enumerate(fields.items()):
        rows += pairs_field(name, theta, [seed, number], replications)
    return rows


def pairs_field(name: str, theta: np.ndarray, seeds: list[int], replications: int) -> list[tuple]:
    """Each allocation's mean τ over the replications at each share of the round robin's budget; every
    (allocation, replication) draws its answers from a stream of its own."""
    from scipy.stats import kendalltau

    from annotation.allocation import Params, get_policy
    from ratings.allocation import PRIOR_INFORMATION, strengths

    contestants = len(theta)
    first, second = np.triu_indices(contestants, 1)
    pairs = len(first)
    ordered = np.argsort(theta)
    where = {(int(i), int(j)): p for p, (i, j) in enumerate(zip(first, second, strict=True))}
    neighbours = np.array(
        [where[tuple(sorted((int(x), int(y))))] for x, y in zip(ordered[:-1], ordered[1:], strict=True)]
    )

    def answer(items: np.ndarray, r: np.random.Generator) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(theta[second[items]] - theta[first[items]]))
        return (r.random(len(items)) < p).astype(float)

    def tau(arms) -> float:
        fitted, _covariance = strengths(first, second, arms.n, arms.total, contestants)
        return float(kendalltau(fitted, theta).statistic)

    # The round robin: every pair r times; its τ averaged over the replications, r = 1, 2, 3, ...: the
    # fewest repeats whose mean τ reaches 0.95 (every r is checked: on a wide field a skipped one would
    # make the reference, and so every share of it, larger than it is).
    robins = [Crowd(pairs, answer, np.random.default_rng([*seeds, 0, r])) for r in range(replications)]
    repeats = robin_tau = None
    for r in range(1, 201):
        for robin in robins:
            robin.add(np.arange(pairs))
        if (got := float(np.mean([tau(robin.arms) for robin in robins]))) >= 0.95:
            repeats, robin_tau = r, got
            break
    if repeats is None:
        return [(name, "round robin never reached τ 0.95 within 200 repeats", "", "", "", "")]
    full = repeats * pairs
    budgets = [int(f * full) for f in FRACTIONS]
    policy, params = get_policy("active_pairs"), Params(delta=0.05, passive_share=PASSIVE_SHARE)
    curves: dict[str, list[list[float]]] = {
        "active_pairs": [],
        "random pairs": [],
        "true-order neighbours": [],
        "look-ahead on the true strengths": [],
    }
    truth = theta - theta.mean()
    p_true = 1.0 / (1.0 + np.exp(truth[second] - truth[first]))

    def knowing(arms) -> np.ndarray:
        """The oracle design: the look-ahead's 20 best pairs, priced at the true strengths and the
        covariance those comparisons give there (the design's, whatever the answers were)."""
        weight = np.zeros((contestants, contestants))
        np.add.at(weight, (first, second), arms.n * p_true * (1 - p_true))
        weight += weight.T
        covariance = np.linalg.inv(np.diag(weight.sum(axis=1) + PRIOR_INFORMATION) - weight)
        context = {"theta": truth.tolist(), "covariance": covariance.tolist()}
        priority = policy.priorities(arms.n, arms.total, arms.total_sq, arms.columns, context, params)
        return np.argsort(-priority, kind="stable")

    started = time.perf_counter()
    for r in range(replications):
        active = Crowd(pairs, answer, np.random.default_rng([*seeds, 1, r]))
        active.arms.columns.update(a=first.astype(np.int64), b=second.astype(np.int64))
        random_pairs, oracle, lookahead = (
            Crowd(pairs, answer, np.random.default_rng([*seeds, m, r])) for m in (2, 3, 4)
        )
        lookahead.arms.columns.update(a=first.astype(np.int64), b=second.astype(np.int64))
        taus: dict[str, list[float]] = {key: [] for key in curves}
        round_no = 0
        for budget in budgets:
            while active.spent < budget:
                if active.round(policy, params, min(20, budget - active.spent), round_no) is None:
                    break
                round_no += 1
            random_pairs.add(random_pairs.rng.integers(0, pairs, budget - random_pairs.spent))
            # The oracle compares the true neighbours in turn, each as often as the others.
            oracle.add(neighbours[np.arange(oracle.spent, budget) % len(neighbours)])
            while lookahead.spent < budget:
                lookahead.add(knowing(lookahead.arms)[: min(20, budget - lookahead.spent)])
            taus["active_pairs"].append(tau(active.arms))
            taus["look-ahead on the true strengths"].append(tau(lookahead.arms))
            taus["random pairs"].append(tau(random_pairs.arms))
            taus["true-order neighbours"].append(tau(oracle.arms))
        for key in curves:
            curves[key].append(taus[key])
    seconds = time.perf_counter() - started
    at30 = FRACTIONS.index(0.3)
    rows = []
    for key, runs in curves.items():
        mean = np.mean(runs, axis=0)
        reached = next((f for f, t in zip(FRACTIONS, mean, strict=True) if t >= 0.95), None)
        rows.append(
            (
                name,
                f"round robin ×{repeats} = {full:,} (τ {robin_tau:.3f})",
                key,
                f"{mean[at30]:.3f} at {budgets[at30]:,}",
                f"{reached:.0%}" if reached else "not by 100%",
                "met" if key == "active_pairs" and mean[at30] >= 0.95 else ("MISSED" if key == "active_pairs" else "–"),
            )
        )
    rows[0] = (*rows[0][:-1], f"{rows[0][-1]}; {replications} replications, {seconds:.0f} s")
    return rows


PAIRS_HEADER = ("field", "reference", "allocation", "τ at 30% (mean)", "τ ≥ 0.95 first at", "target (active_pairs)")


# -- the answer path ---------------------------------------------------------------------------------


def answer_path(items: int, answers: int = 400, per_rater: int = 20) -> list[tuple]:
    """Milliseconds per answer-and-next-item (``answer_and_next``, as the item form calls it) on a
    uniform and a ``top_k`` study of ``items`` items, one rater at a time, in the same run: raters of
    the two studies take turns, so a busy machine slows both alike."""
    import random
    import secrets

    from django.contrib.auth import get_user_model

    from annotation.services.assignment import next_assignment
    from annotation.services.enrollment import enroll_crowdworker
    from annotation.services.judgments import answer_and_next
    from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state

    owner = get_user_model().objects.create_user(f"bench-adaptive-{secrets.token_hex(4)}")
    policies = ("uniform", "top_k")
    try:
        studies = {}
        for policy in policies:
            study = study_create(
                owner=owner,
                name=f"bench {policy}",
                task_type="ordinal",
                config={"points": [0, 1, 2], "labels": ["unfunny", "somewhat funny", "funny"]},
                quota_per_item=5,
                allocation_policy=policy,
            )
            items_create(study=study, items=[ItemSpec(external_id=f"i{i}", text=f"joke {i}") for i in range(items)])
            study_set_state(study=study, state="open")
            studies[policy] = study
        rng = random.Random(26)
        times: dict[str, list[float]] = {policy: [] for policy in policies}
        rater = 0
        while min(len(t) for t in times.values()) < answers:
            rater += 1
            for policy in policies:
                enrollment = enroll_crowdworker(study=studies[policy], participant_id=f"{policy}-{rater}")
                nxt = next_assignment(enrollment=enrollment, shown=True)
                for given in range(1, per_rater + 1):
                    if nxt is None or nxt.assignment is None:
                        break
                    started = time.perf_counter()
                    nxt = answer_and_next(
                        enrollment=enrollment,
                        assignment_id=nxt.assignment.pk,
                        data={"rating": str(rng.choice([0, 0, 0, 1, 2]))},
                        lease_next=given < per_rater,
                    )
                    times[policy].append(time.perf_counter() - started)
        for study in studies.values():
            study.delete()
    finally:
        owner.delete()
    ms = {policy: np.array(t) * 1000 for policy, t in times.items()}
    base = float(np.median(ms["uniform"]))
    return [
        (
            "answer path",
            f"{items:,} items, {len(ms[policy])} answers, one rater at a time",
            "(cost of the policy per answer)",
            f"uniform: median {base:.1f} ms",
            f"{policy}: median {np.median(ms[policy]):.1f} ms, p95 {np.percentile(ms[policy], 95):.1f} ms",
            f"{np.median(ms[policy]) / base:.0%}",
            "–",
            "answer_and_next on PostgreSQL, raters of both studies taking turns",
        )
        for policy in policies
    ]


def judge_waves(items: int, policy: str = "top_k", trials: int = 4, replayed: int = 5600) -> list[tuple]:
    """What logging a judge run's waves costs and how long their replay takes, on PostgreSQL: a run under
    ``policy`` (``top_k`` or ``precision``) of the random baseline over an ordinal study of ``items`` items, worked to the end in this process
    (``process_run``). The wave's decision (``run_next_wave``, its log included) is the reference for the
    log's part (``decision_state`` and the ``JudgeWave`` insert); then ``replay_run`` over the run's own
    waves, and over ``replayed`` waves (the run's rows copied until there are that many: a replay's cost per
    wave does not depend on which wave it is), against the mean wave decision."""
    import json
    import secrets

    from django.contrib.auth import get_user_model

    from annotation.services.studies import ItemSpec, items_create, study_create
    from judging.models import JudgeWave
    from judging.services import adaptive_runs, runs
    from judging.services.judges import judge_find_or_create

    spent = {"wave": [], "state": [], "insert": []}

    def timed(key, call):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[key].append(time.perf_counter() - started)

        return wrapper

    owner = get_user_model().objects.create_user(f"bench-waves-{secrets.token_hex(4)}")
    manager = JudgeWave.objects
    patched = [
        (runs, "run_next_wave", runs.run_next_wave),
        (adaptive_runs, "decision_state", adaptive_runs.decision_state),
        (manager, "create", manager.create),
    ]
    try:
        runs.run_next_wave = timed("wave", runs.run_next_wave)
        adaptive_runs.decision_state = timed("state", adaptive_runs.decision_state)
        manager.create = timed("insert", manager.create)
        study = study_create(
            owner=owner,
            name="bench judge waves",
            task_type="ordinal",
            config={"points": [0, 1, 2], "labels": ["unfunny", "somewhat funny", "funny"]},
        )
        items_create(study=study, items=[ItemSpec(external_id=f"i{i}", text=f"joke {i}") for i in range(items)])
        judge, _ = judge_find_or_create(owner=owner, baseline="random")
        run = runs.run_create(study=study, judge=judge, trials=trials, allocation_policy=policy, enqueue=False)
        started = time.perf_counter()
        runs.process_run(run_id=run.pk)
        whole = time.perf_counter() - started
    finally:
        for where, name, original in patched:
            setattr(where, name, original)
    waves = list(JudgeWave.objects.filter(run=run).order_by("number"))
    size = np.mean([len(json.dumps(w.state)) for w in waves]) if waves else 0.0
    started = time.perf_counter()
    own = adaptive_runs.replay_run(run)
    own_s = time.perf_counter() - started
    copies = [
        JudgeWave(
            run=run, number=len(waves) + 2 + i, policy=waves[i % len(waves)].policy, state=waves[i % len(waves)].state
        )
        for i in range(max(replayed - len(waves), 0) if waves else 0)
    ]
    JudgeWave.objects.bulk_create(copies, batch_size=1000)
    started = time.perf_counter()
    many = adaptive_runs.replay_run(run)
    many_s = time.perf_counter() - started
    same = sum(r.same for r in many)
    study.delete()
    judge.rater.delete()  # the judge with it (its owner is protected while it exists)
    owner.delete()
    wave_ms = float(np.mean(spent["wave"]) * 1000)
    # Per wave logged (the last call of run_next_wave ranks too, finds nothing and logs nothing).
    log_ms = float((np.sum(spent["state"]) + np.sum(spent["insert"])) / max(len(spent["insert"]), 1) * 1000)
    return [
        (
            "judge waves",
            f"{policy}, random baseline, {items:,} items, {trials} trials, {len(waves)} waves logged",
            "(cost of the log)",
            f"a wave's decision (each run_next_wave): mean {wave_ms:.1f} ms; the run {whole:.0f} s",
            f"log per wave {log_ms:.2f} ms, {size / 1000:.1f} kB of JSON",
            f"{log_ms / wave_ms:.1%}",
            "–",
            "decision_state + JudgeWave insert, per wave",
        ),
        (
            "judge replay",
            f"the run's {len(waves)} waves; then {len(many):,} items over {len(waves) + len(copies):,} waves",
            "(cost of replay_run)",
            f"mean wave decision {wave_ms:.1f} ms",
            f"{own_s * 1000:.0f} ms; {many_s:.1f} s ({many_s / (len(waves) + len(copies)) * 1000:.2f} ms a wave)",
            f"{many_s * 1000 / wave_ms:.0f} wave decisions",
            "–",
            f"the run's own: {sum(r.same for r in own):,} of {len(own):,} the same; all: {same:,} of {len(many):,}",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--only", default="top_k,precision,active_pairs")
    parser.add_argument(
        "--answer-path",
        type=int,
        default=0,
        metavar="ITEMS",
        help="also time the answer path on uniform and top_k studies of this many items (DATABASE_URL, migrated)",
    )
    parser.add_argument(
        "--spreads",
        default=",".join(f"{spread:g}" for spread in SPREADS),
        help="active_pairs: the evenly spaced fields, each by its strongest contestant's strength (the weakest is 0)",
    )
    parser.add_argument(
        "--uniform-answers",
        default=str(UNIFORM_ANSWERS),
        help="precision: uniform's answers per item, one table row per set for each (comma-separated)",
    )
    parser.add_argument(
        "--judge-waves",
        type=int,
        default=0,
        metavar="ITEMS",
        help="also time a top_k and a precision judge run's wave log and its replay over this many items (DATABASE_URL, migrated)",
    )
    args = parser.parse_args()
    setup()
    spreads = tuple(float(spread) for spread in args.spreads.split(",") if spread)
    runs = {
        "top_k": top_k,
        "precision": lambda seed: [
            row for each in args.uniform_answers.split(",") if each for row in precision(seed, each=int(each))
        ],
        "active_pairs": lambda seed: active_pairs(seed, spreads=spreads),
    }
    headers = {"precision": PRECISION_HEADER, "active_pairs": PAIRS_HEADER}
    if args.answer_path:
        runs["answer_path"] = lambda _seed: answer_path(args.answer_path)
        args.only += ",answer_path"
    if args.judge_waves:
        runs["judge_waves"] = lambda _seed: [
            row for policy in ("top_k", "precision") for row in judge_waves(args.judge_waves, policy)
        ]
        args.only += ",judge_waves"
    for name in filter(None, args.only.split(",")):
        header = headers.get(name, SUMMARY_HEADER)
        print(f"\n{name}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in runs[name](args.seed):
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)


SUMMARY_HEADER = ("policy", "set", "target", "reference", "adaptive", "share of reference", "target", "note")


if __name__ == "__main__":
    main()
