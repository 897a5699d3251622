# SPDX-License-Identifier: GPL-3.0-or-later
"""The broker dies in the middle of a judge run, and the worker with it.

The run's task lives only in Redis. Here Redis is a server of the test's own
(a loopback port nobody else uses, nothing saved to disk), so when it is killed
together with the Celery worker every queued and unacknowledged message is
gone. Restarted empty, with a new worker, the run is resumed the way a
researcher resumes it (``run_resume``, behind the Resume button and the API),
and every unit must end judged exactly once: the units and the judges'
assignments in PostgreSQL, not the broker, are the record of what is done.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db.models import Count
from kombu import pools

from annotation.models import Assignment, Judgment
from judging.models import JudgeRun, JudgeUnit
from judging.services.judges import judge_create
from judging.services.runs import run_create, run_resume
from judging.testing.fault_server import FaultServer
from judging.testing.services import CeleryWorker, free_port
from tests.conftest import build_study, require_postgres
from tests.integration.conftest import _point_app_at, database_url

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WAIT = 180  # bounds every wait, so a broken worker fails the test instead of hanging it
UNITS = 16  # 8 items x 2 trials


def wait_for(predicate, *, what: str, limit: float = WAIT) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"gave up waiting for {what}")


class RedisServer:
    """A throwaway redis-server. By default nothing is saved, so a restart starts empty; a durable
    one keeps an append-only file, so a restart is an outage that loses nothing, as in production."""

    def __init__(self, port: int, log: Path, *, durable: bool = False):
        self.port, self.log, self.durable = port, log, durable
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1)

    def start(self) -> "RedisServer":
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else ["--appendonly", "no"]
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence]
        command += ["--daemonize", "no", "--dir", str(self.log.parent)]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._answers, what=f"redis-server on port {self.port}", limit=20)
        return self

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"redis-server exited with {self.proc.returncode}:\n{self.log.read_text()[-2000:]}")
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """SIGKILL: the broker vanishes with whatever it held."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def own_redis(request, tmp_path):
    """The test's own redis-server; ``@pytest.mark.parametrize("own_redis", [True], indirect=True)`` makes it durable."""
    if not Path("/usr/bin/redis-server").exists() and not any(
        (Path(p) / "redis-server").exists() for p in os.environ.get("PATH", "").split(os.pathsep)
    ):
        pytest.skip("needs redis-server on the PATH")
    durable = getattr(request, "param", False)
    server = RedisServer(free_port(), tmp_path / "redis.log", durable=durable).start()
    yield server
    server.kill()


@pytest.fixture
def queue_on(own_redis):
    """Point this process's Celery app (run_create and run_resume queue through it) at the test's Redis."""
    from funnybone.celery import app

    def forget_connections() -> None:
        # After a restart the pooled sockets are dead; kombu's global pools are keyed by URL, so drop them all.
        pools.reset()
        app._pool = None
        app.amqp._producer_pool = None

    saved = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    _point_app_at(app, own_redis.url, {})
    yield forget_connections
    forget_connections()
    _point_app_at(app, *saved)


@pytest.fixture
def start_worker(transactional_db, own_redis, tmp_path):
    require_postgres()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=own_redis.url,
        SECRET_KEY=settings.SECRET_KEY,
        DJANGO_SETTINGS_MODULE="funnybone.settings",
        DB_CONN_MAX_AGE="0",
        FUNNYBONE_DATA_DIR=str(tmp_path / "data"),
    )
    workers: list[CeleryWorker] = []

    def start(name: str, options: tuple[str, ...] = CeleryWorker.BARE) -> CeleryWorker:
        worker = CeleryWorker(env=env, log=tmp_path / f"{name}.log", name=f"{name}-{os.getpid()}", options=options)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.kill()


@pytest.fixture
def slow_model():
    server = FaultServer().start()
    yield server
    server.stop()


def broker_holds_messages(server: RedisServer) -> bool:
    client = server.client()
    return any(client.llen(key) for key in client.scan_iter("celery*") if client.type(key) == b"list") or bool(
        client.hlen("unacked") if client.exists("unacked") else 0
    )


