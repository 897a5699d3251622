# SPDX-License-Identifier: GPL-3.0-or-later
"""Resource bombs against a production-like server: does the web keep answering, and what memory do processes reach?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/bench_bombs.py [--items 200000] [--protocol-rows 300000] [--bombs a,b]

It creates a scratch PostgreSQL database (dropped at the end), starts gunicorn
(2 gthread workers, as in docs/load.md) and one prefork Celery worker, both with
``FUNNYBONE_PRODUCTION=1``, and fires each bomb in turn while a prober asks the
server for a small page every 0.25 s. For each bomb it prints the HTTP status,
how long the bomb's request took, the slowest probe meanwhile (the issue asks
for under 2 s), and the peak resident memory (``VmHWM``) so far of the web
workers and of the Celery worker processes.

A skeleton for the other bombs of issue 12: each bomb is a function in
``BOMBS`` taking the ``Setup`` and returning ``(status, seconds)``; a bomb
that queues work waits for the import or export to finish before returning.

* ``protocol_csv``  a large JEST rating sheet through the protocol import page
                    (used to be imported inside the web request);
* ``items_json``    a large JSON list of items through the API (goes to the worker);
* ``progress_api``  ``/api/studies/<id>/progress/`` of a study with ``--items`` items;
* ``study_file``    the streamed study-file download of that study.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_server import (  # noqa: E402
    create_database,
    drop_database,
    gunicorn,
    migrate,
    stop,
)

PASSWORD = "bomb-password-123"  # noqa: S105 - a scratch account in a scratch database
PROBE_EVERY = 0.25


@dataclass
class Setup:
    base_url: str
    token: str
    big_study: int
    jest_study: int
    protocol_rows: int
    session: object = None  # a logged-in requests.Session for the researcher pages
    processes: dict[str, Callable[[], list[int]]] = field(default_factory=dict)


def _django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def prepare_data(n_items: int) -> tuple[str, int, int]:
    """The researcher, their API token, a big pairwise study and an empty JEST study."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.protocols import study_from_template
    from bench.bench_bounded import build

    user = get_user_model().objects.create_user("bomber", "bomber@example.org", PASSWORD)
    big = build(n_items)
    from annotation.models import Study

    Study.objects.filter(pk=big).update(owner=user)
    jest = study_from_template(owner=user, template="jest", name="Bomb panel")
    return Token.objects.create(user=user).key, big, jest.pk


def import_finished(study_id: int, timeout: float = 3600) -> str:
    from annotation.models import ItemImport

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = ItemImport.objects.filter(study_id=study_id).order_by("-pk").first()
        if job is not None and job.is_finished:
            return f"{job.status} ({job.items_created} items, {job.judgments_created} answers)"
        time.sleep(0.5)
    return "still running"


def jest_csv(rows: int) -> bytes:
    lines = ["id,setup,response,rater,rating"]
    for i in range(rows):
        lines.append(f"t{i // 3},Setup number {i // 3} about a cat.,Response {i // 3} about a ladder.,R{i % 3},{i % 4}")
    return ("\n".join(lines) + "\n").encode()


def bomb_protocol_csv(setup: Setup) -> tuple[str, float]:
    session = setup.session
    url = f"{setup.base_url}/studies/{setup.jest_study}/protocol-import/"
    session.get(url, timeout=600)
    data = jest_csv(setup.protocol_rows)
    started = time.perf_counter()
    response = session.post(
        url,
        data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
        files={"file": ("panel.csv", data, "text/csv")},
        allow_redirects=False,
        timeout=600,
    )
    answered = time.perf_counter() - started
    if response.status_code != 302:  # refused or imported in the request: there is no job to wait for
        return f"{response.status_code} in {answered:.1f}s ({len(data) / 2**20:.0f} MB)", answered
    outcome = import_finished(setup.jest_study)
    return f"{response.status_code} in {answered:.1f}s ({len(data) / 2**20:.0f} MB), then {outcome}", answered


def bomb_items_json(setup: Setup) -> tuple[str, float]:
    import requests

    from annotation.models import Study
    from annotation.services.studies import study_create

    owner = Study.objects.get(pk=setup.big_study).owner
    study = study_create(owner=owner, name=f"JSON bomb {time.time()}", task_type="ordinal")
    items = [{"id": f"j{n}", "text": f"Joke number {n} about a duck."} for n in range(100_000)]
    started = time.perf_counter()
    response = requests.post(
        f"{setup.base_url}/api/studies/{study.pk}/items/import/",
        json={"items": items},
        headers={"Authorization": f"Token {setup.token}"},
        timeout=600,
    )
    answered = time.perf_counter() - started
    return f"{response.status_code} in {answered:.1f}s, then {import_finished(study.pk)}", answered


