# SPDX-License-Identifier: GPL-3.0-or-later
"""What the item page's lease heartbeat costs the server, beside what a participant's own requests cost.

    .venv/bin/python bench/bench_lease_heartbeat.py [--raters 200] [--items 400] [--beats 2000]
                                                    [--threads 1,4] [--migrate]

Works on the database ``DATABASE_URL`` names (it must be migrated, or pass
``--migrate``); without it, on a SQLite file in a temporary folder. Everything
it writes (one user, its study, the raters) is deleted at the end.

One open ordinal study with ``--items`` items (quota 3) and ``--raters``
crowdworkers, each holding a lease on their current item. Then, at each thread
count, ``--beats`` calls of each operation spread over the raters:

- ``renew``: ``lease_renew``, what one heartbeat of an open item page does;
- ``resume`` (reference): ``next_assignment`` for a rater who already holds an
  item, the cheapest request a participant's page makes (a reload);
- ``mark_shown`` is not timed: it is one UPDATE either way.

It prints operations per second and p50/p95 latency of each, and from the
heartbeat rate (one per ``FUNNYBONE_LEASE_SECONDS / 3``) how many open item
pages one such process could keep alive while spending a tenth of its time on
heartbeats.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PREFIX = f"bench-lease-{os.getpid()}"


def _setup_django(data_dir: str) -> None:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{data_dir}/bench.sqlite3")
    os.environ.setdefault("FUNNYBONE_DATA_DIR", data_dir)
    os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_hex(16))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _run(operation, enrollments: list, beats: int, threads: int) -> tuple[float, list[float]]:
    from django.db import connection

    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)
    per_thread = beats // threads

    def work(n: int) -> None:
        mine: list[float] = []
        try:
            barrier.wait()
            for k in range(per_thread):
                enrollment = enrollments[(n * per_thread + k) % len(enrollments)]
                started = time.perf_counter()
                operation(enrollment)
                mine.append(time.perf_counter() - started)
        finally:
            connection.close()
            with lock:
                latencies.extend(mine)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    return time.perf_counter() - started, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raters", type=int, default=200)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--beats", type=int, default=2000)
    parser.add_argument("--threads", default="1,4")
    parser.add_argument("--migrate", action="store_true")
    args = parser.parse_args()
    if args.raters > args.items * 3:
        parser.error("--raters must be at most 3 x --items (quota 3), so that every rater holds an item")

    with tempfile.TemporaryDirectory() as data_dir:
        _setup_django(data_dir)
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection

        from annotation.models import Assignment, Rater
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker
        from annotation.services.leases import heartbeat_seconds, lease_renew
        from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state

        if args.migrate or connection.vendor == "sqlite":
            call_command("migrate", verbosity=0)
        owner = get_user_model().objects.create_user(PREFIX)
        try:
            study = study_create(owner=owner, name=PREFIX, task_type="ordinal", quota_per_item=3)
            items_create(
                study=study,
                items=[ItemSpec(external_id=f"i{n}", text=f"Joke {n}") for n in range(args.items)],
            )
            study_set_state(study=study, state=study.State.OPEN)
            enrollments = [enroll_crowdworker(study=study, participant_id=f"{PREFIX}-{n}") for n in range(args.raters)]
            held = {e.pk: next_assignment(enrollment=e).assignment.pk for e in enrollments}
            assert len(held) == args.raters

            operations = {
                "renew": lambda e: lease_renew(enrollment=e, assignment_id=held[e.pk]),
                "resume": lambda e: next_assignment(enrollment=e),
            }
            print(
                f"database: {connection.vendor}; study: {args.items} items, quota 3; "
                f"{args.raters} raters each holding one lease; {args.beats} calls per operation and thread count"
            )
            print(f"{'threads':>7}  {'operation':<10} {'ops/s':>9} {'p50 ms':>8} {'p95 ms':>8}")
            renew_rate = {}
            for threads in [int(t) for t in args.threads.split(",")]:
                for name, operation in operations.items():
                    wall, latencies = _run(operation, enrollments, args.beats, threads)
                    rate = len(latencies) / wall
                    if name == "renew":
                        renew_rate[threads] = rate
                    print(
                        f"{threads:>7}  {name:<10} {rate:>9.0f} {_percentile(latencies, 0.5) * 1000:>8.2f} "
                        f"{_percentile(latencies, 0.95) * 1000:>8.2f}"
                    )
            live = Assignment.objects.filter(study=study, state=Assignment.State.LEASED).count()
            assert live == args.raters, f"{live} leases for {args.raters} raters"
            beat = heartbeat_seconds()
            best = max(renew_rate.values())
            print(
                f"heartbeat every {beat} s (FUNNYBONE_LEASE_SECONDS={settings.FUNNYBONE_LEASE_SECONDS}): "
                f"at {best:.0f} renewals/s, a tenth of this process's time keeps "
                f"{best * beat / 10:.0f} open item pages alive"
            )
        finally:
            Rater.objects.filter(external_id__startswith=PREFIX).delete()
            owner.studies.all().delete()
            owner.delete()


if __name__ == "__main__":
    main()