def slow_judge(owner, server: FaultServer, step: str):
    """A judge two calls at a time on a slow endpoint, so a run lasts long enough to be interrupted."""
    return judge_create(
        owner=owner,
        name="slow judge",
        base_url=server.url(step),
        model="fake-model",
        concurrency=2,
        timeout_seconds=10,
        backoff_seconds=0.1,
    )


class TestABrokerRestartMidRun:
    def test_the_resumed_run_judges_every_unit_exactly_once(
        self, researcher, own_redis, queue_on, start_worker, slow_model
    ):
        study = build_study(researcher, task_type="ordinal", n_items=8)
        judge = slow_judge(researcher, slow_model, "slow:1200")
        first = start_worker("doomed")
        run = run_create(study=study, judge=judge, trials=2)  # queued on our Redis once committed
        judgments = Judgment.objects.filter(rater=judge.rater)
        wait_for(lambda: judgments.count() >= 3, what="the first judgments")

        own_redis.kill()
        first.kill()
        judged_before = judgments.count()
        assert judged_before < UNITS, "the run finished before the broker and the worker were killed"
        assert JudgeRun.objects.get(pk=run.pk).is_active

        own_redis.start()  # the same port, empty: the run's task is gone
        assert not broker_holds_messages(own_redis)
        queue_on()
        start_worker("rescuer")
        run_resume(run=run)
        wait_for(lambda: not JudgeRun.objects.get(pk=run.pk).is_active, what="the resumed run")

        assert_judged_exactly_once(run, judge)


def assert_judged_exactly_once(run: JudgeRun, judge) -> None:
    run.refresh_from_db()
    judgments = Judgment.objects.filter(rater=judge.rater)
    assert run.status == "done", run.error
    assert run.units.filter(status="done").count() == UNITS
    assert judgments.count() == UNITS
    per_assignment = judgments.values("assignment").annotate(n=Count("id"))
    assert {row["n"] for row in per_assignment} == {1}
    per_unit = judgments.values("item_id", "assignment__trial").annotate(n=Count("id"))
    assert len(per_unit) == UNITS
    assert Assignment.objects.filter(rater=judge.rater).count() == UNITS
    assert set(judgments.values_list("status", flat=True)) <= {"ok", "failed"}
    assert not JudgeUnit.objects.filter(run=run).exclude(status="done").exists()


OUTAGE = 10  # seconds without Redis, as in the report that found the worker dead


@pytest.mark.parametrize("own_redis", [True], indirect=True)
class TestARedisOutageUnderARunningWorker:
    """Redis goes away for ten seconds and comes back with what it held (a restart, a failover)."""

    def test_the_worker_stays_up_finishes_the_run_and_takes_new_work(
        self, researcher, own_redis, queue_on, start_worker, slow_model
    ):
        study = build_study(researcher, task_type="ordinal", n_items=8)
        judge = slow_judge(researcher, slow_model, "slow:1500")
        worker = start_worker("survivor", CeleryWorker.AS_MAKE_RUN)
        run = run_create(study=study, judge=judge, trials=2)
        judgments = Judgment.objects.filter(rater=judge.rater)
        wait_for(lambda: judgments.count() >= 2, what="the first judgments")

        own_redis.kill()
        time.sleep(OUTAGE)  # the outage itself, not a wait for a result
        own_redis.start()  # the same port, with the append-only file: the queue and the unacked message are back
        queue_on()

        wait_for(lambda: not JudgeRun.objects.get(pk=run.pk).is_active, what="the run after the outage")
        assert worker.proc.poll() is None, worker.log.read_text()[-3000:]
        assert_judged_exactly_once(run, judge)

        # The worker still consumes: a run queued after the outage is judged by the same process.
        other = judge_create(owner=researcher, name="after the outage", base_url=slow_model.url("ok"), model="m")
        later = run_create(study=study, judge=other, trials=2)
        wait_for(lambda: not JudgeRun.objects.get(pk=later.pk).is_active, what="a run queued after the outage")
        assert_judged_exactly_once(later, other)
        assert worker.proc.poll() is None
        assert "Unrecoverable error" not in worker.log.read_text()
        # The task that ran through the outage was acked once Redis was back, so it is not redelivered later.
        assert not own_redis.client().hlen("unacked")
