# SPDX-License-Identifier: GPL-3.0-or-later
"""Adaptive Swiss pairing against the full round robin, on HumorRank's nine published strengths.

    .venv/bin/python bench/bench_swiss.py [--prompts 20,100] [--seeds 5] [--budgets 10,15,20,25,30,50,75,100]

The data: K = 9 contestants with the Bradley–Terry ratings HumorRank published
(1307.5 … 537.4) and P prompts. Each contestant's joke on a prompt has a
quality of its strength plus prompt-to-prompt spread (normal, SD 100 Elo
points); the judge is noisy on top of that (it prefers the better joke with the
Bradley–Terry probability of the two qualities) and answers a tie with
probability 0.2 · 4p(1 − p) (often for near-equal jokes, rarely otherwise).
Each (prompt, pair) has one verdict per seed, drawn before any schedule runs,
so the round robin and every Swiss run read the same verdicts: a Swiss
tournament is a subset of the round robin's matches.

For each study size (20 and 100 prompts by default), budget (a share of the
round robin's C(9, 2) · P comparisons) and seed, it runs
``judging.tournament.swiss_round`` to the budget, refitting Bradley–Terry
after every round, and prints Kendall's τ-b of the Swiss ratings against the
true strengths ("truth") and, separately, against the full round robin's
ratings ("rr"); the same two for uniform random pairing with the same budget;
Swiss's τ-vs-truth minus the round robin's; and the share of Swiss matches
between neighbours of the true order in each quarter of the run (8 of the 36
pairs are neighbours: 22% is what uniform pairing gives). Last, whether Swiss
at 25% of the budget is within 0.03 of the round robin's τ-vs-truth.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from judging.tournament import Schedule, swiss_round  # noqa: E402
from ratings.stats.bradley_terry import bradley_terry_from_wins  # noqa: E402

HUMORRANK_RATINGS = [1307.5, 1156.9, 1115.1, 1092.8, 1037.5, 1015.0, 976.9, 761.0, 537.4]
PROMPT_SD = 100.0
TIE_RATE = 0.2
# The target: at this share of the round robin's budget, Swiss is this close to its τ against the truth.
TARGET_PERCENT = 25
TARGET_GAP = 0.03


def verdicts(rng: np.random.Generator, n_prompts: int) -> np.ndarray:
    """score[p, i, j]: i's result against j on prompt p (1, 0.5, 0), with score[p, j, i] = 1 − score[p, i, j]."""
    k = len(HUMORRANK_RATINGS)
    quality = np.asarray(HUMORRANK_RATINGS)[None, :] + rng.normal(0.0, PROMPT_SD, size=(n_prompts, k))
    score = np.full((n_prompts, k, k), np.nan)
    for i in range(k):
        for j in range(i + 1, k):
            p = 1.0 / (1.0 + 10.0 ** ((quality[:, j] - quality[:, i]) / 400.0))
            tie = rng.random(n_prompts) < TIE_RATE * 4 * p * (1 - p)
            win = rng.random(n_prompts) < p
            s = np.where(tie, 0.5, np.where(win, 1.0, 0.0))
            score[:, i, j] = s
            score[:, j, i] = 1.0 - s
    return score


def fit(wins: np.ndarray) -> list[float]:
    if wins.sum() == 0:
        return [1000.0] * wins.shape[0]
    return bradley_terry_from_wins(wins).ratings.tolist()


def round_robin(score: np.ndarray) -> list[float]:
    k = score.shape[1]
    wins = np.nansum(score, axis=0)
    wins[np.arange(k), np.arange(k)] = 0.0
    return fit(wins)


def swiss(score: np.ndarray, budget: int, seed: int) -> tuple[list[float], list[tuple[int, int]]]:
    n_prompts, k, _ = score.shape
    schedule = Schedule.full(k, n_prompts)
    rng = random.Random(seed)  # noqa: S311 - simulation
    wins = np.zeros((k, k))
    played: list[tuple[int, int]] = []
    while matches := swiss_round(schedule, fit(wins), rng=rng, budget=budget):
        schedule.record(matches)
        for prompt, i, j in matches:
            s = score[prompt, i, j]
            wins[i, j] += s
            wins[j, i] += 1.0 - s
            played.append((i, j))
    return fit(wins), played


def uniform(score: np.ndarray, budget: int, seed: int) -> list[float]:
    n_prompts, k, _ = score.shape
    everything = [(p, i, j) for p in range(n_prompts) for i in range(k) for j in range(i + 1, k)]
    wins = np.zeros((k, k))
    for p, i, j in random.Random(seed).sample(everything, budget):  # noqa: S311 - simulation
        wins[i, j] += score[p, i, j]
        wins[j, i] += score[p, j, i]
    return fit(wins)


