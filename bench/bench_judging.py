"""Judge-run throughput against a local endpoint with a fixed artificial latency.

    .venv/bin/python bench/bench_judging.py [--latency-ms 200] [--concurrency 1 4 16 64] [--seconds 4 | --items 2000]
        [--redis-url URL] [--worker BROKER_URL [--worker-processes N]] [--repeat N]

An OpenAI-compatible fake server on loopback (``judging.testing.fault_server``,
in a process of its own so its threads do not compete with the run's for the
interpreter) answers every request after a fixed delay. A run over ``--items``
items (or enough to keep each concurrency level busy for about ``--seconds``)
is worked in this process (the same code a Celery task runs: claims, thread
pool, parsing, judgment writes), and the achieved calls per second are printed
beside the endpoint's theoretical capacity (concurrency / latency) and as a
fraction of it, with our overhead per judgment: the wall time beyond what the
endpoint's latency alone explains, spread over the judgments. Beside them, the
reference measured in the same run: the calls per second the same HTTP client
gets from the same endpoint at the same concurrency with no run around it (no
database), and the run's rate as a share of that.

Uses a throw-away SQLite database unless DATABASE_URL is set (then it must
name a database this benchmark may fill and empty). Prints figures; asserts
nothing.

``--redis-url URL`` runs every level twice: with the call limits held in this
process (LocMem cache, one worker) and with them held in Redis (shared by
every worker), to show what the shared limits cost.

``--worker BROKER_URL`` adds a row per level worked by a real Celery worker
(solo pool, its own process, PostgreSQL and this Redis broker), timed from the
run's start to its end as the worker recorded them; its "of bare" column is the
ratio to the bare client measured at the same level in the same run.
``--worker-processes N`` makes that worker a prefork pool of N processes (a run
of 48 or more calls in flight is shared over them, ``judging.services.runs``),
and adds the reference "bare ×N": the bare client in N processes at once, each
with its part of the concurrency (the machine's ceiling for N processes).

``--repeat N`` measures every level N times (each row printed) and ends with
the median of each row's ratio to the bare client of its own repetition.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(workdir: Path) -> None:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir / 'bench.sqlite3'}")
    os.environ.setdefault("FUNNYBONE_DATA_DIR", str(workdir))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # The fault server listens on loopback, which judges may call only when allowed (judging.outbound).
    os.environ.setdefault("FUNNYBONE_OUTBOUND_ALLOW_NETWORKS", "127.0.0.0/8,::1/128")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


class EndpointProcess:
    """The fault server in a process of its own; ``url(step)`` is a fresh base URL answering with that step."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "judging.testing.fault_server"], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        first = self.process.stdout.readline().strip()  # http://127.0.0.1:PORT/s/ok/n1/v1
        self.root = first.split("/s/")[0]
        self.n = 1

    def url(self, step: str) -> str:
        self.n += 1
        return f"{self.root}/s/{step}/n{self.n}/v1"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def bench(
    concurrency: int, latency_ms: int, seconds: float, server, owner, limits: str = "", items: int = 0, worker=None
) -> dict:
    from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
    from judging.selectors import run_progress
    from judging.services.judges import judge_create
    from judging.services.runs import process_run, run_create

    n_items = items or max(concurrency, int(seconds * concurrency * 1000 / latency_ms))
    study = study_create(owner=owner, name=f"bench c{concurrency}", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"b{i}", text=f"Joke number {i}.") for i in range(n_items)])
    study_set_state(study=study, state="open")
    judge = judge_create(
        owner=owner,
        name=f"bench judge c{concurrency} {limits} {time.time_ns()}",
        base_url=server.url(f"slow:{latency_ms}"),
        model="fake",
        concurrency=concurrency,
        timeout_seconds=30,
    )
    run = run_create(study=study, judge=judge, enqueue=False)
    if worker is None:
        started = time.perf_counter()
        process_run(run_id=run.pk)
        wall = time.perf_counter() - started
        run.refresh_from_db()
    else:
        run = worker.run(run)
        # From the worker's start on the run to its end: the worker's own clock, without the broker's delivery.
        wall = (run.finished_at - run.started_at).total_seconds()
    progress = run_progress(run=run)
    # How the units were shared between the processes that drove the run.
    drivers = Counter(run.units.values_list("claimed_by", flat=True))
    latency = latency_ms / 1000
    ideal = math.ceil(n_items / concurrency) * latency
    return {
        "limits": limits,
        "concurrency": concurrency,
        "judgments": progress.judged,
        "calls": progress.calls,
        "wall_s": wall,
        "rate": progress.calls / wall,
        "capacity": concurrency / latency,
        "overhead_ms": max(0.0, wall - ideal) / n_items * 1000,
        "drivers": "+".join(str(n) for n in sorted(drivers.values(), reverse=True)),
    }


