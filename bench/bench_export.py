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
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peaks import own_peak_mb, phase_figures  # noqa: E402

PHASES = ("idle", "csv", "ref_csv", "csv_raw", "jsonl", "parquet", "workbook", "ref_xlsx")
BATCH = 10_000


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


# -- building the study ----------------------------------------------------------------


def _bench_study(name: str, stamp: str, *, quota: int):
    """An open ordinal 0–3 study of the bench's own researcher."""
    from django.contrib.auth import get_user_model

    from annotation.models import Study

    owner, _ = get_user_model().objects.get_or_create(username="bench-export")
    return Study.objects.create(
        owner=owner,
        name=f"{name} {stamp}",
        slug=f"{name.lower().replace(' ', '-')}-{stamp}",
        task_type="ordinal",
        config={"points": [0, 1, 2, 3], "labels": ["Not funny", "Somewhat funny", "Funny", "Very funny"]},
        quota_per_item=quota,
        state=Study.State.OPEN,
    )


def build(n_judgments: int, n_raters: int, n_judges: int, seed: int = 7) -> int:
    """Create the study and its judgments; return the study id."""
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Assignment, Enrollment, Item, Judgment, Rater

    rng = random.Random(seed)
    per_item = n_raters + n_judges
    n_items = max(1, n_judgments // per_item)
    stamp = f"{n_judgments}-{int(time.time())}"
    study = _bench_study("Export bench", stamp, quota=n_raters)
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


def built_or_reused(
    reuse: int | None, n_judgments: int, n_raters: int, n_judges: int, *, n_items: int = 0, judge_items: int = 0
) -> int:
    """Study ``reuse``, or a new one once PostgreSQL has caught up with the load: from :func:`build_sliced`
    when ``n_items`` is given (a quota-1 study of that many items), else from :func:`build`."""
    if reuse:
        return reuse
    from django.db import connection

    start = time.perf_counter()
    if n_items:
        study_pk = build_sliced(n_items, n_judgments, n_raters, n_judges, judge_items)
    else:
        study_pk = build(n_judgments, n_raters, n_judges)
    print(f"built study {study_pk} in {time.perf_counter() - start:.0f} s (reuse it with --study {study_pk})")
    if connection.vendor == "postgresql":
        # What autovacuum does soon after a bulk load: statistics and the visibility map, so that
        # counts can read an index alone. Without it the first minutes after the load are slower.
        with connection.cursor() as cursor:
            for table in ("annotation_judgment", "annotation_assignment", "annotation_item", "judging_judgeunit"):
                cursor.execute(f"VACUUM ANALYZE {table}")
    return study_pk


def build_sliced(n_items: int, n_judgments: int, n_raters: int, n_judges: int, judge_items: int, seed: int = 7) -> int:
    """A quota-1 crowd study of ``n_items`` items, built in SQL on PostgreSQL; return the study id.

    The study as a crowd platform leaves it: every judged item has one person's
    answer, ``n_raters`` people each took one contiguous slice of the items in
    import order, and ``n_judges`` LLM judges each judged the first
    ``judge_items`` items (so judges and people overlap there). The people's
    answers are ``n_judgments`` less the judges'; the items after them are still
    open (no place taken). Ratings are 0–3 around each rater's own leaning. The
    first judge is a judge config whose run over every item is still running:
    the items it judged are its done units, the rest are pending.

    Rows are made by ``INSERT … SELECT`` over ``generate_series`` in the database,
    so a million items and a million judgments take a few minutes, not an hour.
    """
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Enrollment, Rater

    if connection.vendor != "postgresql":
        raise SystemExit("building a study by slices needs PostgreSQL (DATABASE_URL)")
    judge_items = min(judge_items, n_items) if n_judges else 0
    n_human = n_judgments - n_judges * judge_items
    if not 0 < n_human <= n_items or n_raters < 1:
        raise SystemExit(f"{n_judgments} judgments do not fit {n_items} items at quota 1 with these judges")
    rng = random.Random(seed)
    stamp = f"{n_items}i-{n_judgments}-{int(time.time())}"
    now = timezone.now()
    with transaction.atomic():
        study = _bench_study("Pages bench", stamp, quota=1)
        owner = study.owner
        people = Rater.objects.bulk_create(
            Rater(kind=Rater.Kind.CROWD, external_id=f"bench-{stamp}-p{r}") for r in range(n_raters)
        )
        judges = Rater.objects.bulk_create(Rater(kind=Rater.Kind.LLM, name=f"judge-{r}") for r in range(n_judges))
        Enrollment.objects.bulk_create(
            Enrollment(study=study, rater=r, consented_at=now, instructed_at=now, completed_at=now) for r in people
        )
    # Rater r (0-based) judged human items [r·H/R, (r+1)·H/R): rater index = position·R div H.
    leaning = [(r.pk, round(rng.random(), 3)) for r in people + judges]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotation_item (study_id, external_id, position, prompt, text, metadata, "
            "is_attention_check, places_taken) "
            "SELECT %s, 'joke-' || i, i, 'Setup ' || i || '.', 'Punchline number ' || i || '.', '{}', false, "
            "CASE WHEN i < %s THEN 1 ELSE 0 END FROM generate_series(0, %s - 1) AS i",
            [study.pk, n_human, n_items],
        )
        cursor.execute("CREATE TEMP TABLE bench_rater (idx int, rater_id bigint, leaning float8, human boolean)")
        cursor.executemany(
            "INSERT INTO bench_rater VALUES (%s, %s, %s, %s)",
            [(i, pk, lean, i < n_raters) for i, (pk, lean) in enumerate(leaning)],
        )
        # People: one assignment per judged item; judges: one per item of their sample, ordered after the people.
        cursor.execute(
            "INSERT INTO annotation_assignment (study_id, item_id, rater_id, trial, sequence, state, shown_order, "
            "leased_at, lease_expires_at, shown_at) "
            "SELECT i.study_id, i.id, r.rater_id, 0, i.position - (r.idx::bigint * %s + %s - 1) / %s, 'done', '[]', "
            "%s, %s, %s FROM annotation_item i JOIN bench_rater r ON r.human AND r.idx = (i.position::bigint * %s) / %s "
            "WHERE i.study_id = %s AND i.position < %s",
            [n_human, n_raters, n_raters, now, now, now, n_raters, n_human, study.pk, n_human],
        )
        cursor.execute(
            "INSERT INTO annotation_assignment (study_id, item_id, rater_id, trial, sequence, state, shown_order, "
            "leased_at, lease_expires_at, shown_at) "
            "SELECT i.study_id, i.id, r.rater_id, 0, i.position, 'done', '[]', %s, %s, %s "
            "FROM annotation_item i CROSS JOIN bench_rater r WHERE NOT r.human AND i.study_id = %s AND i.position < %s",
            [now, now, now, study.pk, judge_items],
        )
        # A rating near 1.5 + leaning (Box–Muller normal noise), clipped to 0–3; people take 1.5–20 s per item.
        cursor.execute("SELECT setseed(%s)", [seed / 100])
        cursor.execute(
            "INSERT INTO annotation_judgment (assignment_id, study_id, item_id, rater_id, status, value, shown_order, "
            "duration_ms, too_fast, attention_passed, provenance, created_at) "
            "SELECT a.id, a.study_id, a.item_id, a.rater_id, 'ok', jsonb_build_object('rating', g.rating), '[]', "
            "CASE WHEN r.human THEN 1500 + floor(random() * 18500)::int END, false, NULL, "
            "CASE WHEN r.human THEN '{}'::jsonb ELSE jsonb_build_object('raw_response', g.rating::text, "
            "'usage', jsonb_build_object('prompt_tokens', 180, 'completion_tokens', 1), "
            "'latency_ms', 200 + floor(random() * 700)::int) END, "
            "%s::timestamptz - make_interval(secs => %s - a.sequence) "
            "FROM annotation_assignment a JOIN bench_rater r ON r.rater_id = a.rater_id "
            "CROSS JOIN LATERAL (SELECT least(3, greatest(0, round(1.5 + r.leaning + "
            "sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))))::int AS rating) g "
            "WHERE a.study_id = %s",
            [now, n_items, study.pk],
        )
        cursor.execute("DROP TABLE bench_rater")
    if judges:
        _judge_run_in_progress(study, judges[0], owner, now)
    return study.pk


def _judge_run_in_progress(study, rater, owner, now) -> None:
    """The first judge as a judge config with a run over every item, still running: its judged items done."""
    from django.db import connection

    from judging.models import JudgeConfig, JudgeRun

    judge = JudgeConfig.objects.create(
        rater=rater, owner=owner, name=f"{rater.name} {study.pk}", model="bench-model", base_url="http://127.0.0.1:9/v1"
    )
    run = JudgeRun.objects.create(
        study=study, judge=judge, created_by=owner, status="running", started_at=now, heartbeat_at=now
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judging_judgeunit (run_id, item_id, trial, swapped, status, attempts, claimed_by, "
            "claimed_until, finished_at, assignment_id, outcome, reason, error, prompt_tokens, completion_tokens, "
            "answer_excerpt) "
            "SELECT %s, i.id, 0, false, CASE WHEN a.id IS NULL THEN 'pending' ELSE 'done' END, "
            "CASE WHEN a.id IS NULL THEN 0 ELSE 1 END, '', NULL, CASE WHEN a.id IS NULL THEN NULL ELSE %s END, a.id, "
            "CASE WHEN a.id IS NULL THEN '' ELSE 'ok' END, '', '', CASE WHEN a.id IS NULL THEN 0 ELSE 180 END, "
            "CASE WHEN a.id IS NULL THEN 0 ELSE 1 END, coalesce(j.value->>'rating', '') "
            "FROM annotation_item i LEFT JOIN annotation_assignment a ON a.item_id = i.id AND a.rater_id = %s "
            "LEFT JOIN annotation_judgment j ON j.assignment_id = a.id "
            "WHERE i.study_id = %s AND NOT i.is_attention_check",
            [run.pk, now, rater.pk, study.pk],
        )


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
        from ratings.exports.formats import get_format
        from ratings.exports.services import write_export

        target = target.with_suffix("." + get_format(phase).extension)
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


def measure(phase: str, study_id: int, out_dir: str, cap: float, trace: bool = False) -> dict:
    """Run one phase in a child process, which reports its own peak RSS (and Python heap with ``trace``)."""
    command = [sys.executable, __file__, "--phase", phase, "--study", str(study_id), "--out", out_dir]
    if trace:
        command.append("--tracemalloc")
    return phase_figures(command, cap)


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
        result["peak_mb"] = own_peak_mb()
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
    print(f"(bench process peak RSS {own_peak_mb():.0f} MB: wait4's ru_maxrss would give each phase at least this)")
    if engine == "sqlite3":
        for leftover in Path(scratch).iterdir():
            leftover.unlink()
        os.rmdir(scratch)
    else:
        print(f"(outputs left in {scratch}; the bench studies stay in the database)")


if __name__ == "__main__":
    main()
