"""How long a judge run whose Celery worker was SIGKILLed sits still before another worker carries it on.

A fault server answers every call after 1.5 s. Worker A starts a run of 16
units (concurrency 2); once it has written 3 judgments, idle worker B is
started, and when B is ready A is killed with SIGKILL. Nobody presses Resume
or sends a task: B's own recovery must find the silent run. Printed: seconds
from the kill until B claims one of the run's units (the pick-up), until the
run's next judgment is written, and until the run is done. Between pick-up and
next judgment B waits for the judge's call slots the dead worker held (leased
for the judge's timeout plus a margin, ``judging.limits``).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch> REDIS_URL=redis://127.0.0.1:6379/<db> \\
        .venv/bin/python bench/bench_dead_worker.py [--lease 30] [--kill-delay 0]

The database is migrated and gets one study. Give it a Redis database of your own: it is the broker.
``--lease`` sets FUNNYBONE_JOB_LEASE_SECONDS for the workers (ignored by code
that predates it).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
# The fault server is on loopback, which judges may not call unless allowed (workers inherit this).
os.environ.setdefault("FUNNYBONE_OUTBOUND_ALLOW_NETWORKS", "127.0.0.0/8,::1/128")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from annotation.models import Judgment  # noqa: E402
from judging.models import JudgeRun, JudgeUnit  # noqa: E402
from judging.services.judges import judge_create  # noqa: E402
from judging.services.runs import run_create  # noqa: E402
from judging.testing.fault_server import FaultServer  # noqa: E402
from judging.testing.services import CeleryWorker  # noqa: E402
from tests.conftest import build_study  # noqa: E402

LIMIT = 900


def wait(predicate, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < LIMIT:
        if predicate():
            return time.monotonic()
        time.sleep(0.2)
    raise SystemExit(f"gave up waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lease", type=int, default=None, help="FUNNYBONE_JOB_LEASE_SECONDS for the workers")
    parser.add_argument(
        "--kill-delay",
        type=float,
        default=0.0,
        help="seconds between the rescuer's start (its first look for dead workers) and the kill: the phase of "
        "the death against the rescuer's periodic looks, every half lease",
    )
    parser.add_argument("--items", type=int, default=8, help="items of the study (two units each)")
    args = parser.parse_args()
    broker = os.environ["REDIS_URL"]
    call_command("migrate", verbosity=0)
    owner, _ = get_user_model().objects.get_or_create(username="bench-dead-worker")
    stamp = int(time.time())
    study = build_study(owner, task_type="ordinal", n_items=args.items, name=f"dead worker {stamp}")
    server = FaultServer().start()
    judge = judge_create(
        owner=owner,
        name=f"slow judge {stamp}",
        base_url=server.url("slow:1500"),
        model="fake-model",
        concurrency=2,
        timeout_seconds=10,
        backoff_seconds=0.1,
    )
    run = run_create(study=study, judge=judge, trials=2)  # queued after commit (autocommit here)
    env = {**os.environ, "CELERY_BROKER_URL": broker, "DB_CONN_MAX_AGE": "0"}
    if args.lease is not None:
        env["FUNNYBONE_JOB_LEASE_SECONDS"] = str(args.lease)
    logs = Path(tempfile.mkdtemp(prefix="bench-dead-worker-"))
    judgments = Judgment.objects.filter(rater=judge.rater)
    doomed = CeleryWorker(env=env, log=logs / "doomed.log", name="doomed")
    rescuer = None
    try:
        wait(lambda: judgments.count() >= 3, "some judgments")
        rescuer = CeleryWorker(env=env, log=logs / "rescuer.log", name="rescuer")  # returns once ready
        if JudgeRun.objects.get(pk=run.pk).status != "running":
            raise SystemExit("the run ended before the kill; nothing to measure")
        time.sleep(args.kill_delay)
        if JudgeRun.objects.get(pk=run.pk).status != "running":
            raise SystemExit("the run ended before the kill; nothing to measure (give it more --items)")
        doomed.kill()
        killed_at = time.monotonic()
        units = JudgeUnit.objects.filter(run=run)
        dead = set(units.exclude(claimed_by="").values_list("claimed_by", flat=True))
        picked_at = wait(lambda: units.exclude(claimed_by__in=[*dead, ""]).exists(), "another worker's claim")
        time.sleep(max(0.0, 1.6 - (time.monotonic() - killed_at)))  # in-flight calls of the dead land nowhere
        before = judgments.count()
        resumed_at = wait(lambda: judgments.count() > before, "the next judgment")
        done_at = wait(lambda: not JudgeRun.objects.get(pk=run.pk).is_active, "the run's end")
    finally:
        doomed.kill()
        if rescuer is not None:
            rescuer.stop()
        server.stop()
    status = JudgeRun.objects.get(pk=run.pk).status
    print(
        f"{'lease':>6} {'kill delay':>10} {'kill->pick-up s':>16} {'kill->next judgment s':>22} "
        f"{'kill->run ended s':>18}  status  n"
    )
    print(
        f"{args.lease if args.lease is not None else 'dflt':>6} {args.kill_delay:>10.1f} {picked_at - killed_at:>16.1f} "
        f"{resumed_at - killed_at:>22.1f} {done_at - killed_at:>18.1f}  {status:>6}  {judgments.count()}"
    )


if __name__ == "__main__":
    main()
