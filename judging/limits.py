"""How many calls a judge (or generator) makes at once and per minute, across worker processes.

A judge's ``concurrency`` and ``rate_limit_per_minute`` protect an endpoint's
quota, so they must hold for the judge as a whole, not per worker: two Celery
workers on one run must not send twice the configured rate. Every model call
holds a :class:`Slot` from :func:`call_limits`: a place among the judge's
``concurrency`` calls in flight, and a time to send at least 60/rate seconds
after the previous call's.

With Django's cache on Redis (``REDIS_URL``) the limits live in Redis and hold
across processes and machines (``judging.shared_limits.SharedLimits``); otherwise
they hold per worker process (:class:`LocalLimits`), which is right for one
worker. Should Redis fail mid-run, calls fall back to the per-process limits
rather than fail.
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.cache import caches

from .concurrency import AdaptiveWidth

logger = logging.getLogger(__name__)

# A slot is leased for the call's whole-response deadline plus this, at most for the run's lease
# (annotation.jobs.lease_seconds), and the worker renews the leases of the slots it holds with its
# heartbeat (renew_held_slots): a worker that dies holding one loses it when the lease runs out,
# as its run's units do, instead of holding it for a whole timeout after.
LEASE_SLACK_SECONDS = 10.0
# Longest a waiter sleeps before looking again (a lease may have run out meanwhile).
POLL_SECONDS = 1.0


def _never() -> bool:
    return False


def _nothing() -> None:
    pass


@dataclass(frozen=True)
class Slot:
    """Permission for one call: send it ``wait`` seconds from now, then ``release()``."""

    wait: float = 0.0
    at: float = 0.0  # the reserved send time on the limiter's clock (seconds)
    release: Callable[[], None] = _nothing


class Limits(Protocol):
    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot | None:
        """Wait for a place among the calls in flight and reserve a send time.

        None when ``should_stop`` turned true before a place came free."""
        ...

    def observe(self, *, started: float, seconds: float, timed_out: bool) -> None:
        """A call sent at ``started`` (time.monotonic) took ``seconds`` and answered or ``timed_out``:
        the place count adapts to it (``judging.concurrency``) when the endpoint did not say its own."""
        ...

    def close(self) -> None:
        """The run is over: give back what is kept for a next call."""
        ...


class RateLimiter:
    """Spaces calls at least 60/per_minute seconds apart, across threads of one process. 0 = no limit."""

    def __init__(self, per_minute: float, *, clock: Callable[[], float] = time.monotonic):
        self.interval = 60.0 / per_minute if per_minute and per_minute > 0 else 0.0
        self._clock = clock
        self._next = 0.0
        self._lock = threading.Lock()

    def reserve(self) -> tuple[float, float]:
        """Reserve the next free send time: (seconds to wait for it, the time itself)."""
        now = self._clock()
        if not self.interval:
            return 0.0, now
        with self._lock:
            slot = max(now, self._next)
            self._next = slot + self.interval
            return slot - now, slot

    def wait_time(self) -> float:
        """Reserve the next slot and return how long to wait for it."""
        return self.reserve()[0]

    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot:
        wait, at = self.reserve()
        return Slot(wait, at)

    def observe(self, *, started: float, seconds: float, timed_out: bool) -> None:
        pass

    def close(self) -> None:
        pass


class LocalLimits:
    """The limits of one judge within this process: places counted under a lock, and a :class:`RateLimiter`.

    ``width`` says how many places there are now (``judging.concurrency``); by default ``concurrency``."""

    def __init__(
        self,
        *,
        concurrency: int,
        per_minute: float,
        clock: Callable[[], float] = time.monotonic,
        width: AdaptiveWidth | None = None,
    ):
        self.concurrency = concurrency
        self.per_minute = per_minute
        self.rate = RateLimiter(per_minute, clock=clock)
        self.width = width or AdaptiveWidth(ceiling=concurrency, timeout=0.0, fixed=True)
        self._in_flight = 0
        self._freed = threading.Condition()

    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot | None:
        if self.concurrency <= 0:
            return self.rate.hold()
        if not self.take_place(should_stop=should_stop):
            return None
        wait, at = self.rate.reserve()
        return Slot(wait, at, self.give_place)

    def take_place(self, *, should_stop: Callable[[], bool] = _never) -> bool:
        """Wait for one of this process's ``width.limit`` places; False when ``should_stop`` turned true first."""
        with self._freed:
            while self._in_flight >= self.width.limit:
                self._freed.wait(timeout=POLL_SECONDS / 4)
                if should_stop():
                    return False
            self._in_flight += 1
        return True

    def give_place(self) -> None:
        with self._freed:
            self._in_flight -= 1
            self._freed.notify()

    @property
    def over_width(self) -> bool:
        """More places are taken than the width allows now (it was cut): the next one given back stays free."""
        return self._in_flight > self.width.limit

    def observe(self, *, started: float, seconds: float, timed_out: bool) -> None:
        self.width.observe(started=started, seconds=seconds, timed_out=timed_out)

    def close(self) -> None:
        pass