class WorkerProcess:
    """A real Celery worker (``judging.testing.services.CeleryWorker``, solo pool) on this benchmark's database
    and a Redis broker; ``run(run)`` sends the run's task and waits for the run to end."""

    def __init__(self, broker_url: str, workdir: Path, processes: int = 1) -> None:
        from django.db import connection

        from judging.testing.services import CeleryWorker

        db = connection.settings_dict
        if not db["ENGINE"].endswith("postgresql"):
            raise SystemExit("--worker needs PostgreSQL (DATABASE_URL) so the worker process sees the runs")
        env = dict(os.environ)
        env.update(CELERY_BROKER_URL=broker_url, LOG_LEVEL="WARNING")
        self.broker_url = broker_url
        options = CeleryWorker.BARE
        if processes > 1:
            options = (f"--concurrency={processes}", *CeleryWorker.BARE[1:])
        self.worker = CeleryWorker(env=env, log=workdir / "worker.log", name="bench", options=options)

    def run(self, run):
        from celery import Celery

        from judging.models import JudgeRun

        app = Celery("bench", broker=self.broker_url, set_as_current=False)
        app.send_task("judging.tasks.judge_run_task", args=[run.pk])
        while JudgeRun.objects.get(pk=run.pk).is_active:
            time.sleep(0.2)
        return JudgeRun.objects.get(pk=run.pk)

    def stop(self) -> None:
        self.worker.stop()


def bare_client(concurrency: int, latency_ms: int, n_calls: int, server) -> float:
    """Calls per second the same HTTP client (``ChatBackend``) gets from the endpoint with no run around
    it: no database, no claims, no parsing; the machine's ceiling for the run at this concurrency."""
    from concurrent.futures import ThreadPoolExecutor

    from judging.backends.chat import ChatBackend

    backend = ChatBackend(
        base_url=server.url(f"slow:{latency_ms}"),
        api_key="unused",
        model="fake",
        temperature=0.1,
        max_tokens=64,
        timeout=30,
        structured_output=False,
        concurrency=concurrency,
    )
    messages = [{"role": "user", "content": "Rate this joke with a single digit from 0 to 3: Joke number {i}."}]
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for _ in pool.map(lambda i: backend.complete(messages, None), range(n_calls)):
                pass
        return n_calls / (time.perf_counter() - started)
    finally:
        backend.close()


