# SPDX-License-Identifier: GPL-3.0-or-later
"""Throughput of handing out items and recording answers, at 1, 4 and 16 threads.

    .venv/bin/python bench/bench_assignment.py [--threads 1,4,16] [--submissions 2000]
                                               [--quota 3] [--per-rater 20] [--migrate]

Works on the database ``DATABASE_URL`` names; without it, on a SQLite file in a
temporary folder that is migrated first and deleted afterwards. A named
database must already be migrated (or pass ``--migrate``). Everything the bench
writes there (one user, its studies, their raters) is deleted at the end.

For each thread count and each path it opens a fresh ordinal study with just
enough items for ``--submissions`` answers at ``--quota`` raters per item.
Threads play crowdworkers: each enrols a new rater, answers up to
``--per-rater`` items (``next_assignment`` then ``judgment_submit``), then
enrols another, until the study runs out. It prints submissions per second
(wall time from the start barrier to the last thread) and the p50/p95 latency
of one next-item-plus-answer step, and checks the study afterwards: every item
exactly at its quota, no rater twice on an item.

Two paths are compared in the same run:

- ``skip-locked``: the services as the app uses them (per-item row locks taken
  with SKIP LOCKED, so raters on different items do not wait for each other);
- ``study-lock``: a naive reference defined only here, which locks the whole
  study row for every next-item and every answer, so one request at a time per
  study proceeds.

On SQLite both paths serialise on the database's single writer lock; the
comparison matters on PostgreSQL.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import secrets
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PREFIX = f"bench-assign-{os.getpid()}"


def _setup_django(data_dir: str) -> None:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{data_dir}/bench.sqlite3")
    os.environ.setdefault("FUNNYBONE_DATA_DIR", data_dir)
    os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_hex(16))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def _unapplied_migrations() -> int:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


# -- the two paths -------------------------------------------------------------


class ServicesPath:
    """The app's own services."""

    name = "skip-locked"

    def next(self, enrollment: Any) -> tuple[Any, str]:
        from annotation.services.assignment import next_assignment

        nxt = next_assignment(enrollment=enrollment)
        return nxt.assignment, nxt.reason

    def submit(self, assignment: Any, rater: Any, value: dict) -> bool:
        from annotation.services.judgments import judgment_submit

        return judgment_submit(assignment=assignment, rater=rater, value=value).created


class StudyLockPath:
    """Naive reference: every request locks the study row, then does the same work."""

    name = "study-lock"

    def next(self, enrollment: Any) -> tuple[Any, str]:
        from datetime import timedelta

        from django.conf import settings
        from django.db import transaction
        from django.db.models import F
        from django.utils import timezone

        from annotation.models import Assignment, Item, Study

        with transaction.atomic():
            study = Study.objects.select_for_update().get(pk=enrollment.study_id)
            rater = enrollment.rater
            now = timezone.now()
            mine = Assignment.objects.filter(study=study, rater=rater)
            current = mine.filter(state=Assignment.State.LEASED, lease_expires_at__gt=now).first()
            if current is not None:
                return current, ""
            cap = study.per_rater_cap
            if cap is not None and mine.filter(state=Assignment.State.DONE).count() >= cap:
                return None, "cap_reached"
            # The first item in listed order with a free place that this rater has not seen.
            item_id = (
                Item.objects.filter(study=study, is_attention_check=False, places_taken__lt=study.quota_per_item)
                .exclude(assignments__rater=rater)
                .order_by("places_taken", "position")
                .values_list("pk", flat=True)
                .first()
            )
            if item_id is None:
                return None, "exhausted"
            Item.objects.filter(pk=item_id).update(places_taken=F("places_taken") + 1)
            assignment = Assignment.objects.create(
                study=study,
                item_id=item_id,
                rater=rater,
                sequence=mine.count(),
                leased_at=now,
                lease_expires_at=now + timedelta(seconds=settings.FUNNYBONE_LEASE_SECONDS),
            )
            return assignment, ""

    def submit(self, assignment: Any, rater: Any, value: dict) -> bool:
        from django.db import transaction

        from annotation.models import Assignment, Judgment, Study
        from annotation.services.judgments import clean_value

        value = clean_value(assignment=assignment, value=value)
        with transaction.atomic():
            Study.objects.select_for_update().get(pk=assignment.study_id)
            if Judgment.objects.filter(assignment_id=assignment.pk).exists():
                return False
            Judgment.objects.create(
                assignment=assignment,
                study_id=assignment.study_id,
                item_id=assignment.item_id,
                rater=rater,
                value=value,
            )
            Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.DONE)
            return True


# -- one run -------------------------------------------------------------------


@dataclass
class RunResult:
    path: str
    threads: int
    submissions: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def make_study(owner: Any, *, label: str, n_items: int, quota: int, per_rater: int) -> Any:
    from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state

    study = study_create(
        owner=owner,
        name=f"{PREFIX} {label}",
        task_type="ordinal",
        quota_per_item=quota,
        per_rater_cap=per_rater,
    )
    items_create(
        study=study,
        items=[ItemSpec(external_id=f"item-{i}", prompt=f"Setup {i}", text=f"Response {i}") for i in range(n_items)],
    )
    return study_set_state(study=study, state="open")


