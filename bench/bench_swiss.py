# SPDX-License-Identifier: GPL-3.0-or-later
"""Adaptive Swiss pairing against the full round robin, on HumorRank's nine published strengths.

    .venv/bin/python bench/bench_swiss.py [--prompts 100] [--seeds 5] [--budgets 10,15,20,25,30,50,75,100]

The data: K = 9 contestants with the Bradley–Terry ratings HumorRank published
(1307.5 … 537.4) and P prompts. Each contestant's joke on a prompt has a
quality of its strength plus prompt-to-prompt spread (normal, SD 100 Elo
points); the judge is noisy on top of that (it prefers the better joke with the
Bradley–Terry probability of the two qualities) and answers a tie with
probability 0.2 · 4p(1 − p) (often for near-equal jokes, rarely otherwise).
Each (prompt, pair) has one verdict per seed, drawn before any schedule runs,
so the round robin and every Swiss run read the same verdicts: a Swiss
tournament is a subset of the round robin's matches.

For each budget (a share of the round robin's C(9, 2) · P comparisons) and
seed, it runs ``judging.tournament.swiss_round`` to the budget, refitting
Bradley–Terry after every round, and prints Kendall's τ-b between the Swiss
ratings and the full round robin's ratings (mean, SD, min over seeds), the
same against uniform random pairing with the same budget, and the share of
Swiss matches between neighbours of the true order in each quarter of the run
(8 of the 36 pairs are neighbours: 22% is what uniform pairing gives).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budgets", default="10,15,20,25,30,50,75,100", help="percent of the round robin")
    args = parser.parse_args()
    k = len(HUMORRANK_RATINGS)
    full = math.comb(k, 2) * args.prompts
    print(
        f"K = {k} contestants (HumorRank's published ratings), P = {args.prompts} prompts: the round robin is "
        f"{full} comparisons. Prompt SD {PROMPT_SD:g} Elo, noisy BT judge, ties up to {TIE_RATE:.0%}; "
        f"{args.seeds} seeds. τ = Kendall τ-b against the full round robin's ranking."
    )
    data = [verdicts(np.random.default_rng(seed), args.prompts) for seed in range(args.seeds)]
    truth_rr = [tau(round_robin(score), HUMORRANK_RATINGS) for score in data]
    print(f"round robin vs the true strengths: τ mean {np.mean(truth_rr):.3f} (min {np.min(truth_rr):.3f})\n")
    header = (
        f"{'budget':>7} {'matches':>8} | {'Swiss τ mean':>12} {'SD':>6} {'min':>6} | {'uniform τ mean':>14} {'SD':>6} | "
        "neighbour share per quarter (Swiss)"
    )
    print(header)
    print("-" * len(header))
    for percent in (int(x) for x in args.budgets.split(",")):
        budget = round(full * percent / 100)
        swiss_taus, uniform_taus, shares = [], [], []
        for seed, score in enumerate(data):
            reference = round_robin(score)
            ratings, played = swiss(score, budget, seed)
            swiss_taus.append(tau(ratings, reference))
            uniform_taus.append(tau(uniform(score, budget, seed), reference))
            shares.append(neighbour_shares(played))
        quarter = "  ".join(f"{100 * q:4.0f}%" for q in np.nanmean(np.array(shares), axis=0))
        print(
            f"{percent:>6}% {budget:>8} | {np.mean(swiss_taus):>12.3f} {np.std(swiss_taus):>6.3f} "
            f"{np.min(swiss_taus):>6.3f} | {np.mean(uniform_taus):>14.3f} {np.std(uniform_taus):>6.3f} | {quarter}"
        )


if __name__ == "__main__":
    main()
