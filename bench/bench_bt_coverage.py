# SPDX-License-Identifier: GPL-3.0-or-later
"""How often the 95% Bradley–Terry bootstrap interval covers the true strength, at 100 and 1,000 resamples.

    .venv/bin/python bench/bench_bt_coverage.py [--prompts 10,30] [--reps 200] [--resamples 100,1000]

The data: K = 9 contestants with HumorRank's published ratings (1307.5 … 537.4),
re-centred on 1000 as the fit is; one round robin of C(9, 2) · P matches (P
prompts), each won by i with the Bradley–Terry probability (no ties, so the
model is exactly right and the only question is the interval). For each
replication the same match list gets ``ratings.stats.bradley_terry_bootstrap``
with each number of resamples (percentile interval, as published). Coverage is
the share of (replication, contestant) intervals that contain the true rating;
its Monte Carlo standard error is printed beside it. The mean interval width
says what the extra resamples cost in precision (nothing: they only make the
endpoints less noisy).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from ratings.stats.bradley_terry import bradley_terry_bootstrap  # noqa: E402

HUMORRANK_RATINGS = np.array([1307.5, 1156.9, 1115.1, 1092.8, 1037.5, 1015.0, 976.9, 761.0, 537.4])


def matches(rng: np.random.Generator, n_prompts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = HUMORRANK_RATINGS.size
    i, j = np.triu_indices(k, 1)
    a = np.tile(i, n_prompts)
    b = np.tile(j, n_prompts)
    p = 1.0 / (1.0 + 10.0 ** ((HUMORRANK_RATINGS[b] - HUMORRANK_RATINGS[a]) / 400.0))
    return a, b, (rng.random(a.size) < p).astype(float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="10,30", help="prompts per round robin (36 matches each)")
    parser.add_argument("--reps", type=int, default=200, help="simulated data sets per row")
    parser.add_argument("--resamples", default="100,1000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    truth = HUMORRANK_RATINGS - HUMORRANK_RATINGS.mean() + 1000.0
    counts = [int(x) for x in args.resamples.split(",")]
    k = HUMORRANK_RATINGS.size
    print(
        f"K = {k} (HumorRank's published ratings), round robin of C(9, 2) × P matches, no ties; "
        f"{args.reps} data sets per row; nominal coverage 95%, percentile intervals."
    )
    header = f"{'prompts':>7} {'matches':>8} | " + " | ".join(
        f"{f'B = {b}: coverage':>18} {'± MC SE':>8} {'width':>7}" for b in counts
    )
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(args.seed)
    for n_prompts in (int(x) for x in args.prompts.split(",")):
        hits = dict.fromkeys(counts, 0)
        widths: dict[int, list[float]] = {b: [] for b in counts}
        for rep in range(args.reps):
            a, b_, score = matches(rng, n_prompts)
            for b in counts:
                fit = bradley_terry_bootstrap(a, b_, score, n_contestants=k, n_resamples=b, seed=rep)
                hits[b] += int(((fit.ci_low <= truth) & (truth <= fit.ci_high)).sum())
                widths[b].append(float(np.mean(fit.ci_high - fit.ci_low)))
        total = args.reps * k
        cells = []
        for b in counts:
            share = hits[b] / total
            se = math.sqrt(share * (1 - share) / total)
            cells.append(f"{100 * share:>17.1f}% {100 * se:>7.1f}% {np.mean(widths[b]):>7.1f}")
        print(f"{n_prompts:>7} {36 * n_prompts:>8} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
