"""A real gunicorn server on the test database, for the fault tests.

The server is started from the command line as in production (gthread
workers, DEBUG off) and pointed at the database pytest-django created, so the
tests' committed rows (``transactional_db``) are what it serves. Its workers
name their database connections ``funnybone-web-<worker pid>``
(``bench/load_gunicorn.py``), which lets a test find the worker, or the
PostgreSQL backend, in the middle of a given request.
"""

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
import pytest

from bench.load_client import Rater, Study
from bench.load_server import Server, gunicorn
from tests.conftest import build_study, require_postgres
from tests.integration.conftest import database_url, wait_until

WAIT = 60  # bounds every wait on the server; a hung run fails instead of hanging


@pytest.fixture
def web_server(transactional_db, tmp_path) -> Iterator[Server]:
    require_postgres()
    env = {"FUNNYBONE_DATA_DIR": str(tmp_path / "data"), "DB_CONN_MAX_AGE": "60"}
    with gunicorn(database_url(), log=tmp_path / "gunicorn.log", workers=2, threads=4, extra_env=env) as server:
        yield server


@pytest.fixture
def load_study(researcher):
    """An open 0-3 rating study: 12 items, two raters each, so five raters run it out."""
    return build_study(researcher, task_type="ordinal", n_items=12, quota_per_item=2)


def client_study(study, server: Server) -> Study:
    return Study(base_url=server.url, entry_token=study.entry_token, points=[0, 1, 2, 3])


@dataclass
class HeldSubmission:
    """Holds one assignment's row lock, so the submission of it stops inside the server.

    ``hold`` runs in a rater's thread before it answers (the first answer of the
    run is the one held, so the fault always happens); the submission then
    waits on the lock in the database, in the middle of its request, until
    ``strike`` (in another thread) has found the PostgreSQL backend that waits,
    done its damage to it or to its web worker, and let the lock go.
    """

    strike_with: str  # "kill-worker" | "end-connection"
    assignment_id: int | None = None
    worker_pid: int | None = None
    backend_pid: int | None = None
    done: threading.Event = field(default_factory=threading.Event)
    _lock: psycopg.Connection | None = None
    _first: threading.Lock = field(default_factory=threading.Lock)

    def hold(self, rater: Rater, assignment_id: int) -> None:
        with self._first:
            if self.assignment_id is not None:
                return  # only the first answer of the run, whichever rater sends it
            self.assignment_id = assignment_id
            self._lock = psycopg.connect(database_url())
            self._lock.execute("SELECT id FROM annotation_assignment WHERE id = %s FOR UPDATE", [assignment_id])
            threading.Thread(target=self.strike, args=(self._lock.info.backend_pid,), daemon=True).start()

    @staticmethod
    def _backend_waiting_for(holder_pid: int) -> tuple[int, int] | None:
        """(backend pid, worker pid) of the web request that waits for our lock, if one does yet."""
        with psycopg.connect(database_url(), autocommit=True) as conn:
            row = conn.execute(
                "SELECT pid, application_name FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name LIKE %s "
                "AND %s = ANY(pg_blocking_pids(pid))",
                ["funnybone-web-%", holder_pid],
            ).fetchone()
        return (row[0], int(row[1].rsplit("-", 1)[1])) if row else None

    def strike(self, holder_pid: int) -> None:
        try:
            found: list[tuple[int, int] | None] = []
            if wait_until(lambda: bool(found.append(self._backend_waiting_for(holder_pid)) or found[-1]), timeout=WAIT):
                self.backend_pid, self.worker_pid = found[-1]
                if self.strike_with == "kill-worker":
                    os.kill(self.worker_pid, signal.SIGKILL)
                else:
                    with psycopg.connect(database_url(), autocommit=True) as conn:
                        conn.execute("SELECT pg_terminate_backend(%s)", [self.backend_pid])
        finally:
            with contextlib.suppress(psycopg.Error):
                self._lock.rollback()
                self._lock.close()
            self.done.set()
