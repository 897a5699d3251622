# SPDX-License-Identifier: GPL-3.0-or-later
"""Time Funnybone's statistics against reference implementations, in one run.

    .venv/bin/python bench/bench_stats.py [--sizes 10000,100000,1000000]

For every size N (number of judgments) it generates

* N ratings in long format (item, rater, value on 0–3): 7 raters, N/7 items,
  about 5% of cells missing; and
* N pairwise matches between K = 9 contestants drawn from known strengths
  (10% ties),

then times our full ratings analysis (matrix build, Krippendorff's alpha at
four levels, the six ICCs, Fleiss' kappa, exact/adjacent agreement, mean item
SD, the Spearman matrix) and our full pairwise analysis (Bradley–Terry with a
100-resample bootstrap, Stable Elo over 5 orderings, win rates), next to the
reference libraries (``krippendorff.alpha``, ``pingouin.intraclass_corr``) and
a naive pure-Python Bradley–Terry / bootstrap.  Each reference that is too
slow is capped and printed as "skipped (>cap)".  It prints seconds and the
largest difference between our values and the reference's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import krippendorff  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pingouin  # noqa: E402

from ratings import stats as fb  # noqa: E402

N_RATERS = 7
K_CONTESTANTS = 9
SCALE = [0, 1, 2, 3]
LEVELS = ("nominal", "ordinal", "interval", "ratio")
PINGOUIN_FORMS = {
    "ICC1": "ICC(1,1)",
    "ICC2": "ICC(A,1)",
    "ICC3": "ICC(C,1)",
    "ICC1k": "ICC(1,k)",
    "ICC2k": "ICC(A,k)",
    "ICC3k": "ICC(C,k)",
}


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def make_ratings(n: int, rng: np.random.Generator):
    n_items = max(n // N_RATERS, 3)
    latent = rng.normal(size=(n_items, 1))
    noisy = latent + rng.normal(scale=0.8, size=(n_items, N_RATERS))
    values = np.digitize(noisy, [-0.8, 0.0, 0.8]).astype(float)
    items = np.repeat(np.arange(n_items), N_RATERS)
    raters = np.tile(np.arange(N_RATERS), n_items)
    flat = values.ravel()
    flat[rng.random(flat.size) < 0.05] = np.nan
    keep = ~np.isnan(flat)
    return items[keep], raters[keep], flat[keep]


def make_matches(n: int, rng: np.random.Generator):
    truth = np.linspace(550, 1300, K_CONTESTANTS)
    a = rng.integers(0, K_CONTESTANTS, n)
    b = (a + rng.integers(1, K_CONTESTANTS, n)) % K_CONTESTANTS
    p = 1.0 / (1.0 + 10 ** ((truth[b] - truth[a]) / 400.0))
    u = rng.random(n)
    score = np.where(u < 0.9 * p, 1.0, np.where(u < 0.9 * p + 0.1, 0.5, 0.0))
    return a, b, score


# --- our analyses --------------------------------------------------------


def ours_ratings(items, raters, values):
    matrix = fb.long_to_matrix(items, raters, values).values
    alphas = fb.krippendorff_alpha_all_levels(matrix, value_domain=SCALE)
    iccs = fb.icc(matrix, warn=False)
    complete = matrix[~np.isnan(matrix).any(axis=1)]
    fleiss = fb.fleiss_kappa_from_matrix(complete, categories=SCALE)
    exact = fb.exact_agreement(matrix).value
    adjacent = fb.adjacent_agreement(matrix).value
    sd = fb.mean_item_sd(matrix).value
    rho = fb.mean_offdiagonal(fb.spearman_matrix(matrix))
    return {
        "alpha": alphas,
        "icc": iccs,
        "fleiss": fleiss,
        "exact": exact,
        "adjacent": adjacent,
        "sd": sd,
        "rho": rho,
        "matrix": matrix,
    }


def ours_pairwise(a, b, score, n_resamples: int):
    boot = fb.bradley_terry_bootstrap(a, b, score, n_contestants=K_CONTESTANTS, n_resamples=n_resamples)
    elo = fb.stable_elo(a, b, score, n_contestants=K_CONTESTANTS, n_orderings=5)
    wins = fb.win_matrix(a, b, score, n_contestants=K_CONTESTANTS)
    return {"bt": boot, "elo": elo, "rates": fb.win_rates(wins), "rate_matrix": fb.win_rate_matrix(wins)}


# --- references -----------------------------------------------------------


def reference_alpha(matrix):
    return {lvl: krippendorff.alpha(matrix.T, level_of_measurement=lvl, value_domain=SCALE) for lvl in LEVELS}


def reference_icc(items, raters, values):
    frame = pd.DataFrame({"item": items, "rater": raters, "score": values})
    old = pingouin.options["round.column.CI95"]
    pingouin.options["round.column.CI95"] = None
    try:
        return pingouin.intraclass_corr(frame, "item", "rater", "score", nan_policy="omit").set_index("Type")
    finally:
        pingouin.options["round.column.CI95"] = old


def naive_win_matrix(a: list[int], b: list[int], score: list[float], idx=None) -> list[list[float]]:
    wins = [[0.0] * K_CONTESTANTS for _ in range(K_CONTESTANTS)]
    for m in range(len(a)) if idx is None else idx:
        i, j, s = a[m], b[m], score[m]
        wins[i][j] += s
        wins[j][i] += 1.0 - s
    return wins


def naive_mm(wins: list[list[float]], tol: float = 1e-6) -> list[float]:
    k = len(wins)
    p = [1.0] * k
    total = [sum(row) for row in wins]
    ratings = [1000.0] * k
    for _ in range(100_000):
        new_p = []
        for i in range(k):
            denom = sum((wins[i][j] + wins[j][i]) / (p[i] + p[j]) for j in range(k) if j != i)
            new_p.append(total[i] / denom)
        logs = [np.log10(x) for x in new_p]
        mean_log = sum(logs) / k
        new_ratings = [1000.0 + 400.0 * (x - mean_log) for x in logs]
        p = [10 ** (x - mean_log) for x in logs]
        delta = max(abs(x - y) for x, y in zip(new_ratings, ratings, strict=True))
        ratings = new_ratings
        if delta < tol:
            break
    return ratings


def naive_bootstrap(a, b, score, n_resamples: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = len(a)
    samples = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n).tolist()
        samples.append(naive_mm(naive_win_matrix(a, b, score, idx)))
    arr = np.array(samples)
    return np.percentile(arr, 2.5, axis=0), np.percentile(arr, 97.5, axis=0)


# --- driver ---------------------------------------------------------------


def row(size: int, what: str, ours: float | None, ref: str, agreement: str) -> str:
    ours_s = f"{ours:9.3f}" if ours is not None else " " * 9
    return f"{size:>9,} | {what:<34} | {ours_s} | {ref:>22} | {agreement}"


def run(size: int, args, rng: np.random.Generator) -> list[str]:
    lines = []
    items, raters, values = make_ratings(size, rng)
    t_ratings, res = timed(lambda: ours_ratings(items, raters, values))
    matrix = res["matrix"]

    t_alpha, _ = timed(lambda: fb.krippendorff_alpha_all_levels(matrix, value_domain=SCALE))
    t_ref_alpha, ref_alpha = timed(lambda: reference_alpha(matrix))
    diff = max(abs(res["alpha"][lvl] - ref_alpha[lvl]) for lvl in LEVELS)
    lines.append(row(size, "alpha, 4 levels", t_alpha, f"krippendorff {t_ref_alpha:8.3f}", f"max|Δ| {diff:.1e}"))

    t_icc, _ = timed(lambda: fb.icc(matrix, warn=False))
    if items.size <= args.pingouin_cap:
        t_ref_icc, ref_icc = timed(lambda: reference_icc(items, raters, values))
        diffs = [abs(res["icc"][f].value - ref_icc.loc[name, "ICC"]) for f, name in PINGOUIN_FORMS.items()]
        ci = [abs(res["icc"][f].ci_low - ref_icc.loc[name, "CI95"][0]) for f, name in PINGOUIN_FORMS.items()]
        ref_text, agree = f"pingouin {t_ref_icc:8.3f}", f"max|Δ| {max(diffs):.1e} (CI {max(ci):.1e})"
    else:
        ref_text, agree = f"skipped (>{args.pingouin_cap:,})", "-"
    lines.append(row(size, "ICC, 6 forms with CIs", t_icc, ref_text, agree))
    lines.append(
        row(
            size,
            "ratings: full analysis",
            t_ratings,
            "",
            f"α_ord={res['alpha']['ordinal']:.3f} ICC2k={res['icc']['ICC2k'].value:.3f} κ={res['fleiss']:.3f}",
        )
    )

    a, b, score = make_matches(size, rng)
    t_pair, pres = timed(lambda: ours_pairwise(a, b, score, args.resamples))
    t_fit, fit = timed(lambda: fb.bradley_terry(a, b, score, n_contestants=K_CONTESTANTS))
    al, bl, sl = a.tolist(), b.tolist(), score.tolist()
    t_nfit, nfit = timed(lambda: naive_mm(naive_win_matrix(al, bl, sl)))
    lines.append(
        row(
            size,
            "BT fit (MM, tol 1e-6)",
            t_fit,
            f"naive loop {t_nfit:8.3f}",
            f"max|Δ| {np.max(np.abs(fit.ratings - np.array(nfit))):.1e} Elo",
        )
    )
    t_boot, boot = timed(
        lambda: fb.bradley_terry_bootstrap(a, b, score, n_contestants=K_CONTESTANTS, n_resamples=args.resamples)
    )
    width = np.mean(boot.ci_high - boot.ci_low)
    if size <= args.naive_cap:
        t_nboot, (lo, hi) = timed(lambda: naive_bootstrap(al, bl, sl, args.resamples))
        ref_text = f"naive loop {t_nboot:8.3f}"
        agree = f"mean CI width {width:.1f} vs {np.mean(hi - lo):.1f}"
    else:
        ref_text, agree = f"skipped (>{args.naive_cap:,})", f"mean CI width {width:.1f}"
    lines.append(row(size, f"BT + {args.resamples} bootstrap resamples", t_boot, ref_text, agree))
    t_elo, elo = timed(lambda: fb.stable_elo(a, b, score, n_contestants=K_CONTESTANTS, n_orderings=5))
    lines.append(row(size, "Stable Elo, 5 orderings", t_elo, "(no reference)", f"mean SD {np.mean(elo.sd):.1f}"))
    lines.append(row(size, "pairwise: full analysis", t_pair, "", f"top BT {pres['bt'].ratings.max():.1f}"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="comma-separated numbers of judgments (default: %(default)s)"
    )
    parser.add_argument("--resamples", type=int, default=100, help="BT bootstrap resamples")
    parser.add_argument(
        "--pingouin-cap",
        type=int,
        default=2_000_000,
        help="skip pingouin above this many ratings (default: %(default)s)",
    )
    parser.add_argument(
        "--naive-cap",
        type=int,
        default=100_000,
        help="skip the naive Python bootstrap above this many matches (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=fb.DEFAULT_SEED)
    args = parser.parse_args(argv)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error("--sizes must be comma-separated integers")
    if not sizes or min(sizes) < 100:
        parser.error("every size must be at least 100")
    rng = np.random.default_rng(args.seed)
    print(
        f"funnybone stats benchmark — {os.cpu_count()} CPU(s), numpy {np.__version__}, "
        f"{N_RATERS} raters, K={K_CONTESTANTS} contestants, seed {args.seed}"
    )
    header = f"{'N':>9} | {'what':<34} | {'ours (s)':>9} | {'reference (s)':>22} | agreement"
    print(header)
    print("-" * (len(header) + 30))
    for size in sizes:
        for line in run(size, args, rng):
            print(line, flush=True)
        print("-" * (len(header) + 30))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
