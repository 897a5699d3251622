"""How many calls a judge (or generator) makes at once and per minute, across worker processes.

A judge's ``concurrency`` and ``rate_limit_per_minute`` protect an endpoint's
quota, so they must hold for the judge as a whole, not per worker: two Celery
workers on one run must not send twice the configured rate. Every model call
holds a :class:`Slot` from :func:`call_limits`: a place among the judge's
``concurrency`` calls in flight, and a time to send at least 60/rate seconds
after the previous call's.

With Django's cache on Redis (``REDIS_URL``) the limits live in Redis and hold
across processes and machines (:class:`SharedLimits`); otherwise they hold per
worker process (:class:`LocalLimits`), which is right for one worker. Should
Redis fail mid-run, calls fall back to the per-process limits rather than fail.
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from django.core.cache import caches

logger = logging.getLogger(__name__)

# A slot is leased for the call's whole-response deadline plus this; a worker that dies
# holding one loses it when the lease runs out, instead of holding it forever.
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


class LocalLimits:
    """The limits of one judge within this process: a semaphore and a :class:`RateLimiter`."""

    def __init__(self, *, concurrency: int, per_minute: float, clock: Callable[[], float] = time.monotonic):
        self.concurrency = concurrency
        self.per_minute = per_minute
        self.rate = RateLimiter(per_minute, clock=clock)
        self._calls = threading.BoundedSemaphore(concurrency) if concurrency > 0 else None

    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot | None:
        if self._calls is None:
            return self.rate.hold()
        while not self._calls.acquire(timeout=POLL_SECONDS / 4):
            if should_stop():
                return None
        wait, at = self.rate.reserve()
        return Slot(wait, at, self._calls.release)


# One Redis round trip takes a place and a send time. Times are microseconds on Redis's
# clock (TIME), the one clock every worker shares; ARGV[5], when not empty, replaces it
# (tests). Places are a sorted set of lease tokens scored by when each lease runs out;
# the send time is a "next free slot" that only moves forward.
#   KEYS: places (zset), next send time (string)
#   ARGV: concurrency (0 = no limit), lease µs, interval µs (0 = no limit), token, now µs or ""
#   -> {1, µs to wait, send time µs} or {0, µs until the first lease runs out, 0}
_ACQUIRE = """
local now
if ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[1])
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZCARD', KEYS[1]) >= limit then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {0, tonumber(first[2]) - now, 0}
  end
end
local slot = now
local interval = tonumber(ARGV[3])
if interval > 0 then
  local free = tonumber(redis.call('GET', KEYS[2]) or '0')
  if free > slot then slot = free end
  redis.call('SET', KEYS[2], string.format('%.0f', slot + interval),
             'PX', math.floor((slot + interval - now) / 1000) + 1000)
end
if limit > 0 then
  local expires = slot + tonumber(ARGV[2])
  redis.call('ZADD', KEYS[1], string.format('%.0f', expires), ARGV[4])
  local ttl = math.floor((expires - now) / 1000) + 1000
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return {1, slot - now, slot}
"""

# Give a place back and wake one waiter (the wake list is capped: a stale wake-up
# only costs a waiter one more look).
#   KEYS: places, wake list; ARGV: token, concurrency
_RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], '1')
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
  redis.call('PEXPIRE', KEYS[2], 60000)
end
return 1
"""


class SharedLimits:
    """The limits of one judge across every process that shares a Redis server."""

    def __init__(
        self,
        *,
        client: Any,
        key: str,
        concurrency: int,
        per_minute: float,
        lease_seconds: float,
        fallback: Limits | None = None,
        clock: Callable[[], float] | None = None,
    ):
        """``client`` is a redis-py client; ``key`` names the judge (it is a Redis hash tag, so one
        judge's keys stay on one cluster node); ``clock`` replaces Redis's clock (tests)."""
        import redis

        self._errors = redis.RedisError
        self.concurrency = concurrency
        self.per_minute = per_minute
        self._client = client
        self._keys = [f"{{{key}}}:places", f"{{{key}}}:next", f"{{{key}}}:wake"]
        self._interval_us = round(60e6 / per_minute) if per_minute and per_minute > 0 else 0
        self._lease_us = round(lease_seconds * 1e6)
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._fallback = fallback or LocalLimits(concurrency=concurrency, per_minute=per_minute)
        self._clock = clock
        self._warned = False

    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot | None:
        if self.concurrency <= 0 and not self._interval_us:
            return Slot()
        token = uuid.uuid4().hex
        while True:
            now = "" if self._clock is None else str(round(self._clock() * 1e6))
            try:
                got, micros, at = self._acquire(
                    keys=self._keys[:2],
                    args=[self.concurrency, self._lease_us, self._interval_us, token, now],
                )
            except self._errors as exc:
                return self._degrade(exc, should_stop)
            if got:
                release = partial(self._give_back, token) if self.concurrency > 0 else _nothing
                return Slot(micros / 1e6, at / 1e6, release)
            if should_stop():
                return None
            # Full: sleep until a holder gives a place back (it pushes a wake-up) or the
            # first lease runs out, whichever is sooner.
            pause = min(max(micros / 1e6, 0.001), POLL_SECONDS)
            try:
                self._client.blpop([self._keys[2]], timeout=pause)
            except self._errors:
                time.sleep(pause)

    def _give_back(self, token: str) -> None:
        try:
            self._release(keys=[self._keys[0], self._keys[2]], args=[token, self.concurrency])
        except self._errors as exc:  # the lease runs out on its own
            logger.warning("could not give back a call slot (%s): it is freed when its lease runs out", exc)

    def _degrade(self, exc: Exception, should_stop: Callable[[], bool]) -> Slot | None:
        if not self._warned:
            self._warned = True
            logger.warning("call limits in Redis unavailable (%s): limiting per worker process", exc)
        return self._fallback.hold(should_stop=should_stop)


_local: dict[str, LocalLimits] = {}
_local_lock = threading.Lock()


def local_limits(*, key: str, concurrency: int, per_minute: float) -> LocalLimits:
    """This process's limits for ``key``, shared by every run of that judge in the process."""
    with _local_lock:
        limits = _local.get(key)
        if limits is None or (limits.concurrency, limits.per_minute) != (concurrency, per_minute):
            limits = _local[key] = LocalLimits(concurrency=concurrency, per_minute=per_minute)
        return limits


def call_limits(*, scope: str, pk: int, concurrency: int, per_minute: float, timeout: float) -> Limits:
    """The limits of the judge (``scope="judge"``) or generator with primary key ``pk``.

    Shared through Redis when Django's default cache is Redis, else per process.
    ``timeout`` is a call's whole-response deadline: a slot's lease outlives it a little.
    """
    from django.core.cache.backends.redis import RedisCache

    key = f"{scope}:{pk}"
    local = local_limits(key=key, concurrency=concurrency, per_minute=per_minute)
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        return local
    return SharedLimits(
        client=cache._cache.get_client(write=True),
        key=cache.make_key(f"funnybone:limits:{key}"),
        concurrency=concurrency,
        per_minute=per_minute,
        lease_seconds=timeout + LEASE_SLACK_SECONDS,
        fallback=local,
    )
