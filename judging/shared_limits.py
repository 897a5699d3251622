"""The limits of one judge held in Redis, across every worker process and machine (``judging.limits``).

A judge's places are a sorted set of lease tokens in Redis, its next send time
a key beside it; a Lua script takes a place and a send time in one round trip.
A call's place is handed to this process's next call without a round trip, and
given back to Redis when no call took it within ``SPARE_SECONDS``.
"""

import itertools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from .limits import POLL_SECONDS, LocalLimits, Slot, _never

logger = logging.getLogger(__name__)

# A place given back by a call is kept this long for this process's next call before it goes back to
# Redis: a busy run hands places from call to call with no round trip (see SharedLimits).
SPARE_SECONDS = 0.05


def _lua_now(arg: int) -> str:
    """Lua setting ``now``: microseconds on Redis's clock, or ARGV[arg] when that is not empty (tests)."""
    return f"""
local now
if ARGV[{arg}] ~= '' then
  now = tonumber(ARGV[{arg}])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end"""


# One Redis round trip takes a place and a send time. Times are microseconds on Redis's
# clock (TIME), the one clock every worker shares; ARGV[5], when not empty, replaces it
# (tests). Places are a sorted set of lease tokens scored by when each lease runs out;
# the send time is a "next free slot" that only moves forward. ARGV[6], when not empty,
# is a place this process gives back in the same trip (its next call takes one at once).
#   KEYS: places (zset), next send time (string)
#   ARGV: concurrency (0 = no limit), lease µs, interval µs (0 = no limit), token, now µs or "",
#         token given back or ""
#   -> {1, µs to wait, send time µs} or {0, µs until the first lease runs out, 0}
_ACQUIRE = (
    _lua_now(5)
    + """
if ARGV[6] ~= '' then redis.call('ZREM', KEYS[1], ARGV[6]) end
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
)

# Give places back and wake as many waiters (the wake list is capped: a stale wake-up
# only costs a waiter one more look).
#   KEYS: places, wake list; ARGV: concurrency, then the tokens
_RELEASE = """
local freed = redis.call('ZREM', KEYS[1], unpack(ARGV, 2))
for i = 1, freed do redis.call('RPUSH', KEYS[2], '1') end
if freed > 0 then
  redis.call('LTRIM', KEYS[2], -math.max(tonumber(ARGV[1]), 1), -1)
  redis.call('PEXPIRE', KEYS[2], 60000)
end
return freed
"""


# Push the leases of the slots this worker still holds a lease further (never shorter).
#   KEYS: places; ARGV: lease µs, now µs or "", then the tokens
_RENEW = (
    _lua_now(2)
    + """
local expires = now + tonumber(ARGV[1])
local renewed = 0
for i = 3, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) < expires then
    redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', expires), ARGV[i])
    renewed = renewed + 1
  end
end
return renewed
"""
)

# The slots this process holds in Redis, by SharedLimits (in calls, or spare), each with when its lease was
# last set (time.monotonic): what renew_held_slots renews.
_held: dict["SharedLimits", dict[str, float]] = {}
_held_lock = threading.Lock()


def renew_held_slots() -> int:
    """Renew the leases of every call slot this process holds (called with a run's heartbeat): a live
    worker keeps its slots however long its calls take; a dead one stops renewing and loses them within
    a lease. The number of slots renewed."""
    with _held_lock:
        held = [(limits, list(tokens)) for limits, tokens in _held.items() if tokens]
    return sum(limits.renew(tokens) for limits, tokens in held)


class _Spares:
    """Places this process's calls gave back, kept ``SPARE_SECONDS`` for its next call (one lock for all
    judges), and the thread that gives back to Redis the ones no call took in time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: dict[SharedLimits, deque[tuple[str, float]]] = {}
        self._thread: threading.Thread | None = None

    def keep(self, limits: "SharedLimits", token: str) -> None:
        with self.lock:
            self.kept.setdefault(limits, deque()).append((token, time.monotonic()))
            if self._thread is None:
                self._thread = threading.Thread(target=self._give_back_unused, name="call-slot-spares", daemon=True)
                self._thread.start()

    def take(self, limits: "SharedLimits") -> str | None:
        with self.lock:
            kept = self.kept.get(limits)
            return kept.pop()[0] if kept else None

    def take_all(self, limits: "SharedLimits", *, older_than: float = float("inf")) -> list[str]:
        with self.lock:
            kept = self.kept.get(limits)
            tokens = []
            while kept and kept[0][1] < older_than:
                tokens.append(kept.popleft()[0])
            if not kept:
                self.kept.pop(limits, None)
            return tokens

    def _give_back_unused(self) -> None:
        while True:
            time.sleep(SPARE_SECONDS)
            with self.lock:
                if not self.kept:
                    self._thread = None
                    return
                judges = list(self.kept)
            for limits in judges:
                limits.give_back(self.take_all(limits, older_than=time.monotonic() - SPARE_SECONDS))


_spares = _Spares()