def run_once(path: Any, owner: Any, *, threads: int, submissions: int, quota: int, per_rater: int) -> RunResult:
    from django.db import connection

    from annotation.services.enrollment import enroll_crowdworker

    n_items = math.ceil(submissions / quota)
    study = make_study(owner, label=f"{path.name} x{threads}", n_items=n_items, quota=quota, per_rater=per_rater)
    raters = itertools.count()
    raters_lock = threading.Lock()
    start = threading.Barrier(threads + 1)
    result = RunResult(path=path.name, threads=threads, submissions=0, seconds=0.0)
    done_count = [0]

    def crowdworker() -> None:
        latencies: list[float] = []
        submitted = 0
        try:
            start.wait()
            while True:
                with raters_lock:
                    k = next(raters)
                enrollment = enroll_crowdworker(study=study, participant_id=f"{PREFIX}-{study.pk}-{k}")
                answered = 0
                while True:
                    began = time.perf_counter()
                    assignment, _reason = path.next(enrollment)
                    if assignment is None:
                        break
                    if path.submit(assignment, enrollment.rater, {"rating": (k + assignment.item_id) % 4}):
                        answered += 1
                    latencies.append(time.perf_counter() - began)
                submitted += answered
                if answered == 0:  # even a newcomer finds nothing: the study is complete
                    return
        finally:
            with raters_lock:
                result.latencies.extend(latencies)
                done_count[0] += submitted
            connection.close()

    workers = [threading.Thread(target=crowdworker) for _ in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    result.seconds = time.perf_counter() - began
    result.submissions = done_count[0]
    result.problems = audit(study, quota)
    return result


def audit(study: Any, quota: int) -> list[str]:
    from django.db.models import Count

    from annotation.models import Judgment

    problems = []
    per_item = dict(
        Judgment.objects.filter(study=study).values("item").annotate(n=Count("id")).values_list("item", "n")
    )
    n_items = study.items.count()
    wrong = sum(1 for item in study.items.values_list("pk", flat=True) if per_item.get(item, 0) != quota)
    if wrong:
        problems.append(f"{wrong} of {n_items} items not at quota {quota}")
    twice = Judgment.objects.filter(study=study).values("rater", "item").annotate(n=Count("id")).filter(n__gt=1)
    if twice.exists():
        problems.append(f"{twice.count()} rater/item pairs judged twice")
    return problems


def cleanup(owner: Any) -> None:
    from annotation.models import Rater, Study

    Study.objects.filter(owner=owner).delete()
    Rater.objects.filter(external_id__startswith=PREFIX).delete()
    owner.delete()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,4,16", help="comma-separated thread counts")
    parser.add_argument("--submissions", type=int, default=2000, help="answers per run (bounded)")
    parser.add_argument("--quota", type=int, default=3)
    parser.add_argument("--per-rater", type=int, default=20, help="items each simulated rater answers")
    parser.add_argument("--migrate", action="store_true", help="migrate the named database first")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]

    with tempfile.TemporaryDirectory(prefix="fb-bench-") as data_dir:
        named = "DATABASE_URL" in os.environ
        _setup_django(data_dir)
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        db = settings.DATABASES["default"]
        if not named or args.migrate:
            call_command("migrate", verbosity=0)
        elif pending := _unapplied_migrations():
            print(f"The database has {pending} unapplied migration(s); run migrate or pass --migrate.")
            return 2
        vendor = "postgresql" if db["ENGINE"].endswith("postgresql") else "sqlite"
        print(f"database: {vendor} ({Path(str(db['NAME'])).name}), {os.cpu_count()} CPUs")
        print(f"per run: {args.submissions} answers wanted, quota {args.quota}, {args.per_rater} items per rater")
        print(
            f"{'path':<12} {'threads':>7} {'answers':>8} {'seconds':>8} {'answers/s':>10} {'p50 ms':>8} {'p95 ms':>8}  audit"
        )

        owner = get_user_model().objects.create(username=PREFIX)
        try:
            for threads in thread_counts:
                for path in (ServicesPath(), StudyLockPath()):
                    r = run_once(
                        path,
                        owner,
                        threads=threads,
                        submissions=args.submissions,
                        quota=args.quota,
                        per_rater=args.per_rater,
                    )
                    print(
                        f"{r.path:<12} {r.threads:>7} {r.submissions:>8} {r.seconds:>8.2f} "
                        f"{r.submissions / r.seconds:>10.1f} {percentile(r.latencies, 50) * 1000:>8.1f} "
                        f"{percentile(r.latencies, 95) * 1000:>8.1f}  {'; '.join(r.problems) or 'ok'}",
                        flush=True,
                    )
        finally:
            cleanup(owner)
    return 0


if __name__ == "__main__":
    sys.exit(main())
