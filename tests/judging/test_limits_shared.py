"""Call limits held in Redis: one judge's slots and send times across threads, worker
processes and a worker that dies holding a slot. Needs Redis (skipped locally without it,
failing where FUNNYBONE_REQUIRE_SERVICES is set)."""

import multiprocessing
import os
import signal
import threading
import time
import uuid

import pytest

from judging.limits import LocalLimits, call_limits
from judging.shared_limits import SharedLimits, renew_held_slots


@pytest.fixture
def redis_client(broker_url):
    import redis

    return redis.Redis.from_url(broker_url)


@pytest.fixture
def judge_key(redis_client):
    key = f"test-limits:{uuid.uuid4().hex}"
    yield key
    redis_client.delete(*(f"{{{key}}}:{part}" for part in ("places", "next", "wake", "test-in-flight")))


def shared(client, key, *, concurrency=0, per_minute=0, lease_seconds=30.0, clock=None):
    return SharedLimits(
        client=client,
        key=key,
        concurrency=concurrency,
        per_minute=per_minute,
        lease_seconds=lease_seconds,
        clock=clock,
    )


class FakeClock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def try_hold(limits):
    return limits.hold(should_stop=lambda: True)


def hold_within(limits, *, seconds):
    give_up = time.monotonic() + seconds  # a bail-out, not a measurement
    return limits.hold(should_stop=lambda: time.monotonic() > give_up)


class CountingScripts:
    """Counts the Redis round trips a SharedLimits makes to take a place."""

    def __init__(self, limits):
        self.takes = 0
        self._acquire = limits._acquire
        limits._acquire = self

    def __call__(self, **kwargs):
        self.takes += 1
        return self._acquire(**kwargs)


class TestTheSharedSlotArithmetic:
    """Redis's script with a fake clock: the same sums as the per-process limiter."""

    def test_reservations_from_two_workers_are_one_interval_apart(self, redis_client, judge_key):
        clock = FakeClock()
        one = shared(redis_client, judge_key, per_minute=60, clock=clock)
        two = shared(redis_client, judge_key, per_minute=60, clock=clock)
        slots = [one.hold(), two.hold(), one.hold()]
        assert [s.wait for s in slots] == [0.0, 1.0, 2.0]
        assert [s.at - clock.now for s in slots] == [0.0, 1.0, 2.0]

    def test_time_that_passed_counts_towards_the_wait(self, redis_client, judge_key):
        clock = FakeClock()
        limits = shared(redis_client, judge_key, per_minute=60, clock=clock)
        limits.hold()
        limits.hold()
        clock.now += 1.5
        assert limits.hold().wait == 0.5

    def test_an_idle_judge_does_not_bank_slots_for_a_burst(self, redis_client, judge_key):
        clock = FakeClock()
        limits = shared(redis_client, judge_key, per_minute=60, clock=clock)
        limits.hold()
        clock.now += 100
        assert [limits.hold().wait for _ in range(3)] == [0.0, 1.0, 2.0]

    def test_no_rate_limit_never_waits(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=5, clock=FakeClock())
        assert [limits.hold().wait for _ in range(5)] == [0.0] * 5


