"""A real Celery worker for end-to-end tests, on Redis and the test PostgreSQL database.

The worker is a separate process started from the command line, exactly as in
production, pointed at the database pytest-django created (so it sees what
the tests commit) and at Redis database 3. SQLite in memory cannot be shared
with another process, so these tests need PostgreSQL (DATABASE_URL).
"""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings

from tests.conftest import require_postgres

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BROKER = "redis://127.0.0.1:6379/3"
READY_TIMEOUT = 60


@dataclass
class Worker:
    process: subprocess.Popen
    data_dir: Path
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def broker_url() -> str:
    return os.environ.get("REDIS_URL") or DEFAULT_BROKER


def require_redis(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.RedisError as exc:
        if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
            pytest.fail(f"This test needs Redis at {url}: {exc}")
        pytest.skip(f"needs Redis at {url} ({exc})")


def database_url() -> str:
    """The live test database (pytest-django renamed it) as a URL for the worker's settings."""
    db = settings.DATABASES["default"]
    credentials = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{quote(db['NAME'], safe='')}"


def _point_app_at(app, url: str | None, transport_options: dict) -> None:
    """Send this process's tasks to another broker, dropping connections made to the old one."""
    from kombu import pools

    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    # kombu also keeps producer pools in a global registry keyed by connection; a pool closed
    # above would otherwise be handed to the next module's worker fixture ("Acquire on closed pool").
    pools.reset()
    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options


@contextmanager
def running_worker(tmp_path_factory, *, pool: str = "solo", env: dict[str, str] | None = None) -> Iterator[Worker]:
    """A worker process on the test database and Redis; ``pool="prefork"`` where time limits must be enforced."""
    require_postgres()
    url = broker_url()
    require_redis(url)

    from funnybone.celery import app

    saved = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    _point_app_at(app, url, {})
    app.control.purge()  # leftovers of an interrupted earlier run would otherwise run first

    data_dir = tmp_path_factory.mktemp("worker")
    log = data_dir / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "funnybone.settings",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": url,
        "FUNNYBONE_DATA_DIR": str(data_dir),
        **(env or {}),
    }
    command = [
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "funnybone",
        "worker",
        "--concurrency=1",
        f"--pool={pool}",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
        f"--hostname=funnybone-test-{os.getpid()}@%h",
    ]
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    worker = Worker(process=process, data_dir=data_dir, log=log)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while " ready." not in worker.log_text():
            if process.poll() is not None:
                pytest.fail(f"The Celery worker exited with {process.returncode}:\n{worker.log_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"The Celery worker was not ready after {READY_TIMEOUT} s:\n{worker.log_text()}")
            time.sleep(0.2)
        yield worker
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        _point_app_at(app, *saved)


@pytest.fixture(scope="module")
def celery_worker(django_db_setup, tmp_path_factory):
    with running_worker(tmp_path_factory) as worker:
        yield worker


def wait_until(predicate, *, timeout: float = 60, interval: float = 0.25) -> bool:
    """Poll until predicate() is true or the time is up (a bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