def bomb_progress_api(setup: Setup) -> tuple[str, float]:
    import requests

    started = time.perf_counter()
    response = requests.get(
        f"{setup.base_url}/api/studies/{setup.big_study}/progress/",
        headers={"Authorization": f"Token {setup.token}"},
        timeout=600,
    )
    seconds = time.perf_counter() - started
    return f"{response.status_code}, {len(response.content) / 2**20:.2f} MB", seconds


def bomb_study_file(setup: Setup) -> tuple[str, float]:
    started = time.perf_counter()
    size = 0
    url = f"{setup.base_url}/studies/{setup.big_study}/study-file/"
    with setup.session.get(url, stream=True, timeout=600) as response:
        for chunk in response.iter_content(1 << 16):
            size += len(chunk)
    seconds = time.perf_counter() - started
    return f"{response.status_code}, {size / 2**20:.1f} MB streamed", seconds


BOMBS: dict[str, Callable[[Setup], tuple[str, float]]] = {
    "protocol_csv": bomb_protocol_csv,
    "items_json": bomb_items_json,
    "progress_api": bomb_progress_api,
    "study_file": bomb_study_file,
}


class Prober(threading.Thread):
    """Asks for a small page every PROBE_EVERY seconds and keeps the slowest answer."""

    def __init__(self, base_url: str):
        super().__init__(daemon=True)
        self.url = f"{base_url}/accounts/login/"
        self.slowest = 0.0
        self.failures = 0
        self.stop = threading.Event()

    def run(self) -> None:
        import requests

        while not self.stop.wait(PROBE_EVERY):
            started = time.perf_counter()
            try:
                ok = requests.get(self.url, timeout=30).status_code == 200
            except requests.RequestException:
                ok = False
            self.slowest = max(self.slowest, time.perf_counter() - started)
            self.failures += not ok


def peak_mb(pids: list[int]) -> float:
    """The largest peak resident set (VmHWM) among the processes."""
    peak = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            continue
    return peak / 1024


def children(pid: int) -> list[int]:
    found = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "funnybone",
        "worker",
        "--concurrency=1",
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=WARNING",
        f"--hostname=bombs-{os.getpid()}@%h",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    time.sleep(5)  # the worker connects to the broker; the first bomb waits on its result anyway
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200_000, help="items of the big study")
    parser.add_argument("--protocol-rows", type=int, default=300_000, help="rows of the protocol CSV bomb")
    parser.add_argument("--bombs", default=",".join(BOMBS))
    args = parser.parse_args()
    # Stopped with SIGTERM (or by `timeout`), still stop the servers and drop the scratch database.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    server_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("REDIS_URL", "")
    if not server_url.startswith("postgres") or not broker:
        sys.exit("Set DATABASE_URL (a PostgreSQL server) and REDIS_URL.")
    name = f"fb_bombs_{os.getpid()}"
    database_url = create_database(server_url, name)
    scratch = Path(f"/tmp/fb-bombs-{os.getpid()}")
    scratch.mkdir(parents=True, exist_ok=True)
    production = {
        "FUNNYBONE_PRODUCTION": "1",
        "SECRET_KEY": "bombs-" + os.urandom(16).hex(),
        "FUNNYBONE_DATA_DIR": str(scratch),
        "CELERY_BROKER_URL": broker,
        "REDIS_URL": broker,
    }
    worker = None
    try:
        migrate(database_url)
        os.environ.update(production)
        _django(database_url)
        token, big, jest = prepare_data(args.items)
        env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
        worker = start_worker(env, scratch / "worker.log")
        with gunicorn(database_url, log=scratch / "gunicorn.log", threads=4, extra_env=production) as server:
            import requests

            session = requests.Session()
            session.get(f"{server.url}/accounts/login/", timeout=60)
            session.post(
                f"{server.url}/accounts/login/",
                data={"username": "bomber", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                timeout=600,
            )
            setup = Setup(server.url, token, big, jest, args.protocol_rows, session)
            print(f"big study: {args.items} items; protocol CSV: {args.protocol_rows} rows")
            print(f"{'bomb':>13} {'seconds':>8} {'slowest probe':>14} {'web MB':>7} {'worker MB':>9}  outcome")
            for bomb in [b for b in args.bombs.split(",") if b]:
                prober = Prober(server.url)
                prober.start()
                outcome, seconds = BOMBS[bomb](setup)
                prober.stop.set()
                prober.join()
                web = peak_mb(server.worker_pids())
                celery = peak_mb(children(worker.pid))
                probe = f"{prober.slowest:.2f}s" + (f" ({prober.failures} failed)" if prober.failures else "")
                print(f"{bomb:>13} {seconds:>8.1f} {probe:>14} {web:>7.0f} {celery:>9.0f}  {outcome}")
                sys.stdout.flush()
    finally:
        if worker is not None:
            stop(worker)
        from django.db import connections

        connections.close_all()
        drop_database(server_url, name)
        print(json.dumps({"logs": str(scratch)}))


if __name__ == "__main__":
    main()