def bare_client_processes(concurrency: int, latency_ms: int, n_calls: int, server, processes: int) -> float:
    """The bare client in ``processes`` forked processes at once, each with its part of the concurrency and
    of the calls: what a worker of that many processes could reach with no run around it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    ready, results = context.Barrier(processes + 1), context.Queue()

    def one(share: int, calls: int) -> None:
        ready.wait()
        started = time.perf_counter()
        bare_client(share, latency_ms, calls, server)
        results.put((started, time.perf_counter()))

    workers = [
        context.Process(target=one, args=(max(1, concurrency // processes), n_calls // processes))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    ready.wait()
    spans = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join()
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return (n_calls // processes) * processes / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--seconds", type=float, default=4.0, help="Target run length per level.")
    parser.add_argument("--items", type=int, default=0, help="Items per run (instead of --seconds).")
    parser.add_argument("--redis-url", help="Also run each level with the call limits shared through this Redis.")
    parser.add_argument(
        "--worker",
        metavar="BROKER_URL",
        help="Also run each level through a real Celery worker on this Redis broker (needs PostgreSQL).",
    )
    parser.add_argument(
        "--worker-processes", type=int, default=1, help="The worker's prefork processes (default: one, solo pool)."
    )
    parser.add_argument("--repeat", type=int, default=1, help="Measure each level this many times; print medians.")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fb-bench-") as tmp:
        setup_django(Path(tmp))
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.test import override_settings

        import judging.services.judging_job  # noqa: F401 - import the SDK before the clock starts

        server = EndpointProcess()
        owner = get_user_model().objects.create_user(f"bench-{time.time_ns()}")
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(f"endpoint latency {args.latency_ms} ms, database {engine}, {os.cpu_count()} CPUs")
        print(
            f"{'limits':>7} {'concurrency':>11} {'judgments':>9} {'wall s':>7} {'calls/s':>8} {'capacity/s':>10} "
            f"{'fraction':>8} {'overhead ms/judgment':>21} {'bare client/s':>13} {'of bare':>7}"
        )
        caches = {"process": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        if args.redis_url:
            caches["redis"] = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": args.redis_url}
        elif "redis" in settings.CACHES["default"]["BACKEND"]:
            caches = {"redis": settings.CACHES["default"]}
        worker = WorkerProcess(args.worker, Path(tmp), args.worker_processes) if args.worker else None
        ratios: dict[tuple[str, int], list[float]] = {}

        def show(row: dict, bare: float, reference: str = "") -> None:
            _print_row(row, bare, reference)
            ratios.setdefault((row["limits"] + reference, row["concurrency"]), []).append(row["rate"] / bare)

        try:
            for _ in range(args.repeat):
                for concurrency in args.concurrency:
                    for limits, cache in caches.items():
                        with override_settings(CACHES={"default": cache}):
                            row = bench(concurrency, args.latency_ms, args.seconds, server, owner, limits, args.items)
                        bare = bare_client(concurrency, args.latency_ms, row["calls"], server)
                        show(row, bare)
                    if worker is not None:
                        row = bench(
                            concurrency, args.latency_ms, args.seconds, server, owner, "worker", args.items, worker
                        )
                        show(row, bare)
                        if args.worker_processes > 1:
                            processes = args.worker_processes
                            bare_n = bare_client_processes(
                                concurrency, args.latency_ms, row["calls"], server, processes
                            )
                            show(row, bare_n, f" bare x{processes}")
            if args.repeat > 1:
                print(f"median over {args.repeat} repetitions of the rate as a share of the bare client:")
                for (limits, concurrency), shares in ratios.items():
                    print(f"{limits:>17} {concurrency:>11} {statistics.median(shares):>7.1%}  ({_spread(shares)})")
        finally:
            server.stop()
            if worker is not None:
                worker.stop()


def _spread(shares: list[float]) -> str:
    return " ".join(f"{share:.1%}" for share in shares)


def _print_row(row: dict, bare: float, reference: str = "") -> None:
    print(
        f"{row['limits']:>7} {row['concurrency']:>11} {row['judgments']:>9} {row['wall_s']:>7.2f} "
        f"{row['rate']:>8.1f} {row['capacity']:>10.1f} {row['rate'] / row['capacity']:>8.1%} "
        f"{row['overhead_ms']:>21.2f} {bare:>13.1f} {row['rate'] / bare:>7.1%}"
        f"  load {os.getloadavg()[0]:.1f}  units {row['drivers']}{reference}",
        flush=True,
    )


if __name__ == "__main__":
    main()
