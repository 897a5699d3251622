# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up and run time of ``funnybone analyze`` (no Django) against ``manage.py analyze``, in one run.

    .venv/bin/python bench/bench_cli_startup.py [--runs 5] [--funnybone /path/to/venv/bin/funnybone]

Each command is started as a fresh process ``--runs`` times; the median wall time is printed. Three jobs:

* ``analyze --help`` — pure start-up;
* ``analyze ratings`` on a JEST-sized panel (80 items × 7 raters on 0–3, long format, 560 rows);
* ``analyze pairwise`` on 1,000 matches between 9 contestants, 100 bootstrap resamples.

``funnybone`` is ``python -m ratings.cli`` from this checkout (what the console script calls) unless
``--funnybone`` names an installed console script (``pip install .`` into a fresh venv gives one).
Every process runs without Django settings in the environment except ``manage.py``, which needs them.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def write_ratings(path: Path, rng: np.random.Generator) -> None:
    quality = rng.integers(0, 4, 80)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["item", "rater", "value"])
        for i, q in enumerate(quality):
            for r in range(7):
                out.writerow([f"t{i}", f"r{r}", int(np.clip(q + rng.integers(-1, 2), 0, 3))])


def write_matches(path: Path, rng: np.random.Generator) -> None:
    strengths = np.linspace(-1.5, 1.5, 9)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["a", "b", "winner"])
        for _ in range(1000):
            a, b = rng.choice(9, size=2, replace=False)
            p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
            u = rng.random()
            out.writerow([f"m{a}", f"m{b}", "tie" if u < 0.1 else (f"m{a}" if u < 0.1 + 0.9 * p else f"m{b}")])


def timed(command: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--funnybone", help="An installed funnybone console script to time instead of -m ratings.cli.")
    args = parser.parse_args()

    bare = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE"))}
    if not args.funnybone:
        bare["PYTHONPATH"] = str(ROOT)  # -m ratings.cli from the checkout; an installed script uses its own copy
    django_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
    funnybone = [args.funnybone] if args.funnybone else [sys.executable, "-m", "ratings.cli"]
    manage = [sys.executable, str(ROOT / "manage.py")]

    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(7)
        ratings, matches = Path(tmp) / "jest.csv", Path(tmp) / "matches.csv"
        write_ratings(ratings, rng)
        write_matches(matches, rng)
        jobs = [
            ("analyze --help", ["analyze", "--help"]),
            ("ratings, 80 items × 7 raters", ["analyze", "ratings", str(ratings), "--labels", "0,1,2,3", "--json"]),
            ("pairwise, 1,000 matches, 100 resamples", ["analyze", "pairwise", str(matches), "--bootstrap", "100"]),
        ]
        print(f"median wall time of {args.runs} fresh processes; funnybone = {' '.join(funnybone)}")
        print(f"{'job':<42} {'funnybone':>10} {'manage.py':>10} {'ratio':>7}")
        for name, words in jobs:
            ours = timed(funnybone + words, bare, args.runs)
            theirs = timed(manage + words, django_env, args.runs)
            print(f"{name:<42} {ours:>9.3f}s {theirs:>9.3f}s {theirs / ours:>6.1f}×")


if __name__ == "__main__":
    main()