class TestTheSharedConcurrency:
    def test_two_workers_together_hold_no_more_than_the_limit(self, redis_client, judge_key):
        one = shared(redis_client, judge_key, concurrency=2)
        two = shared(redis_client, judge_key, concurrency=2)
        held = [one.hold(), two.hold()]
        assert try_hold(one) is None
        assert try_hold(two) is None
        held[1].release()  # kept a moment for two's next call, then free for anyone
        assert hold_within(one, seconds=5) is not None

    def test_a_crashed_holders_slot_is_reclaimed_when_its_lease_runs_out(self, redis_client, judge_key):
        clock = FakeClock()
        crashed = shared(redis_client, judge_key, concurrency=1, lease_seconds=30, clock=clock)
        survivor = shared(redis_client, judge_key, concurrency=1, lease_seconds=30, clock=clock)
        crashed.hold()  # and never gives it back
        clock.now += 29
        assert try_hold(survivor) is None
        clock.now += 2
        assert try_hold(survivor) is not None

    def test_the_lease_runs_from_the_send_time_not_from_the_reservation(self, redis_client, judge_key):
        clock = FakeClock()
        limits = shared(redis_client, judge_key, concurrency=2, per_minute=6, lease_seconds=30, clock=clock)
        limits.hold()
        waiting = limits.hold()  # sent 10 s from now, so leased until 40 s from now
        assert waiting.wait == 10.0
        clock.now += 35
        assert try_hold(limits) is not None  # the first lease ran out; the waiting call's did not
        assert try_hold(limits) is None

    def test_a_living_holder_keeps_its_slot_past_the_lease_by_renewing_it(self, redis_client, judge_key):
        clock = FakeClock()
        holder = shared(redis_client, judge_key, concurrency=1, lease_seconds=30, clock=clock)
        other = shared(redis_client, judge_key, concurrency=1, lease_seconds=30, clock=clock)
        slot = holder.hold()  # a call that lasts longer than one lease
        for _ in range(3):
            clock.now += 20
            assert renew_held_slots() >= 1
            assert try_hold(other) is None
        slot.release()
        holder.close()
        assert try_hold(other) is not None

    def test_a_slot_given_back_is_no_longer_renewed(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=1, clock=FakeClock())
        limits.hold().release()
        limits.close()
        assert limits.renew([]) == 0
        assert renew_held_slots() == 0

    def test_the_slot_lease_is_the_run_lease_when_that_is_shorter_than_the_timeout(self, settings):
        from django.core.cache import caches
        from django.core.cache.backends.redis import RedisCache

        if not isinstance(caches["default"], RedisCache):
            pytest.skip("the shared limits need Django's cache on Redis")
        settings.FUNNYBONE_JOB_LEASE_SECONDS = 30
        limits = call_limits(scope="judge", pk=999_001, concurrency=1, per_minute=0, timeout=600)
        assert limits._lease_us == 30_000_000

    def test_a_waiter_gets_the_slot_a_holder_gives_back(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=1)
        held = limits.hold()
        got = []
        waiter = threading.Thread(target=lambda: got.append(limits.hold()))
        waiter.start()
        held.release()
        waiter.join(timeout=30)
        assert got and got[0] is not None
        got[0].release()

    def test_a_worker_killed_while_holding_a_slot_loses_it(self, redis_client, judge_key, broker_url):
        context = multiprocessing.get_context("spawn")
        holding = context.Event()
        worker = context.Process(target=hold_and_wait, args=(broker_url, judge_key, holding))
        worker.start()
        try:
            assert holding.wait(timeout=60), "the worker never took its slot"
        finally:
            os.kill(worker.pid, signal.SIGKILL)
            worker.join()
        limits = shared(redis_client, judge_key, concurrency=1, lease_seconds=1)
        give_up = time.monotonic() + 30  # a bail-out, not a measurement: the lease is 1 s
        slot = limits.hold(should_stop=lambda: time.monotonic() > give_up)
        assert slot is not None


