# SPDX-License-Identifier: GPL-3.0-or-later
"""Time and measure every study export beside bare references over the same rows.

    .venv/bin/python bench/bench_export.py [--sizes 100000,1000000] [--raters 18] [--judges 2] [--study ID]

For every size N it builds one ordinal (0–3) study with N judgments straight
into the database (``bulk_create`` and ``executemany``, no services): ``--raters`` crowd raters and
``--judges`` LLM judges each judge every item, so there are
N / (raters + judges) items. The database is the one ``DATABASE_URL`` names
(it must be a scratch database: the bench migrates it and adds a study), or
by default a temporary SQLite file that is deleted afterwards.

``--study ID`` measures an existing study instead of building one. After a
build the bench runs ``ANALYZE`` (PostgreSQL), as autovacuum would soon after
a real study filled up.

Each measured phase then runs in its own child process, which reports its own
peak resident memory: ``VmHWM`` from ``/proc/self/status`` at the end of the
phase, the high-water mark of the address space the child got at ``exec``.
(``ru_maxrss`` from ``wait4`` is not that on Linux: exec carries the parent's
high-water mark over into the child's, so every phase would read at least the
bench process's own peak, Django plus a build of the study. The header prints
that figure.) With ``--tracemalloc`` the child also reports the peak of the
Python heap (``tracemalloc``), which makes the phases slower; time them without.

* ``idle``      Django set up and nothing else: the floor under every figure;
* ``csv``       the spreadsheet-safe long-format CSV;
* ``csv_raw``   the analysis-grade CSV (values as stored);
* ``jsonl``     JSON Lines;
* ``parquet``   Parquet (typed columns);
* ``workbook``  the XLSX workbook (xlsxwriter in constant memory, every sheet);
* ``ref_csv``   reference: the same query's raw columns (JSON as text) through a
                bare ``csv.writer``, no per-row work at all;
* ``ref_xlsx``  reference: a bare xlsxwriter (constant memory) writing the two
                big sheets from raw columns: the human ratings item by item
                (items × raters) and the LLM judges' rows;
* ``pandas``    (only when asked with ``--phases``) the old baseline: the rows in
                a DataFrame written by ``DataFrame.to_excel`` (openpyxl engine).

A phase that runs past ``--cap`` seconds is stopped and printed as skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = ("idle", "csv", "ref_csv", "csv_raw", "jsonl", "parquet", "workbook", "ref_xlsx")
BATCH = 10_000


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


# -- building the study ----------------------------------------------------------------


def build(n_judgments: int, n_raters: int, n_judges: int, seed: int = 7) -> int:
    """Create the study and its judgments; return the study id."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Assignment, Enrollment, Item, Judgment, Rater, Study

    rng = random.Random(seed)
    per_item = n_raters + n_judges
    n_items = max(1, n_judgments // per_item)
    owner, _ = get_user_model().objects.get_or_create(username="bench-export")
    stamp = f"{n_judgments}-{int(time.time())}"
    study = Study.objects.create(
        owner=owner,
        name=f"Export bench {stamp}",
        slug=f"export-bench-{stamp}",
        task_type="ordinal",
        config={"points": [0, 1, 2, 3], "labels": ["Not funny", "Somewhat funny", "Funny", "Very funny"]},
        quota_per_item=n_raters,
        state=Study.State.OPEN,
    )
    Item.objects.bulk_create(
        (
            Item(study=study, external_id=f"joke-{i}", position=i, prompt=f"Setup {i}.", text=f"Punchline number {i}.")
            for i in range(n_items)
        ),
        batch_size=BATCH,
    )
    items = list(Item.objects.filter(study=study).order_by("position").values_list("pk", flat=True))
    raters = Rater.objects.bulk_create(
        [Rater(kind=Rater.Kind.CROWD, external_id=f"bench-{stamp}-p{r}") for r in range(n_raters)]
        + [Rater(kind=Rater.Kind.LLM, name=f"judge-{r}") for r in range(n_judges)]
    )
    if not all(r.pk for r in raters):  # backends without RETURNING
        raters = list(Rater.objects.filter(external_id__startswith=f"bench-{stamp}-")) + list(
            Rater.objects.filter(kind=Rater.Kind.LLM, name__startswith="judge-").order_by("-pk")[:n_judges]
        )
    Enrollment.objects.bulk_create(Enrollment(study=study, rater=r) for r in raters if r.kind == Rater.Kind.CROWD)
    now = timezone.now()
    # Each rater has a leaning, so the ratings are not uniform noise.
    leaning = {r.pk: rng.random() for r in raters}
    humans = {r.pk for r in raters if r.kind == Rater.Kind.CROWD}
    step = max(1, BATCH // per_item)
    for start in range(0, n_items, step):
        chunk = items[start : start + step]
        with transaction.atomic():
            _insert(
                Assignment,
                [
                    "study_id",
                    "item_id",
                    "rater_id",
                    "trial",
                    "sequence",
                    "state",
                    "shown_order",
                    "leased_at",
                    "lease_expires_at",
                ],
                [(study.pk, item_id, r.pk, 0, 0, "done", "[]", now, now) for item_id in chunk for r in raters],
            )
            assignment_ids = Assignment.objects.filter(item_id__in=chunk).values_list("pk", "item_id", "rater_id")
            rows = []
            for pk, item_id, rater_id in assignment_ids:
                rating = min(3, max(0, round(rng.gauss(1.5 + leaning[rater_id], 1.0))))
                human = rater_id in humans
                provenance = (
                    {}
                    if human
                    else {
                        "raw_response": str(rating),
                        "usage": {"prompt_tokens": 180, "completion_tokens": 1},
                        "latency_ms": rng.randint(200, 900),
                    }
                )
                rows.append(
                    (
                        pk,
                        study.pk,
                        item_id,
                        rater_id,
                        "ok",
                        json.dumps({"rating": rating}),
                        "[]",
                        rng.randint(1500, 20000) if human else None,
                        False,
                        None,
                        json.dumps(provenance),
                        now,
                    )
                )
            _insert(
                Judgment,
                [
                    "assignment_id",
                    "study_id",
                    "item_id",
                    "rater_id",
                    "status",
                    "value",
                    "shown_order",
                    "duration_ms",
                    "too_fast",
                    "attention_passed",
                    "provenance",
                    "created_at",
                ],
                rows,
            )
    # Every person holds a done place on every item, as services.assignment would have counted them.
    Item.objects.filter(study=study, is_attention_check=False).update(places_taken=len(humans))
    return study.pk


def _insert(model, columns: list[str], rows: list[tuple]) -> None:
    """Insert many rows with one prepared statement.

    The study's items, raters and enrollments are made with ``bulk_create``;
    the 2 × N assignment and judgment rows go through ``executemany`` because
    ``bulk_create`` spends most of its time compiling SQL, which would make the
    1M build take longer than the export it prepares.
    """
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)  # noqa: S608 - fixed names


# -- phases (each in its own process) ------------------------------------------------------


def run_phase(phase: str, study_id: int, out_dir: str) -> dict:
    from annotation.models import Judgment, Study

    study = Study.objects.get(pk=study_id)
    started = time.perf_counter()
    rows = 0
    target = Path(out_dir) / f"{phase}-{study_id}"
    if phase == "workbook":
        from ratings.exports.workbook import write_workbook

        target = target.with_suffix(".xlsx")
        rows = write_workbook(study, str(target))
    elif phase in ("csv", "csv_raw", "jsonl", "parquet"):
        from ratings.exports.services import EXTENSIONS, write_export

        target = target.with_suffix("." + EXTENSIONS[phase])
        rows = write_export(study, phase, target)
    elif phase == "ref_csv":
        target = target.with_suffix(".csv")
        rows = _reference_csv(study, target)
    elif phase == "ref_xlsx":
        target = target.with_suffix(".xlsx")
        rows = _reference_xlsx(study, target)
    elif phase == "pandas":
        import pandas as pd

        columns = [
            "item__external_id",
            "rater_id",
            "rater__kind",
            "rater__external_id",
            "status",
            "value",
            "duration_ms",
            "too_fast",
            "attention_passed",
            "created_at",
        ]
        records = Judgment.objects.filter(study=study).order_by("item__position", "rater_id").values_list(*columns)
        frame = pd.DataFrame.from_records(list(records.iterator(chunk_size=BATCH)), columns=columns)
        frame["value"] = frame["value"].map(json.dumps)
        frame["created_at"] = frame["created_at"].dt.tz_localize(None)
        target = target.with_suffix(".xlsx")
        frame.to_excel(target, index=False, engine="openpyxl")
        rows = len(frame)
    seconds = time.perf_counter() - started
    size = target.stat().st_size if target.exists() else 0
    return {"seconds": seconds, "rows": rows, "bytes": size}


def _raw_rows(study):
    """The export's query with nothing done per row: JSON columns as their stored text."""
    from ratings.exports.long_rows import _query
    from ratings.exports.study_data import load_study, stream

    return stream(_query(load_study(study)))


def _reference_csv(study, target: Path) -> int:
    import csv

    n = 0
    with open(target, "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        for row in _raw_rows(study):
            writer.writerow(row)
            n += 1
    return n


def _reference_xlsx(study, target: Path) -> int:
    import xlsxwriter

    from annotation.models import Judgment
    from ratings.exports.study_data import HUMAN_KINDS, load_study, stream

    data = load_study(study)
    humans = {r.pk: i for i, r in enumerate(data.humans)}
    book = xlsxwriter.Workbook(str(target), {"constant_memory": True})
    ratings = book.add_worksheet("Ratings")
    ratings.write_row(0, 0, ["Item", *[r.label for r in data.humans]])
    n = 0
    row, current, cells = 0, None, []
    human_rows = (
        Judgment.objects.filter(study=study, rater__kind__in=HUMAN_KINDS)
        .order_by("item__position", "item_id", "rater_id")
        .values_list("item__external_id", "rater_id", "value__rating")
    )
    for external_id, rater_id, rating in stream(human_rows):
        n += 1
        if external_id != current:
            if current is not None:
                ratings.write_row(row, 0, cells)
            row, current, cells = row + 1, external_id, [external_id] + [None] * len(humans)
        cells[1 + humans[rater_id]] = rating
    if current is not None:
        ratings.write_row(row, 0, cells)
    judges = book.add_worksheet("LLM judgments")
    judge_rows = (
        Judgment.objects.filter(study=study)
        .exclude(rater__kind__in=HUMAN_KINDS)
        .order_by("rater_id", "item__position", "id")
        .values_list(
            "rater_id", "item__external_id", "status", "value__rating", "duration_ms", "provenance__raw_response"
        )
    )
    for i, values in enumerate(stream(judge_rows), start=1):
        judges.write_row(i, 0, values)
        n += 1
    book.close()
    return n


def _own_peak_mb() -> float:
    """This process's peak resident memory since it was exec'd (Linux ``VmHWM``), in MiB."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # elsewhere: includes what exec inherited


def measure(phase: str, study_id: int, out_dir: str, cap: float, trace: bool = False) -> dict:
    """Run one phase in a child process, which reports its own peak RSS (and Python heap with ``trace``)."""
    command = [sys.executable, __file__, "--phase", phase, "--study", str(study_id), "--out", out_dir]
    if trace:
        command.append("--tracemalloc")
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    deadline = time.monotonic() + cap
    while True:
        pid, status, _usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            os.wait4(child.pid, 0)
            return {"skipped": f">{cap:.0f}s"}
        time.sleep(0.2)
    output = child.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        return {"skipped": f"failed (exit {os.waitstatus_to_exitcode(status)})"}
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000", help="comma-separated judgment counts")
    parser.add_argument("--raters", type=int, default=18)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--cap", type=float, default=900.0, help="seconds before a phase is stopped")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--study", type=int, help="measure this existing study instead of building one")
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--tracemalloc", action="store_true", help="also report each phase's Python heap peak")
    args = parser.parse_args()

    if args.phase:  # a child: one phase, one JSON line
        if args.tracemalloc:
            import tracemalloc

            tracemalloc.start()
        _django()
        result = run_phase(args.phase, args.study, args.out)
        result["peak_mb"] = _own_peak_mb()
        if args.tracemalloc:
            result["heap_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        print(json.dumps(result))
        return

    scratch = tempfile.mkdtemp(prefix="fb-bench-export-")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/bench.sqlite3"
    _django()
    from django.conf import settings
    from django.core.management import call_command

    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    call_command("migrate", verbosity=0)
    phases = [p for p in args.phases.split(",") if p]
    print(
        f"database: {engine}; raters per item: {args.raters} human + {args.judges} LLM; cap {args.cap:.0f}s; "
        f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f}"
    )
    heap = f" {'heap MB':>8}" if args.tracemalloc else ""
    print(f"{'judgments':>10} {'phase':>9} {'seconds':>9} {'peak MB':>9} {'rows':>9} {'file MB':>8}{heap}")
    studies = [(None, args.study)] if args.study else [(int(s), None) for s in args.sizes.split(",")]
    for size, study_id in studies:
        if study_id is None:
            started = time.perf_counter()
            study_id = build(size, args.raters, args.judges)
            if engine == "postgresql":
                from django.db import connection

                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            print(f"{size:>10} {'build':>9} {time.perf_counter() - started:>9.1f}")
        else:
            from annotation.models import Judgment

            size = Judgment.objects.filter(study_id=study_id).count()
        for phase in phases:
            result = measure(phase, study_id, scratch, args.cap, args.tracemalloc)
            if "skipped" in result:
                print(f"{size:>10} {phase:>9} {'skipped ' + result['skipped']:>30}")
                continue
            print(
                f"{size:>10} {phase:>9} {result['seconds']:>9.1f} {result['peak_mb']:>9.0f} "
                f"{result['rows']:>9} {result['bytes'] / 2**20:>8.1f}"
                + (f" {result['heap_mb']:>8.0f}" if "heap_mb" in result else "")
            )
            sys.stdout.flush()
    print(f"(bench process peak RSS {_own_peak_mb():.0f} MB: wait4's ru_maxrss would give each phase at least this)")
    if engine == "sqlite3":
        for leftover in Path(scratch).iterdir():
            leftover.unlink()
        os.rmdir(scratch)
    else:
        print(f"(outputs left in {scratch}; the bench studies stay in the database)")


if __name__ == "__main__":
    main()
