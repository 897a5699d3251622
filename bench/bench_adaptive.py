# SPDX-License-Identifier: GPL-3.0-or-later
"""Adaptive allocation against uniform allocation, in simulation with a fixed seed (issue 26's targets).

    .venv/bin/python bench/bench_adaptive.py [--seed 26] [--only top_k,precision,active_pairs]
                                             [--answer-path 5000]

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
- ``precision``: 1,000 items, some easy (95% of raters give the same point), the rest hard (raters
  split between 0 and 2): half and half, and 80% easy (as in a caption contest, where most entries
  are plainly unfunny). Uniform gives each item 10 answers; ``precision`` runs until every item's
  interval is narrower than the target width (quota cap 40). Error: mean absolute error of the item
  means against the truth (0–2 scale), averaged over 3 replications.
- ``active_pairs``: 20 contestants with Bradley–Terry strengths spread evenly over 0…3 (natural-log
  scale: neighbours win 54% of the time), each pair one item. A round robin repeats every pair r
  times; r is the fewest repeats whose fit reaches Kendall τ ≥ 0.95 on average over 5 replications.
  ``active_pairs`` and uniformly random pairs then run to 30% of that round robin's comparisons.
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
#: active_pairs: the strongest contestant's strength (the weakest is 0), natural-log scale.
SPREAD = 3.0


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


def precision(seed: int, replications: int = 3) -> list[tuple]:
    from annotation.allocation import Params, get_policy

    size, uniform_m, cap = 1000, 10, 40
    rows = []
    for easy_share, width in ((0.5, 1.2), (0.5, 1.0), (0.8, 1.2), (0.8, 1.0)):
        errors_u, errors_p, spent_p = [], [], []
        rng = np.random.default_rng(seed)
        for _ in range(replications):
            easy = np.arange(size) < int(size * easy_share)
            mode = rng.integers(0, 3, size)  # the point easy items' raters agree on
            # P(0), P(1), P(2) per item: easy ones 95% on their mode; hard ones split between 0 and 2.
            probs = np.where(easy[:, None], 0.025, 0.0) + np.zeros((size, 3))
            probs[easy, mode[easy]] = 0.95
            probs[~easy] = [0.5, 0.0, 0.5]
            truth = probs @ np.array([0.0, 0.5, 1.0])

            def answer(items: np.ndarray, r: np.random.Generator, probs=probs) -> np.ndarray:
                cum = probs[items].cumsum(axis=1)
                return (r.random(len(items))[:, None] > cum).sum(axis=1) / 2.0

            uniform = np.zeros(size)
            for _ in range(uniform_m):
                uniform += answer(np.arange(size), rng)
            errors_u.append(np.abs(uniform / uniform_m - truth).mean() * 2)
            crowd = Crowd(size, answer, rng, cap=cap)
            policy = get_policy("precision")
            params = Params(delta=0.05, target=width / 2 / 2, passive_share=PASSIVE_SHARE)
            round_no = 0
            while crowd.spent < size * cap:
                plan = crowd.round(policy, params, BATCH, round_no)
                round_no += 1
                if plan is None or not (plan.priority != -np.inf).any():
                    break
            means = np.where(crowd.arms.n > 0, crowd.arms.total / np.maximum(crowd.arms.n, 1), 0.5)
            errors_p.append(np.abs(means - truth).mean() * 2)
            spent_p.append(crowd.spent)
        mae_u, mae_p = float(np.mean(errors_u)), float(np.mean(errors_p))
        ratio = float(np.mean(spent_p)) / (size * uniform_m)
        rows.append(
            (
                "precision",
                f"1,000 items, {easy_share:.0%} easy, target width {width}",
                "same MAE as uniform with ≤ 60% of judgments",
                f"uniform {size * uniform_m:,}, MAE {mae_u:.3f}",
                f"precision {np.mean(spent_p):,.0f}, MAE {mae_p:.3f}",
                f"{ratio:.1%}",
                "met" if ratio <= 0.60 and mae_p <= mae_u * 1.02 else "MISSED",
                f"{replications} replications",
            )
        )
    return rows


# -- active_pairs -------------------------------------------------------------------------------------


def active_pairs(seed: int, replications: int = 5) -> list[tuple]:
    from scipy.stats import kendalltau

    from annotation.allocation import Params, get_policy
    from ratings.allocation import strengths

    rng = np.random.default_rng(seed)
    contestants = 20
    theta = np.linspace(0.0, SPREAD, contestants)
    first, second = np.triu_indices(contestants, 1)
    pairs = len(first)

    def answer(items: np.ndarray, r: np.random.Generator) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(theta[second[items]] - theta[first[items]]))
        return (r.random(len(items)) < p).astype(float)

    def tau(arms) -> float:
        fitted, _variance = strengths(first, second, arms.n, arms.total, contestants)
        return float(kendalltau(fitted, theta).statistic)

    # The round robin: every pair r times; its τ averaged over the replications, r = 1, 2, ...: the
    # fewest repeats whose mean τ reaches 0.95.
    robins = [Crowd(pairs, answer, rng) for _ in range(replications)]
    repeats = robin_tau = None
    for r in range(1, 201):
        for robin in robins:
            robin.add(np.arange(pairs))
        if r % 2 and r > 1:
            continue
        if (got := float(np.mean([tau(robin.arms) for robin in robins]))) >= 0.95:
            repeats, robin_tau = r, got
            break
    if repeats is None:
        return [("active_pairs", "20 contestants", "τ ≥ 0.95", "round robin never reached it", "–", "–", "–", "")]
    budget = int(0.3 * repeats * pairs)
    policy, params = get_policy("active_pairs"), Params(delta=0.05, passive_share=PASSIVE_SHARE)
    taus_active, taus_random = [], []
    started = time.perf_counter()
    for _ in range(replications):
        active = Crowd(pairs, answer, rng)
        active.arms.columns.update(a=first.astype(np.int64), b=second.astype(np.int64))
        round_no = 0
        while active.spent < budget:
            if active.round(policy, params, min(20, budget - active.spent), round_no) is None:
                break
            round_no += 1
        taus_active.append(tau(active.arms))
        random_pairs = Crowd(pairs, answer, rng)
        random_pairs.add(rng.integers(0, pairs, budget))
        taus_random.append(tau(random_pairs.arms))
    t_active, t_random = float(np.mean(taus_active)), float(np.mean(taus_random))
    return [
        (
            "active_pairs",
            f"20 contestants (strengths 0…{SPREAD:g}), 190 pairs",
            "τ ≥ 0.95 with ≤ 30% of a round robin",
            f"round robin ×{repeats} = {repeats * pairs:,} (τ {robin_tau:.3f}); random pairs at {budget:,}: τ {t_random:.3f}",
            f"active_pairs at {budget:,}: τ {t_active:.3f}",
            "30.0%",
            "met" if t_active >= 0.95 else "MISSED",
            f"mean of {replications} replications, {time.perf_counter() - started:.1f} s",
        )
    ]


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
    args = parser.parse_args()
    setup()
    runs = {"top_k": top_k, "precision": precision, "active_pairs": active_pairs}
    if args.answer_path:
        runs["answer_path"] = lambda _seed: answer_path(args.answer_path)
        args.only += ",answer_path"
    print("| policy | set | target | reference | adaptive | share of reference | target | note |")
    print("|---|---|---|---|---|---|---|---|")
    for name in filter(None, args.only.split(",")):
        for row in runs[name](args.seed):
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)


if __name__ == "__main__":
    main()
