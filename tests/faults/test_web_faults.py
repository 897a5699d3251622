"""Faults on the web side while raters work: a killed worker, a dropped database connection.

Five simulated crowdworkers (``bench/load_client.py``) take a study over HTTP
from a real gunicorn server until it runs out. In the first tests the run's
first answer is stopped inside the server (its assignment row is locked) and
then either its web worker is killed with SIGKILL or its PostgreSQL backend is
ended with ``pg_terminate_backend``; in the others, workers are killed or
every web connection is ended again and again while the raters work. Like a person pressing the button again,
a client resends an answer whose response was lost or was a server error.

Afterwards the audit (``bench/load_audit.py``) holds the database to what the
clients saw: every answer a client saw accepted is stored exactly once with
its value, nothing is stored twice or beyond an item's quota, and the study is
complete. Needs PostgreSQL (a second process must see the test database).
"""

import os
import signal
import threading
import time

import psycopg
import pytest

from annotation.models import Judgment
from bench.load_audit import audit_study
from bench.load_client import Plan, RaterLog, Submission, run_raters
from tests.faults.conftest import WAIT, HeldSubmission, client_study
from tests.integration.conftest import database_url, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration]

PARTICIPANTS = [f"fault-rater-{i}" for i in range(5)]
RUN_BOUND = 300  # seconds after which the simulated raters give up: a bound, not an expectation


def run_study(server, study, *, plan: Plan) -> list[RaterLog]:
    plan.deadline = time.monotonic() + RUN_BOUND
    logs, _timings, _wall = run_raters(client_study(study, server), PARTICIPANTS, plan)
    return logs


def held_answer(logs: list[RaterLog], held: HeldSubmission) -> Submission:
    """The answer whose request was struck, as its rater saw it."""
    (answer,) = [s for log in logs for s in log.submissions if s.assignment_id == held.assignment_id]
    return answer


class EveryNthAnswer:
    """Does damage just before every n-th answer any rater sends, while the others' requests run."""

    def __init__(self, n: int, damage):
        self.n, self.damage, self.count, self.lock = n, damage, 0, threading.Lock()

    def __call__(self, rater, assignment_id: int) -> None:
        with self.lock:
            self.count += 1
            if self.count % self.n == 0:
                self.damage()


def assert_nothing_lost_or_duplicated(study, logs: list[RaterLog]) -> None:
    audit = audit_study(study_id=study.pk, logs=logs)
    report = "\n".join(audit.lines())
    assert audit.ok, report
    assert [log.participant for log in logs if not log.finished] == [], report
    # Whoever answered something was given the completion code.
    assert [log.participant for log in logs if log.submissions and not log.completion_code] == [], report
    # The raters ran the study out: every item holds its quota of judgments, no more.
    assert audit.items_full == audit.items == 12, report
    assert Judgment.objects.filter(study=study).count() == 12 * 2, report


class TestAKilledWebWorker:
    def test_the_answer_it_was_serving_is_stored_once_and_the_worker_is_replaced(self, web_server, load_study):
        held = HeldSubmission(strike_with="kill-worker")

        logs = run_study(web_server, load_study, plan=Plan(on_item=held.hold))

        assert held.done.wait(WAIT)
        assert held.worker_pid is not None, "no web request waited on the held assignment"
        answer = held_answer(logs, held)
        assert answer.statuses[0].startswith("lost"), answer.statuses
        assert answer.outcome == "confirmed", answer.statuses
        assert_nothing_lost_or_duplicated(load_study, logs)
        assert held.worker_pid not in web_server.worker_pids()
        assert wait_until(lambda: len(web_server.worker_pids()) == 2, timeout=WAIT)


class TestADroppedDatabaseConnection:
    def test_the_request_fails_cleanly_and_the_resent_answer_is_stored_once(self, web_server, load_study):
        held = HeldSubmission(strike_with="end-connection")

        logs = run_study(web_server, load_study, plan=Plan(on_item=held.hold))

        assert held.done.wait(WAIT)
        assert held.backend_pid is not None, "no web request waited on the held assignment"
        answer = held_answer(logs, held)
        assert answer.statuses[0] == "500", answer.statuses
        assert answer.outcome == "confirmed", answer.statuses
        # The worker lived on and opened a new connection for the next request.
        assert held.worker_pid in web_server.worker_pids()
        assert_nothing_lost_or_duplicated(load_study, logs)

    def test_ending_every_web_connection_again_and_again_loses_nothing(self, web_server, load_study):
        ended: list[int] = []

        def end_web_connections() -> None:
            with psycopg.connect(database_url(), autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name LIKE %s",
                    ["funnybone-web-%"],
                ).fetchall()
            ended.extend(pid for pid, _ in rows)

        logs = run_study(web_server, load_study, plan=Plan(on_item=EveryNthAnswer(4, end_web_connections)))

        assert ended, "no web connection was ended during the run"
        assert_nothing_lost_or_duplicated(load_study, logs)


class TestKillingWorkersDuringTheLoad:
    def test_nothing_is_lost_or_stored_twice(self, web_server, load_study):
        killed: list[int] = []

        def kill_a_worker() -> None:
            pids = web_server.worker_pids()
            if pids and len(killed) < 3:  # bounded: three kills in one run
                pid = pids[len(killed) % len(pids)]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        logs = run_study(web_server, load_study, plan=Plan(on_item=EveryNthAnswer(5, kill_a_worker)))

        assert killed, "no worker was killed during the run"
        assert_nothing_lost_or_duplicated(load_study, logs)