def tau(x: list[float], y: list[float]) -> float:
    return float(stats.kendalltau(x, y).statistic)


def neighbour_shares(played: list[tuple[int, int]]) -> list[float]:
    """Share of matches between neighbours of the true order (indices are already in true order) per quarter."""
    quarters = np.array_split(np.arange(len(played)), 4)
    return [
        float(np.mean([abs(played[m][0] - played[m][1]) == 1 for m in q])) if q.size else math.nan for q in quarters
    ]


def size_table(n_prompts: int, n_seeds: int, budgets: list[int]) -> dict[int, dict[str, float]]:
    """Print the table for one study size and return, per budget, the mean τ of each schedule against each
    reference: the true strengths ("truth") and the full round robin's ratings ("rr")."""
    k = len(HUMORRANK_RATINGS)
    full = math.comb(k, 2) * n_prompts
    data = [verdicts(np.random.default_rng(seed), n_prompts) for seed in range(n_seeds)]
    references = [round_robin(score) for score in data]
    rr_truth = [tau(reference, HUMORRANK_RATINGS) for reference in references]
    print(
        f"\nP = {n_prompts} prompts: the round robin is {full} comparisons; its τ against the true strengths: "
        f"mean {np.mean(rr_truth):.3f} (min {np.min(rr_truth):.3f})."
    )
    header = (
        f"{'budget':>7} {'matches':>8} | {'Swiss τ truth':>13} {'min':>6} {'τ rr':>6} | "
        f"{'uniform τ truth':>15} {'τ rr':>6} | Swiss − RR (truth) | neighbour share per quarter (Swiss)"
    )
    print(header)
    print("-" * len(header))
    out: dict[int, dict[str, float]] = {}
    for percent in budgets:
        budget = round(full * percent / 100)
        rows: dict[str, list[float]] = {"swiss_truth": [], "swiss_rr": [], "uniform_truth": [], "uniform_rr": []}
        shares = []
        for seed, (score, reference) in enumerate(zip(data, references, strict=True)):
            ratings, played = swiss(score, budget, seed)
            random_ratings = uniform(score, budget, seed)
            rows["swiss_truth"].append(tau(ratings, HUMORRANK_RATINGS))
            rows["swiss_rr"].append(tau(ratings, reference))
            rows["uniform_truth"].append(tau(random_ratings, HUMORRANK_RATINGS))
            rows["uniform_rr"].append(tau(random_ratings, reference))
            shares.append(neighbour_shares(played))
        means = {name: float(np.mean(values)) for name, values in rows.items()}
        means["rr_truth"] = float(np.mean(rr_truth))
        out[percent] = means
        quarter = "  ".join(f"{100 * q:4.0f}%" for q in np.nanmean(np.array(shares), axis=0))
        print(
            f"{percent:>6}% {budget:>8} | {means['swiss_truth']:>13.3f} {np.min(rows['swiss_truth']):>6.3f} "
            f"{means['swiss_rr']:>6.3f} | {means['uniform_truth']:>15.3f} {means['uniform_rr']:>6.3f} | "
            f"{means['swiss_truth'] - means['rr_truth']:>+18.3f} | {quarter}"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="20,100", help="study sizes (prompts), comma-separated")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budgets", default="10,15,20,25,30,50,75,100", help="percent of the round robin")
    args = parser.parse_args()
    budgets = [int(x) for x in args.budgets.split(",")]
    print(
        f"K = {len(HUMORRANK_RATINGS)} contestants (HumorRank's published ratings). Prompt SD {PROMPT_SD:g} Elo, "
        f"noisy BT judge, ties up to {TIE_RATE:.0%}; {args.seeds} seeds. τ = Kendall τ-b of the ratings against "
        "the true strengths (truth) and against the full round robin's ratings (rr), means over the seeds."
    )
    verdict = []
    for n_prompts in (int(x) for x in args.prompts.split(",")):
        table = size_table(n_prompts, args.seeds, budgets)
        if TARGET_PERCENT in table:
            row = table[TARGET_PERCENT]
            gap = row["rr_truth"] - row["swiss_truth"]
            verdict.append(
                f"P = {n_prompts}: at {TARGET_PERCENT}% of the budget Swiss τ-vs-truth {row['swiss_truth']:.3f}, "
                f"round robin {row['rr_truth']:.3f}: {'within' if gap <= TARGET_GAP else 'NOT within'} "
                f"{TARGET_GAP} (gap {gap:+.3f})"
            )
    if verdict:
        print("\n" + "\n".join(verdict))


if __name__ == "__main__":
    main()
