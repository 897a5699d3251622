"""Fixtures for the judging tests: a fault-injection server, judges, a recorder for waits,
and the real services of the integration tests (a llama.cpp server, Celery workers on Redis)."""

import os

import pytest
from django.conf import settings as django_settings
from django.db import connection

from judging.services.judges import judge_create
from judging.testing.fault_server import FaultServer
from judging.testing.services import CeleryWorker, LlamaServer, ServiceUnavailable

SECRET_KEY_VALUE = "sk-test-5ecret-DO-NOT-LEAK-1234567890"


@pytest.fixture(scope="session")
def fault_server():
    server = FaultServer().start()
    yield server
    server.stop()


class SleepRecorder:
    """Stands in for time.sleep: remembers each wait instead of waiting."""

    def __init__(self):
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        if seconds > 0:
            self.waits.append(seconds)


@pytest.fixture
def no_sleep():
    return SleepRecorder()


@pytest.fixture
def make_llm_judge(researcher, fault_server):
    counter = {"n": 0}

    def make(*steps, owner=None, **settings):
        counter["n"] += 1
        defaults = {"timeout_seconds": 2.0, "backoff_seconds": 0.05, "concurrency": 4}
        return judge_create(
            owner=owner or researcher,
            name=settings.pop("name", f"fake judge {counter['n']}"),
            base_url=fault_server.url(*steps),
            model="fake-model",
            **{**defaults, **settings},
        )

    return make


@pytest.fixture(autouse=True)
def _retry_by_tries_only(settings):
    # Most tests count tries against a server that keeps failing; the time budget, which would keep
    # such a server retried for two minutes, is set by the tests about it (test_retry_policy.py).
    settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0


@pytest.fixture(autouse=True)
def _declared_key_variables(settings):
    # The variables these tests name as a judge's key, declared as an operator would (judging.keys);
    # tests/security/test_judge_secrets.py covers the names that are refused.
    settings.FUNNYBONE_JUDGE_KEY_ENVS = ["FB_TEST_KEY", "JOKER_KEY", "LOCAL_KEY", "FUNNYBONE_TEST_NO_SUCH_KEY"]


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # The shared researcher fixtures hash passwords; a fast hasher keeps these tests quick.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# -- real services (integration) ------------------------------------------------


def _missing(reason: str):
    """Skip locally; fail where the services are promised (CI sets FUNNYBONE_REQUIRE_SERVICES)."""
    if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
        pytest.fail(reason)
    pytest.skip(reason)


def _redis_url() -> str:
    broker = django_settings.CELERY_BROKER_URL
    if broker.startswith("redis://"):
        return broker
    return os.environ.get("FUNNYBONE_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    try:
        server = LlamaServer(tmp_path_factory.mktemp("llama"))
    except ServiceUnavailable as exc:
        _missing(f"needs the llama.cpp server: {exc}")
    yield server
    server.stop()


@pytest.fixture
def broker_url():
    import redis

    url = _redis_url()
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        _missing(f"needs Redis at {url}: {exc}")
    return url


@pytest.fixture
def worker_env(transactional_db, broker_url):
    """The environment a worker (or a manage.py subprocess) needs to share this test's database and broker."""
    db = connection.settings_dict
    if not db["ENGINE"].endswith("postgresql"):
        _missing("needs PostgreSQL so a worker process sees the test database (set DATABASE_URL)")
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
        DATABASE_URL=f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        CELERY_BROKER_URL=broker_url,
        SECRET_KEY=django_settings.SECRET_KEY,
        DJANGO_SETTINGS_MODULE="funnybone.settings",
        DB_CONN_MAX_AGE="0",
    )
    return env


@pytest.fixture
def start_worker(worker_env, tmp_path):
    workers = []

    def start(name: str = "judging-test") -> CeleryWorker:
        worker = CeleryWorker(env=worker_env, log=tmp_path / f"{name}-{len(workers)}.log", name=f"{name}{len(workers)}")
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture
def send_task(broker_url):
    """Queue a task on the test broker by name (the test process's own app may use another broker)."""
    from celery import Celery

    # Not the current app: shared tasks (tournament_task.delay, ...) resolve to the current app,
    # and this one's pools are never reset by the integration worker fixture, so later tests would
    # send through a closed producer pool ("Acquire on closed pool").
    app = Celery("judging-tests", broker=broker_url, set_as_current=False)

    def send(name: str, *args):
        # An explicit connection and producer: kombu's producer pools are global
        # per broker URL, and a pool another test closed would refuse to hand one out.
        with app.connection_for_write() as connection:
            app.send_task(name, args=list(args), producer=connection.Producer())

    yield send
