# SPDX-License-Identifier: GPL-3.0-or-later
"""What a stored report's fingerprint costs on a big study, beside reading the study row.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_fingerprint.py [--judgments 1000000] [--study ID]

Every page of a stored report (analysis, alignment, judge comparison,
protocol report, tournament) reads ``ratings.cached.study_inputs`` on each
view and poll. The bench builds one ordinal study of ``--judgments``
judgments straight into the database (``bench/bench_export.build``; the
database must be a scratch one: it is migrated and a study added) and prints,
as medians of ``--repeat`` runs in this process:

* ``study row``       the reference: the study read by primary key;
* ``revision``        the part that sees edits in place: the study's
                      ``inputs_revision`` (``annotation.study_changes``);
* ``fingerprint``     the whole ``study_inputs`` (counts per status, newest
                      ids, excluded raters and the revision);
* ``linked``          the same over the study and its linked studies;
* ``edit counted``    what a writer adds to its transaction to count an edit
                      (``study_inputs_changed``, rolled back).

It also checks that an edit of a judgment's value changes the fingerprint.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm: the first run pays for plans and cold pages
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--raters", type=int, default=8)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--study", type=int, help="reuse a study this bench (or bench_pages) built before")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Item, Judgment, Study
    from annotation.study_changes import study_inputs_changed
    from ratings.cached import study_inputs

    call_command("migrate", verbosity=0)
    from bench.bench_export import built_or_reused

    study_pk = built_or_reused(args.study, args.judgments, args.raters, args.judges)
    study = Study.objects.get(pk=study_pk)
    n_judgments = Judgment.objects.filter(study=study).count()
    n_items = Item.objects.filter(study=study).count()
    print(f"study {study.pk}: {n_judgments:,} judgments, {n_items:,} items, database {connection.vendor}")
    print(f"load average before: {os.getloadavg()}")

    def edit_counted() -> None:
        with transaction.atomic():
            study_inputs_changed([study.pk])
            transaction.set_rollback(True)

    rows = [
        ("study row (reference)", lambda: Study.objects.get(pk=study.pk)),
        ("revision", lambda: list(Study.objects.filter(pk=study.pk).values_list("pk", "inputs_revision"))),
        ("fingerprint", lambda: study_inputs(study=study)),
        ("fingerprint, linked", lambda: study_inputs(study=study, linked=True)),
        ("edit counted (UPDATE)", edit_counted),
    ]
    print(f"{'':24} {'median ms':>10}   (of {args.repeat})")
    for name, fn in rows:
        print(f"{name:24} {median_ms(fn, args.repeat):10.2f}")

    with transaction.atomic():
        before = study_inputs(study=study)
        edited = Judgment.objects.filter(study=study).order_by("pk").first()
        edited.value = {"rating": 3 - edited.value["rating"]}
        edited.save(update_fields=["value"])
        after = study_inputs(study=study)
        transaction.set_rollback(True)
    changed = sorted(k for k in before if before[k] != after[k])
    print(f"an edited judgment value changes the fingerprint's: {', '.join(changed) or 'nothing (wrong!)'}")
    print(f"load average after: {os.getloadavg()}")
    return 0 if changed else 1


if __name__ == "__main__":
    raise SystemExit(main())
