# SPDX-License-Identifier: GPL-3.0-or-later
"""Load the crowdworker path under gunicorn on PostgreSQL, then audit the database.

    .venv/bin/python bench/load.py [--concurrency 1,8,32,64] [--submissions 300]
    .venv/bin/python bench/load.py --items 20000 --quota 1 --submissions 1000 --bare --sizes 500,100000

By default it creates a scratch database ``fb_load_<pid>`` on the PostgreSQL
server that ``--database-url`` (or ``DATABASE_URL``; default
``postgres://postgres@127.0.0.1:5432/postgres``) points at, migrates it,
starts ``gunicorn funnybone.wsgi`` (gthread, ``--workers`` x ``--threads``) on a
free loopback port, and drops the database and stops the server at the end.
``--url`` targets a server that is already running instead; ``--database-url``
must then name the database that server uses (a study is added to it).

For each concurrency C it opens a new ordinal (0-3) study with a quota of
``--quota`` raters per item and just enough items for ``--submissions``
answers, and C simulated crowdworkers (``load_client``) take it at once
through the real HTTP path: entry link with Prolific parameters, consent,
instructions, then item after item until the study runs out and sends them
to the completion page. It prints submissions per second and the p50/p95/p99
latency of each request type, then audits the study (``load_audit``):
judgments stored against answers the clients saw confirmed, duplicates and
quota violations. ``--queries`` also counts the SQL queries of each request
type for one rater, in-process with Django's test client.

``--items N`` gives every level's study N items instead. ``--bare`` serves the
bare reference (``bench/bare.py``: the same writes in a minimal view) from
the same server and runs each level against it too, with the same client and
a fresh study of the same size, and prints our answers per second as a share
of its. ``--sizes 500,100000`` first times single answers in-process (Django's
test client, one rater, quota 1) in studies of those sizes and prints the
per-answer cost of each against the first.

Traffic goes to loopback only; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_client import REQUEST_TYPES, Plan, RaterLog, Timings, percentile, run_raters  # noqa: E402
from bench.load_client import Study as ClientStudy  # noqa: E402
from bench.load_server import create_database, drop_database, gunicorn, migrate, with_database  # noqa: E402

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"


def allocation_policies() -> list[str]:
    """The registered allocation policies, uniform first (Django must be set up)."""
    import ratings.allocation  # noqa: F401 - registers active_pairs
    from annotation.allocation import POLICIES, UNIFORM

    return [UNIFORM, *(name for name in POLICIES if name != UNIFORM)]


def policy_settings(name: str) -> dict[str, object]:
    """The study settings that choose the policy: the policy, and the task type it fits (a pairwise study
    for a pairwise policy; else the ordinal 0-3 study)."""
    from annotation.allocation import get_policy
    from annotation.task_types import get_task_type

    ordinal = get_task_type("ordinal")
    task_type = "ordinal" if get_policy(name).applies_to(ordinal, ordinal.config({})) else "pairwise"
    return {"allocation_policy": name, "task_type": task_type}


def item_orders() -> list[str]:
    """The study's item orders, the model's default first (Django must be set up)."""
    from annotation.models import Study

    default = Study._meta.get_field("item_order").default
    return [default, *(order for order in Study.ItemOrder.values if order != default)]


SHOWN = ("entry", "item", "submit")


def _django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    os.environ.setdefault("SECRET_KEY", "load-harness-" + os.urandom(16).hex())
    import django

    django.setup()


def _pairs(n_items: int) -> list[tuple[int, int]]:
    """The first ``n_items`` pairs of a round robin of just enough contestants."""
    contestants = 2
    while contestants * (contestants - 1) // 2 < n_items:
        contestants += 1
    return [(a, b) for a in range(contestants) for b in range(a + 1, contestants)][:n_items]


def make_study(*, label: str, n_items: int, quota: int, item_order: str = "", task_type: str = "ordinal", **settings):
    """An open study with invented items, owned by the bench user: ordinal 0-3 items, or for
    ``task_type="pairwise"`` pairs of invented contestants' jokes (the model's default order unless told;
    ``settings``: more study settings, e.g. a policy's)."""
    from django.contrib.auth import get_user_model

    from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state

    owner, _ = get_user_model().objects.get_or_create(username="load-bench")
    options = {"item_order": item_order, **settings} if item_order else settings
    study = study_create(owner=owner, name=f"Load {label}", task_type=task_type, quota_per_item=quota, **options)
    if task_type == "pairwise":
        specs = [
            ItemSpec(
                external_id=f"pair-{a}-{b}",
                text="Which is funnier?",
                candidates=[
                    CandidateSpec(
                        key=f"c{j}", text=f"A joke by comic {who}.", provenance={"contestant": f"comic-{who}"}
                    )
                    for j, who in enumerate((a, b))
                ],
            )
            for a, b in _pairs(n_items)
        ]
    else:
        specs = [
            ItemSpec(external_id=f"joke-{i}", prompt=f"Setup number {i}?", text=f"Punchline number {i}.")
            for i in range(n_items)
        ]
    items_create(study=study, items=specs)
    return study_set_state(study=study, state="open")