class TestAPlaceHandedToTheNextCall:
    def test_the_next_call_of_the_process_takes_it_with_no_round_trip(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=2)
        counted = CountingScripts(limits)
        for _ in range(5):
            limits.hold().release()
        assert counted.takes == 1
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 1
        limits.close()

    def test_with_a_rate_limit_it_is_given_back_in_the_trip_that_takes_the_next(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=2, per_minute=6000, clock=FakeClock())
        counted = CountingScripts(limits)
        waits = []
        for _ in range(3):
            slot = limits.hold()
            waits.append(slot.wait)
            slot.release()
        assert counted.takes == 3
        assert waits == [0.0, 0.01, 0.02]  # still spaced by the rate limit
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 1
        limits.close()

    def test_a_place_whose_lease_is_half_gone_is_taken_anew(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=2, lease_seconds=0.06)
        counted = CountingScripts(limits)
        limits.hold().release()
        time.sleep(0.04)  # no heartbeat renewed it
        limits.hold().release()
        assert counted.takes == 2
        assert redis_client.zcard(f"{{{judge_key}}}:places") <= 1
        limits.close()

    def test_a_place_no_call_takes_goes_back_to_redis(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=2)
        limits.hold().release()
        give_up = time.monotonic() + 5
        while redis_client.zcard(f"{{{judge_key}}}:places") and time.monotonic() < give_up:
            time.sleep(0.01)
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 0
        assert renew_held_slots() == 0

    def test_closing_gives_back_at_once(self, redis_client, judge_key):
        limits = shared(redis_client, judge_key, concurrency=2)
        limits.hold().release()
        limits.close()
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 0

    def test_tokens_are_unique_across_limits_of_one_judge(self, redis_client, judge_key):
        one = shared(redis_client, judge_key, concurrency=4)
        two = shared(redis_client, judge_key, concurrency=4)
        for limits in (one, two, one, two):
            limits.hold()
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 4


class TestAnAdaptiveWidthIsPerProcess:
    def adaptive(self, client, key, *, concurrency):
        from judging.concurrency import AdaptiveWidth

        local = LocalLimits(
            concurrency=concurrency,
            per_minute=0,
            width=AdaptiveWidth(ceiling=concurrency, timeout=30.0),
        )
        return SharedLimits(
            client=client, key=key, concurrency=concurrency, per_minute=0, lease_seconds=30, fallback=local
        )

    def test_a_process_starting_at_one_place_gets_one_while_another_holds_several(self, redis_client, judge_key):
        busy = self.adaptive(redis_client, judge_key, concurrency=8)
        busy.width.observe(started=0.0, seconds=0.2, timed_out=False)  # slow start: up to the ceiling
        held = [busy.hold() for _ in range(5)]
        starting = self.adaptive(redis_client, judge_key, concurrency=8)
        assert starting.width.limit == 1
        assert try_hold(starting) is not None  # it waited for the Redis total to drop below 1
        assert try_hold(starting) is None  # its own width: one call in flight
        assert len(held) == 5

    def test_the_judges_concurrency_still_holds_across_processes(self, redis_client, judge_key):
        one = self.adaptive(redis_client, judge_key, concurrency=3)
        two = self.adaptive(redis_client, judge_key, concurrency=3)
        for limits in (one, two):
            limits.width.observe(started=0.0, seconds=0.2, timed_out=False)
        held = [one.hold(), one.hold(), two.hold()]
        assert try_hold(two) is None
        assert try_hold(one) is None
        assert all(held)

    def test_a_cut_width_lets_a_given_back_place_go(self, redis_client, judge_key):
        limits = self.adaptive(redis_client, judge_key, concurrency=4)
        limits.width.observe(started=0.0, seconds=0.2, timed_out=False)
        held = [limits.hold() for _ in range(4)]
        limits.width.observe(started=0.0, seconds=0.2, timed_out=True)  # 4 -> 2
        held[0].release()
        assert try_hold(limits) is None  # three in flight, width two: the place stayed free
        assert redis_client.zcard(f"{{{judge_key}}}:places") == 3


def hold_and_wait(url, key, holding):
    import redis

    limits = shared(redis.Redis.from_url(url), key, concurrency=1, lease_seconds=1)
    limits.hold()
    holding.set()
    time.sleep(600)


# -- many workers at once --------------------------------------------------------


