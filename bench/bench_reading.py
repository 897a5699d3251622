# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading judgments for analysis: ``analyze ratings`` end to end, and the study matrix out of PostgreSQL.

    .venv/bin/python bench/bench_reading.py [--sizes 100000,1000000] [--matrix-study ID]

``analyze`` part — for every size N it writes N ratings in long format
(``item,rater,value`` on 0–3, 7 raters, N/7 items) to a CSV file and times, in
this process:

* ours: ``ratings.io.read_table`` + ``ratings_from_table`` (reading and
  checking, every message naming its row) + ``rating_report`` (alpha at the
  scale's level and the others, ICCs with intervals, kappa, agreement,
  Spearman), i.e. what ``manage.py analyze ratings FILE`` computes;
* reference: ``pandas.read_csv`` + ``pivot`` + ``krippendorff.alpha`` (four
  levels) + ``pingouin.intraclass_corr`` — the libraries our coefficients are
  checked against, reading without any checks;
* the command itself as a subprocess (``manage.py analyze ratings FILE --json``),
  Django start-up included.

Matrix part (needs ``DATABASE_URL`` pointing at PostgreSQL, and a study id
with judgments, e.g. one ``bench/bench_export.py`` built): the items × raters
matrix of the study's human judgments through ``study_rating_matrix`` beside
the plain Django way (``values_list`` of item, rater and value into numpy).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

N_RATERS = 7
SCALE = [0, 1, 2, 3]


def write_ratings(n: int, path: Path, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    n_items = max(n // N_RATERS, 3)
    latent = rng.normal(size=(n_items, 1))
    values = np.digitize(latent + rng.normal(scale=0.8, size=(n_items, N_RATERS)), [-0.8, 0.0, 0.8])
    with path.open("w", encoding="utf-8") as out:
        out.write("item,rater,value\n")
        for i in range(n_items):
            out.write("".join(f"joke-{i},rater-{r},{values[i, r]}\n" for r in range(N_RATERS)))


def ours(path: Path) -> tuple[float, float, float]:
    from ratings import io
    from ratings.reports import rating_report

    started = time.perf_counter()
    table = io.read_table(path)
    data = io.ratings_from_table(table)
    checked = time.perf_counter()
    report = rating_report(data.values, categories=io.observed_labels([data.values]), nominal=False)
    done = time.perf_counter()
    alpha = report["krippendorff_alpha"]["ordinal"]
    return checked - started, done - started, alpha


def reference(path: Path) -> tuple[float, float, float]:
    import krippendorff
    import pandas as pd
    import pingouin

    started = time.perf_counter()
    frame = pd.read_csv(path)
    matrix = frame.pivot(index="item", columns="rater", values="value").to_numpy(dtype=float)
    read = time.perf_counter()
    alphas = {
        level: krippendorff.alpha(matrix.T, level_of_measurement=level, value_domain=SCALE)
        for level in ("nominal", "ordinal", "interval", "ratio")
    }
    pingouin.intraclass_corr(frame, "item", "rater", "value", nan_policy="omit")
    return read - started, time.perf_counter() - started, alphas["ordinal"]


def command(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "analyze", "ratings", str(path), "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "funnybone.settings"},
    )
    return time.perf_counter() - started


def matrix(study_id: int) -> None:
    from annotation.models import Judgment, Study
    from ratings.selectors import analysable_judgments, study_rating_matrix

    study = Study.objects.get(pk=study_id)
    started = time.perf_counter()
    ours_matrix = study_rating_matrix(study=study)
    t_ours = time.perf_counter() - started

    started = time.perf_counter()
    rows = list(analysable_judgments(study=study, group="humans").values_list("item_id", "rater_id", "value"))
    items = np.array([r[0] for r in rows])
    raters = np.array([r[1] for r in rows])
    values = np.array([float(r[2]["rating"]) for r in rows])
    item_ids, r = np.unique(items, return_inverse=True)
    rater_ids, c = np.unique(raters, return_inverse=True)
    naive = np.full((item_ids.size, rater_ids.size), np.nan)
    naive[r, c] = values
    t_naive = time.perf_counter() - started
    n = Judgment.objects.filter(study=study).count()
    same = np.nansum(naive) == np.nansum(ours_matrix.values)
    print(
        f"study {study_id}: {n:,} judgments, {ours_matrix.n_judgments:,} human → {ours_matrix.values.shape} matrix | "
        f"study_rating_matrix {t_ours:6.2f}s | plain values_list + numpy {t_naive:6.2f}s | same sum: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--matrix-study", type=int, help="a study id in DATABASE_URL's database")
    parser.add_argument("--no-command", action="store_true", help="skip the manage.py subprocess")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPU(s), load average {load:.1f}; {N_RATERS} raters per item, values 0–3")
    print(
        f"{'ratings':>9} | {'ours read+check':>15} {'ours total':>10} | {'ref read':>8} {'ref total':>9} | "
        f"{'ratio':>5} | {'command':>8} | alpha ours / ref"
    )
    with tempfile.TemporaryDirectory(prefix="fb-bench-reading-") as scratch:
        for size in (int(s) for s in args.sizes.split(",") if s):
            path = Path(scratch) / f"ratings-{size}.csv"
            write_ratings(size, path)
            read_ours, total_ours, alpha_ours = ours(path)
            read_ref, total_ref, alpha_ref = reference(path)
            cli = float("nan") if args.no_command else command(path)
            print(
                f"{size:>9,} | {read_ours:>14.2f}s {total_ours:>9.2f}s | {read_ref:>7.2f}s {total_ref:>8.2f}s | "
                f"{total_ours / total_ref:>5.2f} | {cli:>7.2f}s | {alpha_ours:.4f} / {alpha_ref:.4f}",
                flush=True,
            )
    if args.matrix_study:
        matrix(args.matrix_study)


if __name__ == "__main__":
    main()