def client_study(study, base_url: str, prefix: str = "/s") -> ClientStudy:
    from annotation.task_types import get_task_type

    if study.task_type == "pairwise":  # the position of the candidate chosen
        return ClientStudy(
            base_url=base_url, entry_token=study.entry_token, points=[0, 1], prefix=prefix, field="choice"
        )
    config = get_task_type(study.task_type).config(study.config)
    return ClientStudy(base_url=base_url, entry_token=study.entry_token, points=list(config["points"]), prefix=prefix)


def _cpu_seconds(pid: int) -> float:
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(server, database: str) -> dict[str, dict[int, float]]:
    """CPU seconds used so far, per process: web workers, this database's backends, this client (Linux /proc)."""
    backends = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if command.startswith("postgres: ") and f" {database} " in command:
                backends[int(entry.name)] = _cpu_seconds(int(entry.name))
    times = os.times()
    snapshot = {"db": backends, "client": {os.getpid(): times.user + times.system}}
    if server is not None:  # a server someone else runs: its processes are not ours to read
        snapshot["web"] = {pid: _cpu_seconds(pid) for pid in server.worker_pids()}
    return snapshot


def cpu_used(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds between two snapshots; a process that exited in between is not counted (a low bound)."""
    return {part: sum(seconds - before[part].get(pid, 0.0) for pid, seconds in after[part].items()) for part in after}


def run_level(
    *,
    base_url: str,
    concurrency: int,
    submissions: int,
    quota: int,
    mode: str,
    time_limit: float,
    snapshot,
    n_items: int | None = None,
    prefix: str = "/s",
    item_order: str = "",
    settings: dict | None = None,
):
    from bench.load_audit import audit_study

    # Enough items for the answers asked for (one rater can answer each item once), unless told.
    n_items = n_items or max(1, math.ceil(submissions / min(concurrency, quota)))
    label = "bare" if prefix != "/s" else (item_order or "app")
    study = make_study(
        label=f"{label} C={concurrency} {time.time():.0f}",
        n_items=n_items,
        quota=quota,
        item_order=item_order,
        **(settings or {}),
    )
    participants = [f"load-{os.getpid()}-{label}-c{concurrency}-r{i}" for i in range(concurrency)]
    # Each rater stops at its share of the answers asked for, so a big study is not taken to the end.
    share = math.ceil(submissions / concurrency) if n_items * quota > submissions else 10_000
    plan = Plan(mode=mode, deadline=time.monotonic() + time_limit, max_submissions=share)
    before = snapshot()
    logs, timings, wall = run_raters(client_study(study, base_url, prefix), participants, plan)
    after = snapshot()
    cpu = cpu_used(before, after)
    return logs, timings, wall, cpu, audit_study(study_id=study.pk, logs=logs)


def _ms(values: list[float]) -> str:
    if not values:
        return f"{'-':>17}"
    return "{:>5.0f}/{:>5.0f}/{:>5.0f}".format(*(1000 * percentile(values, q) for q in (50, 95, 99)))


def print_header() -> None:
    cells = "".join(f"  {kind + ' p50/95/99 ms':>19}" for kind in SHOWN)
    print(f"{'C':>3}  {'run':>16}  {'submits':>7}  {'subm/s':>7}{cells}  {'errors':>6}  raters done")


def print_row(concurrency: int, logs: list[RaterLog], timings: Timings, wall: float, *, label: str = "") -> float:
    """Print one level's row; returns its confirmed answers per second."""
    confirmed = sum(s.outcome == "confirmed" for log in logs for s in log.submissions)
    errors = sum(log.server_errors + log.lost_responses + bool(log.error) for log in logs)
    cells = "".join(f"  {_ms(timings.samples[kind]):>19}" for kind in SHOWN)
    finished = sum(log.finished for log in logs)
    rate = confirmed / wall
    print(
        f"{concurrency:>3}  {label or 'app':>16}  {confirmed:>7}  {rate:>7.1f}{cells}  {errors:>6}  "
        f"{finished}/{len(logs)}"
    )
    return rate


def print_comparison(
    concurrency: int, results: dict[str, list[tuple[list[RaterLog], Timings, float]]], reference: str
) -> None:
    """Each run's answers/s (all its rounds: answers over wall time) and submit p99, against the reference's."""

    def figures(rounds: list[tuple[list[RaterLog], Timings, float]]) -> tuple[float, float]:
        confirmed = sum(s.outcome == "confirmed" for logs, _t, _w in rounds for log in logs for s in log.submissions)
        wall = sum(w for _l, _t, w in rounds)
        submits = [v for _l, timings, _w in rounds for v in timings.samples["submit"]]
        return confirmed / wall if wall else 0.0, 1000 * percentile(submits, 99) if submits else 0.0

    base_rate, base_p99 = figures(results[reference])
    for label, rounds in results.items():
        rate, p99 = figures(rounds)
        share = f"{100 * rate / base_rate:.0f}%" if base_rate else "-"
        ratio = f"{p99 / base_p99:.2f}x" if base_p99 else "-"
        print(
            f"     C={concurrency} {label}: {rate:.1f} answers/s ({share} of {reference}), "
            f"submit p99 {p99:.0f} ms ({ratio})"
        )
    bare_rate = figures(results["bare"])[0] if "bare" in results else 0.0
    for label, rounds in results.items():
        if bare_rate and label != "bare":
            print(f"     C={concurrency}: {label} at {100 * figures(rounds)[0] / bare_rate:.0f}% of bare")


def print_other_timings(timings: Timings, cpu: dict[str, float], logs: list[RaterLog]) -> None:
    others = [kind for kind in REQUEST_TYPES if kind not in SHOWN and timings.samples[kind]]
    print("     " + "; ".join(f"{kind} {_ms(timings.samples[kind]).strip()} ms" for kind in others))
    answers = max(1, sum(len(log.submissions) for log in logs))
    print(
        "     CPU per answer (entry included): "
        + ", ".join(f"{part} {1000 * cpu[part] / answers:.1f} ms" for part in ("web", "db", "client") if part in cpu)
    )


def count_queries() -> None:
    """SQL queries per request type for one rater through a small study, in-process."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.load_client import ASSIGNMENT_FIELD, rating_for

    study = make_study(label=f"queries {time.time():.0f}", n_items=200, quota=3)
    client = Client(HTTP_HOST="127.0.0.1")
    counts: dict[str, list[int]] = {}

    def measure(kind: str, method: str, path: str, data=None, **kwargs):
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(path, data, **kwargs)
        counts.setdefault(kind, []).append(len(captured))
        return response

    base = f"/s/{study.entry_token}/"
    measure("entry", "get", base, {"PROLIFIC_PID": f"queries-{os.getpid()}", "STUDY_ID": "q", "SESSION_ID": "q"})
    measure("consent", "post", base + "consent/", {"decision": "agree"})
    measure("instructions", "post", base + "instructions/", {})
    page = measure("item GET", "get", base + "item/")
    for _ in range(10):
        assignment_id = int(ASSIGNMENT_FIELD.search(page.content.decode()).group(1))
        rating = rating_for("queries", assignment_id, [0, 1, 2, 3])
        page = measure(
            "submit POST (htmx)",
            "post",
            base + "item/",
            {"assignment": assignment_id, "rating": rating},
            headers={"HX-Request": "true"},
        )
    print(
        "queries per request (one rater, 200-item study): "
        + "; ".join(f"{kind} {min(n)}" + (f"-{max(n)}" if max(n) != min(n) else "") for kind, n in counts.items())
    )


def per_answer_cost(sizes: list[int], database: str, answers: int = 150) -> None:
    """Time single htmx answers in-process (one rater, quota 1) in studies of each size; print ms per answer.

    On a shared machine the wall time moves with everyone else's load, so the CPU
    spent per answer is printed too: this process (Django, the view, the ORM) and
    this database's PostgreSQL backends, read from /proc.
    """
    from django.test import Client

    from bench.load_client import ASSIGNMENT_FIELD, percentile, rating_for

    print(
        f"per-answer cost in-process (one rater, quota 1, htmx answer = store + lease + render next; {answers} answers):"
    )
    first = None
    for size in sizes:
        built = time.perf_counter()
        study = make_study(label=f"size {size} {time.time():.0f}", n_items=size, quota=1)
        built = time.perf_counter() - built
        client = Client(HTTP_HOST="127.0.0.1")
        base = f"/s/{study.entry_token}/"
        client.get(base, {"PROLIFIC_PID": f"size-{os.getpid()}-{size}", "STUDY_ID": "s", "SESSION_ID": "s"})
        client.post(base + "consent/", {"decision": "agree"})
        client.post(base + "instructions/", {})
        page = client.get(base + "item/")
        times = []
        for n in range(answers + 10):
            if n == 10:  # the first answers warm the caches
                before = cpu_snapshot(None, database)
            assignment_id = int(ASSIGNMENT_FIELD.search(page.content.decode()).group(1))
            started = time.perf_counter()
            page = client.post(
                base + "item/",
                {"assignment": assignment_id, "rating": rating_for("size", assignment_id, [0, 1, 2, 3])},
                headers={"HX-Request": "true"},
            )
            if n >= 10:
                times.append(time.perf_counter() - started)
        cpu = cpu_used(before, cpu_snapshot(None, database))
        cpu_ms = 1000 * (cpu["client"] + cpu["db"]) / answers
        p50 = 1000 * percentile(times, 50)
        first = first or (p50, cpu_ms)
        print(
            f"  {size:>7} items: wall p50 {p50:.1f} ms ({p50 / first[0]:.2f}x the first size), "
            f"CPU {cpu_ms:.1f} ms = Django {1000 * cpu['client'] / answers:.1f} + PostgreSQL "
            f"{1000 * cpu['db'] / answers:.1f} ({cpu_ms / first[1]:.2f}x); study built in {built:.0f} s"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,8,32,64", help="comma-separated rater counts")
    parser.add_argument("--submissions", type=int, default=300, help="answers per level (bounded count)")
    parser.add_argument("--quota", type=int, default=3, help="raters per item")
    parser.add_argument("--mode", choices=("htmx", "form"), default="htmx", help="answer as htmx or plain forms")
    parser.add_argument("--time-limit", type=float, default=180, help="seconds per level before raters stop")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--conn-max-age", type=int, default=None, help="DB_CONN_MAX_AGE for the server")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    parser.add_argument("--url", help="target this running server instead of starting one (loopback only)")
    parser.add_argument("--queries", action="store_true", help="also count SQL queries per request type")
    parser.add_argument("--keep-database", action="store_true", help="do not drop the scratch database")
    parser.add_argument("--items", type=int, default=None, help="items per study (default: just enough)")
    parser.add_argument("--bare", action="store_true", help="also run each level against the bare reference")
    parser.add_argument("--sizes", default="", help="comma-separated study sizes for the in-process per-answer cost")
    parser.add_argument(
        "--warmup",
        type=int,
        default=100,
        help="answers sent to each path at each level before it is measured, not counted (0: measure a cold server)",
    )
    parser.add_argument(
        "--orders",
        default="",
        help="comma-separated item orders to measure at each level (random_per_rater, as_listed, shared_random),"
        " the first the reference the others are compared with; default: the study's default order",
    )
    parser.add_argument(
        "--policies",
        default="uniform",
        help="comma-separated allocation policies (uniform, top_k, precision, active_pairs: any registered one;"
        " a pairwise policy gets a pairwise study of the same size), each measured in each of --orders",
    )
    parser.add_argument("--database-prefix", default="fb_load", help="the scratch database is named <prefix>_<pid>")
    parser.add_argument("--rounds", type=int, default=1, help="times each order is measured per level, in turn")
    args = parser.parse_args(argv)
    policies = [name.strip() for name in args.policies.split(",") if name.strip()]
    if not policies or args.rounds < 1:
        parser.error("give at least one policy and one round")
    if args.bare and args.url:
        parser.error("--bare starts its own server: leave out --url")
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if not args.database_url.startswith("postgres"):
        parser.error("the load harness runs on PostgreSQL: give --database-url postgres://...")

    scratch = None if args.url else f"{args.database_prefix}_{os.getpid()}"
    # Django is set up before the scratch database exists (setting up connects to nothing),
    # so an unknown order is refused before anything is created.
    _django(with_database(args.database_url, scratch) if scratch else args.database_url)
    known_policies = allocation_policies()
    for name in policies:
        if name not in known_policies:
            parser.error(f"--policies: unknown allocation policy {name!r}; known: {', '.join(known_policies)}")
    known = item_orders()
    orders = [name.strip() for name in args.orders.split(",") if name.strip()] or known[:1]
    for name in orders:
        if name not in known:
            parser.error(f"--orders: unknown item order {name!r}; known: {', '.join(known)}")
    database_url = create_database(args.database_url, scratch) if scratch else args.database_url
    failed = False
    try:
        if scratch:
            migrate(database_url)
        database_name = database_url.split("?", 1)[0].rsplit("/", 1)[-1]
        extra_env = {} if args.conn_max_age is None else {"DB_CONN_MAX_AGE": str(args.conn_max_age)}
        with tempfile.TemporaryDirectory(prefix="fb-load-") as tmp:
            server = (
                gunicorn(
                    database_url,
                    log=Path(tmp) / "gunicorn.log",
                    workers=args.workers,
                    threads=args.threads,
                    extra_env=extra_env,
                    settings_module="bench.bare_settings" if args.bare else "funnybone.settings",
                )
                if not args.url
                else None
            )
            with server or _Target(args.url) as running:
                where = f"gunicorn -w {args.workers} -k gthread --threads {args.threads}" if server else args.url
                size = f"{args.items} items" if args.items else "just enough items"
                print(
                    f"Funnybone load: {where}, PostgreSQL {database_url.rsplit('/', 1)[-1]}, mode {args.mode}, "
                    f"{args.submissions} answers per level after {args.warmup} unmeasured, {size}, quota {args.quota}, "
                    f"{os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at start)"
                )
                if args.queries:
                    count_queries()
                if args.sizes:
                    per_answer_cost([int(n) for n in args.sizes.split(",") if n.strip()], database_name)
                audits = []
                print_header()
                # (label, path, item order, the policy's study settings); the first is the reference.
                runs = [
                    (f"{order}/{policy}" if len(policies) > 1 else order, "/s", order, policy_settings(policy))
                    for order in orders
                    for policy in policies
                ]
                if args.bare:
                    runs.append(("bare", "/bare", "", {}))
                reference = runs[0][0]
                for concurrency in levels:
                    results: dict[str, list[tuple[list[RaterLog], Timings, float]]] = {label: [] for label, *_ in runs}
                    for round_ in range(args.rounds):
                        # Every order in turn, round after round: they share the machine's noise.
                        for label, prefix, order, settings in runs:
                            level = partial(
                                run_level,
                                base_url=running.url,
                                concurrency=concurrency,
                                quota=args.quota,
                                mode=args.mode,
                                time_limit=args.time_limit,
                                snapshot=lambda: cpu_snapshot(running if server else None, database_name),
                                prefix=prefix,
                                item_order=order,
                                settings=settings,
                            )
                            if args.warmup and round_ == 0:
                                # Connections opened, code and templates loaded: the steady state is measured.
                                *_, warm_audit = level(submissions=args.warmup, n_items=None)
                                audits.append((f"{label} C={concurrency} warm-up", warm_audit))
                            logs, timings, wall, cpu, audit = level(submissions=args.submissions, n_items=args.items)
                            print_row(concurrency, logs, timings, wall, label=label)
                            print_other_timings(timings, cpu, logs)
                            for log in logs:
                                if log.error:
                                    print(f"     {log.participant} stopped: {log.error}")
                            audits.append((f"{label} C={concurrency} round {round_ + 1}", audit))
                            results[label].append((logs, timings, wall))
                    print_comparison(concurrency, results, reference)
                for level, audit in audits:
                    print(f"{level}: " + "\n".join(audit.lines()))
                    failed = failed or not audit.ok
    finally:
        if scratch and not args.keep_database:
            from django.db import connections

            connections.close_all()
            drop_database(args.database_url, scratch)
    return 1 if failed else 0


class _Target:
    """A server someone else runs: only its URL."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