_local: dict[str, LocalLimits] = {}
_local_lock = threading.Lock()


def local_limits(
    *, key: str, concurrency: int, per_minute: float, timeout: float = 0.0, adapt: bool = False
) -> LocalLimits:
    """This process's limits for ``key``, shared by every run of that judge in the process (so what its
    width learned about the endpoint carries over to the next run)."""
    with _local_lock:
        limits = _local.get(key)
        wanted = (concurrency, per_minute, timeout, not adapt)
        if (
            limits is None
            or (
                limits.concurrency,
                limits.per_minute,
                limits.width.timeout,
                limits.width.fixed,
            )
            != wanted
        ):
            width = AdaptiveWidth(ceiling=concurrency, timeout=timeout, fixed=not adapt)
            limits = _local[key] = LocalLimits(concurrency=concurrency, per_minute=per_minute, width=width)
        return limits


def call_limits(
    *, scope: str, pk: int, concurrency: int, per_minute: float, timeout: float, adapt: bool = False
) -> Limits:
    """The limits of the judge (``scope="judge"``) or generator with primary key ``pk``.

    Shared through Redis when Django's default cache is Redis, else per process.
    ``timeout`` is a call's whole-response deadline: a slot's lease outlives it a little.
    ``adapt``: the endpoint did not say how many requests it serves at once, so ``concurrency`` is a
    ceiling and the places in use follow the calls' latencies (``judging.concurrency``).
    """
    from django.core.cache.backends.redis import RedisCache

    key = f"{scope}:{pk}"
    local = local_limits(key=key, concurrency=concurrency, per_minute=per_minute, timeout=timeout, adapt=adapt)
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        return local
    # Late: the limiter itself loads without Django's models (processes in tests/judging/test_limits_shared.py).
    from annotation.jobs import lease_seconds

    from .shared_limits import SharedLimits

    return SharedLimits(
        client=cache._cache.get_client(write=True),
        key=cache.make_key(f"funnybone:limits:{key}"),
        concurrency=concurrency,
        per_minute=per_minute,
        lease_seconds=min(timeout + LEASE_SLACK_SECONDS, lease_seconds()),
        fallback=local,
    )


def endpoint_call_limits(
    *, backend: Any, scope: str, pk: int, concurrency: int, per_minute: float, timeout: float
) -> tuple[int, Limits]:
    """How many calls to keep in flight and the limits that hold them, for a judge or generator whose
    ``backend`` (a ``ChatBackend``) is about to be used: no more than the endpoint says it serves at once;
    when it does not say, ``concurrency`` is a ceiling the limits adapt under (``judging.concurrency``)."""
    served = backend.server_slots()
    width = min(concurrency, served) if served else concurrency
    if served and served < concurrency:
        logger.info("%s %s: the endpoint serves %d requests at once; sending no more than that", scope, pk, served)
    limits = call_limits(
        scope=scope, pk=pk, concurrency=width, per_minute=per_minute, timeout=timeout, adapt=served is None
    )
    return width, limits
