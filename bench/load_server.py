# SPDX-License-Identifier: GPL-3.0-or-later
"""A scratch PostgreSQL database and a gunicorn server on loopback, for the load harness and fault tests.

Everything here cleans up after itself: the server runs in its own process
group and is stopped (then killed, if it must be) on exit, and a scratch
database is dropped with the connections still open to it.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONFIG = ROOT / "bench" / "load_gunicorn.py"
READY_TIMEOUT = 60


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


def _admin_connection(url: str):
    import psycopg

    return psycopg.connect(with_database(url, "postgres"), autocommit=True)


def create_database(url: str, name: str) -> str:
    """Create an empty database named ``name`` on the server ``url`` points at; return its URL."""
    from psycopg import sql

    with _admin_connection(url) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(url, name)


def drop_database(url: str, name: str) -> None:
    from psycopg import sql

    with _admin_connection(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def migrate(database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        """The master's live child processes (its workers), read from /proc."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # Fields after the command name, which is in parentheses and may hold spaces.
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == self.process.pid and fields[0] != "Z":
                pids.append(int(entry.name))
        return sorted(pids)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/s/not-a-study/", headers={"Host": "127.0.0.1"})
        return conn.getresponse().status < 500
    except OSError:
        return False
    finally:
        conn.close()


@contextlib.contextmanager
def gunicorn(
    database_url: str,
    *,
    log: Path,
    workers: int = 2,
    threads: int = 8,
    extra_env: dict[str, str] | None = None,
    settings_module: str = "funnybone.settings",
    port: int | None = None,
) -> Iterator[Server]:
    """Run ``gunicorn funnybone.wsgi`` on a free loopback port until the block ends.

    ``settings_module`` ``bench.bare_settings`` also mounts the bare reference (``bench/bare.py``).
    ``port`` picks the port (a free one when not given).
    """
    port = port or free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "load-harness-" + os.urandom(16).hex(),
        "FUNNYBONE_ENTRY_RATE_PER_MINUTE": "100000000",
        "LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    command = [
        str(Path(sys.executable).with_name("gunicorn")),
        "funnybone.wsgi",
        "-c",
        str(GUNICORN_CONFIG),
        "-w",
        str(workers),
        "-k",
        "gthread",
        "--threads",
        str(threads),
        "-b",
        f"127.0.0.1:{port}",
        "--graceful-timeout",
        "10",
        # gunicorn 27 otherwise binds one control socket per user (~/.gunicorn/gunicorn.ctl):
        # servers started side by side (tests, benches, another checkout) would share it.
        "--no-control-socket",
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(process=process, port=port, log=log)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not (_answers(port) and len(server.worker_pids()) >= workers):
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{server.log_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn was not ready after {READY_TIMEOUT} s:\n{server.log_text()}")
            time.sleep(0.2)
        warm_up(port, connections=2 * workers * threads)
        yield server
    finally:
        stop(process)


def warm_up(port: int, *, connections: int, rounds: int = 3) -> None:
    """Send a burst of concurrent requests so every worker thread has imported the app and connected.

    Workers load Django lazily on their first request (several seconds on a busy
    machine), which would otherwise land in the first measured figures.
    """
    import threading

    def knock() -> None:
        for _ in range(rounds):
            _answers(port)

    threads = [threading.Thread(target=knock, daemon=True) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(READY_TIMEOUT)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    # Workers left behind by a killed master would keep the port and the database.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
