# SPDX-License-Identifier: GPL-3.0-or-later
"""The worker's computation of a study's stored analysis and alignment reports: seconds and peak memory.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_reports.py --items 1000000 --judgments 1000000 \
        --raters 1000 --judges 2 --judge-items 25000 --worker-memory-mb 6000   (then --study N to rerun)

Builds (or reuses, ``--study``) the study ``bench/bench_pages.py`` builds with
the same arguments, then computes each report as the worker does
(``study_report_task``, the parameters the pages ask for by default) in a
child process of its own, under ``--worker-memory-mb`` if given. Printed per
report: the seconds of the task, the child's peak resident memory (VmHWM) and
its resident memory before the computation (Django loaded, connected), and
how the report ended (done, or failed with its reason).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("analysis", "alignment")


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    os.environ["FUNNYBONE_REPORT_INLINE_JUDGMENTS"] = "0"
    import django

    django.setup()


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one(study_pk: int, kind: str, memory_mb: int | None) -> dict:
    """Compute one report of ``study_pk`` as the worker does; what it cost (run in a child process)."""
    from django.db import connection

    from annotation.models import Study
    from ratings.alignment import AlignmentParams
    from ratings.cached import report_show
    from ratings.models import StudyReport
    from ratings.tasks import study_report_task

    study = Study.objects.get(pk=study_pk)
    params = (
        {"group": "humans", "rater_ids": None, "k": 3, "tie": "higher"}
        if kind == "analysis"
        else AlignmentParams(seed=study.seed).as_dict()  # what the alignment page asks for by default
    )
    StudyReport.objects.filter(study=study, kind=kind).delete()
    connection.ensure_connection()
    shown = report_show(study=study, kind=kind, params=params, inline=False)
    before = _status_mb("VmRSS")
    if memory_mb:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, resource.RLIM_INFINITY))
    start = time.perf_counter()
    study_report_task.apply(args=[shown.report.pk])
    seconds = time.perf_counter() - start
    report = StudyReport.objects.get(pk=shown.report.pk)
    outcome = report.status if report.status != "failed" else f"failed: {report.error[:160]}"
    return {"seconds": seconds, "peak_mb": _status_mb("VmHWM"), "before_mb": before, "outcome": outcome}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--raters", type=int, default=1000)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--judge-items", type=int, default=25_000)
    parser.add_argument("--study", type=int, help="reuse a study this bench (or bench_pages) built before")
    parser.add_argument("--worker-memory-mb", type=int, help="cap the child's address space while it computes")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: analysis, alignment")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child: compute this kind, print JSON
    args = parser.parse_args()
    _django()
    if args.one:
        print(json.dumps(one(args.study, args.one, args.worker_memory_mb)))
        return 0

    from django.core.management import call_command

    from annotation.models import Item, Judgment
    from bench.bench_export import built_or_reused

    call_command("migrate", verbosity=0)
    study_pk = built_or_reused(
        args.study, args.judgments, args.raters, args.judges, n_items=args.items, judge_items=args.judge_items
    )
    n_items = Item.objects.filter(study_id=study_pk).count()
    n_judgments = Judgment.objects.filter(study_id=study_pk).count()
    print(f"study {study_pk}: {n_items:,} items, {n_judgments:,} judgments; load {os.getloadavg()[0]:.1f}")
    print(f"{'report':<10} {'seconds':>8} {'peak MB':>8} {'before MB':>10}  outcome")
    for kind in args.kinds.split(","):
        command = [sys.executable, __file__, "--study", str(study_pk), "--one", kind]
        if args.worker_memory_mb:
            command += ["--worker-memory-mb", str(args.worker_memory_mb)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            print(f"{kind:<10} the child failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
            continue
        row = json.loads(lines[-1])
        print(f"{kind:<10} {row['seconds']:8.1f} {row['peak_mb']:8.0f} {row['before_mb']:10.0f}  {row['outcome']}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