def hammer(url, key, use_redis, concurrency, per_minute, threads, calls, all_ready, results):
    """One worker process: ``threads`` threads each making ``calls`` calls through the limits,
    counting in Redis how many calls are in flight at once (after taking a slot, before
    giving it back) and noting each call's reserved send time."""
    import redis

    client = redis.Redis.from_url(url)
    if use_redis:
        limits = shared(client, key, concurrency=concurrency, per_minute=per_minute)
    else:  # what every worker did before: its own limits
        limits = LocalLimits(concurrency=concurrency, per_minute=per_minute)
    in_flight_key = f"{{{key}}}:test-in-flight"
    most, sends, lock = [0], [], threading.Lock()

    def call_repeatedly():
        for _ in range(calls):
            slot = limits.hold()
            time.sleep(slot.wait)
            now_in_flight = client.incr(in_flight_key)
            time.sleep(0.003)  # the "call": long enough for others to want the slot
            client.decr(in_flight_key)
            slot.release()
            with lock:
                most[0] = max(most[0], now_in_flight)
                sends.append(slot.at)

    workers = [threading.Thread(target=call_repeatedly) for _ in range(threads)]
    all_ready.wait()  # every process is started and set up: they call at the same time
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put((most[0], sends))


def run_workers(url, key, *, use_redis, concurrency, per_minute=0, processes=3, threads=3, calls=15):
    context = multiprocessing.get_context("spawn")
    all_ready, results = context.Barrier(processes), context.Queue()
    args = (url, key, use_redis, concurrency, per_minute, threads, calls, all_ready, results)
    workers = [context.Process(target=hammer, args=args) for _ in range(processes)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert all(worker.exitcode == 0 for worker in workers)
    most = max(m for m, _ in outcomes)
    sends = sorted(at for _, ats in outcomes for at in ats)
    return most, sends


class TestManyWorkersOnOneJudge:
    def test_calls_in_flight_never_exceed_the_judges_concurrency(self, redis_client, judge_key, broker_url):
        most, sends = run_workers(broker_url, judge_key, use_redis=True, concurrency=2)
        assert len(sends) == 3 * 3 * 15
        assert most == 2  # reached, never passed

    def test_send_times_are_never_closer_than_the_interval(self, redis_client, judge_key, broker_url):
        most, sends = run_workers(broker_url, judge_key, use_redis=True, concurrency=4, per_minute=60_000)
        interval_us = 1000
        gaps_us = [round(b * 1e6) - round(a * 1e6) for a, b in zip(sends, sends[1:], strict=False)]
        assert len(sends) == 3 * 3 * 15
        assert min(gaps_us) >= interval_us
        assert most <= 4

    def test_limits_per_process_let_three_workers_exceed_the_concurrency(self, redis_client, judge_key, broker_url):
        # Issue 4 as it was: each worker kept its own two slots, so the endpoint saw more.
        most, _ = run_workers(broker_url, judge_key, use_redis=False, concurrency=2)
        assert most > 2


class TestJudgesUseTheSharedLimitsWhenTheCacheIsRedis:
    def test_a_judges_limits_live_in_redis(self, settings, broker_url):
        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": broker_url}
        }
        limits = call_limits(scope="judge", pk=987654, concurrency=3, per_minute=120, timeout=5)
        assert isinstance(limits, SharedLimits)
        slot = limits.hold()
        slot.release()

    @pytest.mark.django_db
    def test_a_run_leaves_no_slot_held(self, settings, broker_url, redis_client, make_study, make_llm_judge, no_sleep):
        from django.core.cache import caches

        from judging.services.runs import process_run, run_create

        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": broker_url}
        }
        study = make_study(task_type="ordinal", n_items=6)
        judge = make_llm_judge("ok", concurrency=2, rate_limit_per_minute=6000)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk, sleep=no_sleep)
        run.refresh_from_db()
        assert run.status == "done"
        key = caches["default"].make_key(f"funnybone:limits:judge:{judge.pk}")
        assert redis_client.exists(f"{{{key}}}:next")  # the run reserved its send times in Redis
        assert redis_client.zcard(f"{{{key}}}:places") == 0