class SharedLimits:
    """The limits of one judge across every process that shares a Redis server.

    Redis holds the judge's ``concurrency`` (the quota's ceiling) across processes. A width that adapts
    to the endpoint's latency (``judging.concurrency``) is this process's: it bounds the calls this
    process has in flight, as TCP's window bounds one connection's, because it is learned from this
    process's calls; held against the Redis total, a process that starts at one place found the places
    taken by another and never got one. Every process cuts its width when the endpoint queues, so
    together they settle on what it serves.

    A call's place is not given back to Redis at once: this process's next call takes it over with no
    round trip (its lease renewed with the heartbeat, as every held slot's); a place no call took within
    ``SPARE_SECONDS`` goes back. With a rate limit the next call still needs a send time, and gives the
    place back in the same round trip that takes it.
    """

    def __init__(
        self,
        *,
        client: Any,
        key: str,
        concurrency: int,
        per_minute: float,
        lease_seconds: float,
        fallback: LocalLimits | None = None,
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
        self._renew = client.register_script(_RENEW)
        self._fallback = fallback or LocalLimits(concurrency=concurrency, per_minute=per_minute)
        # The per-process fallback's width, so a fall back to it keeps what was learned.
        self.width = self._fallback.width
        # Adaptive: this process's calls take a place among the width's in the fallback as well.
        self._gate = None if self.width.fixed else self._fallback
        # Tokens unique across processes without a uuid per call.
        self._prefix = f"{uuid.uuid4().hex[:12]}:"
        self._numbers = itertools.count()
        self._clock = clock
        self._warned = False

    def hold(self, *, should_stop: Callable[[], bool] = _never) -> Slot | None:
        if self.concurrency <= 0:
            return self._hold_rate_only(should_stop)
        spare = _spares.take(self)
        if spare is not None and self._gate is not None and self._gate.over_width:
            self.give_back([spare])  # the width was cut: this place stays free
            spare = None
        if spare is not None and not self._interval_us and self._lease_is_fresh(spare):
            return Slot(0.0, self._now(), partial(_spares.keep, self, spare))
        if spare is None and self._gate is not None and not self._gate.take_place(should_stop=should_stop):
            return None
        while True:
            token = f"{self._prefix}{next(self._numbers)}"
            try:
                got, micros, at = self._acquire(
                    keys=self._keys[:2],
                    args=[self.concurrency, self._lease_us, self._interval_us, token, self._now_arg(), spare or ""],
                )
            except self._errors as exc:
                if spare is not None:  # its lease runs out on its own; its place here goes to this call
                    self._forget([spare], places=False)
                return self._degrade(exc, should_stop)
            if spare is not None:
                self._forget([spare], places=False)  # its place went to this call, or back to Redis
                spare = None
            if got:
                with _held_lock:
                    _held.setdefault(self, {})[token] = time.monotonic()
            if got:
                return Slot(micros / 1e6, at / 1e6, partial(_spares.keep, self, token))
            if should_stop():
                if self._gate is not None:
                    self._gate.give_place()
                return None
            # Full: sleep until a holder gives a place back (it pushes a wake-up) or the
            # first lease runs out, whichever is sooner.
            pause = min(max(micros / 1e6, 0.001), POLL_SECONDS)
            try:
                self._client.blpop([self._keys[2]], timeout=pause)
            except self._errors:
                time.sleep(pause)

    def _hold_rate_only(self, should_stop: Callable[[], bool]) -> Slot | None:
        if not self._interval_us:
            return Slot()
        try:
            _got, micros, at = self._acquire(
                keys=self._keys[:2], args=[0, self._lease_us, self._interval_us, "", self._now_arg(), ""]
            )
        except self._errors as exc:
            return self._degrade(exc, should_stop)
        return Slot(micros / 1e6, at / 1e6)

    def _lease_is_fresh(self, token: str) -> bool:
        """The token's lease was set within half a lease: a call may take it over as it is. (Outside a run's
        heartbeat, nothing renews a place handed from call to call; an older one is taken anew.)"""
        with _held_lock:
            leased = _held.get(self, {}).get(token, 0.0)
        return time.monotonic() - leased < self._lease_us / 2e6

    def _now_arg(self) -> str:
        return "" if self._clock is None else str(round(self._clock() * 1e6))

    def _now(self) -> float:
        return time.time() if self._clock is None else self._clock()

    def observe(self, *, started: float, seconds: float, timed_out: bool) -> None:
        self.width.observe(started=started, seconds=seconds, timed_out=timed_out)

    def renew(self, tokens: list[str]) -> int:
        """Push the leases of ``tokens`` (slots this process holds) a lease further; how many were renewed."""
        try:
            renewed = int(self._renew(keys=[self._keys[0]], args=[self._lease_us, self._now_arg(), *tokens]))
        except self._errors as exc:  # they run out on their own; the call goes on
            logger.warning("could not renew %d call slots (%s)", len(tokens), exc)
            return 0
        now = time.monotonic()
        with _held_lock:
            held = _held.get(self, {})
            for token in tokens:
                if token in held:
                    held[token] = now
        return renewed

    def give_back(self, tokens: list[str]) -> None:
        """Give places this process holds back to Redis now (waking as many waiters)."""
        if not tokens:
            return
        self._forget(tokens)
        try:
            self._release(keys=[self._keys[0], self._keys[2]], args=[self.concurrency, *tokens])
        except self._errors as exc:  # the leases run out on their own
            logger.warning("could not give back %d call slots (%s): freed when their leases run out", len(tokens), exc)

    def close(self) -> None:
        """Give back the places kept for a next call (a run that ends leaves none held)."""
        self.give_back(_spares.take_all(self))

    def _forget(self, tokens: list[str], *, places: bool = True) -> None:
        with _held_lock:
            held = _held.get(self)
            if held is not None:
                for token in tokens:
                    held.pop(token, None)
                if not held:
                    del _held[self]
        if places and self._gate is not None:
            for _ in tokens:
                self._gate.give_place()

    def _degrade(self, exc: Exception, should_stop: Callable[[], bool]) -> Slot | None:
        if not self._warned:
            self._warned = True
            logger.warning("call limits in Redis unavailable (%s): limiting per worker process", exc)
        if self._gate is not None:  # this call holds its place in the fallback already
            wait, at = self._fallback.rate.reserve()
            return Slot(wait, at, self._gate.give_place)
        return self._fallback.hold(should_stop=should_stop)
