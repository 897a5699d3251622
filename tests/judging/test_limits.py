"""Call limits within one process: the rate limiter's slot arithmetic, the concurrency
semaphore, and how ``ask`` holds a slot around each call (fake clock, fake backend)."""

import random

import pytest

from judging.backends.chat import CallError, Completion
from judging.limits import LocalLimits, RateLimiter, call_limits
from judging.parsing import Parsed
from judging.retry import ABANDONED, FAILED, OK, RetryPolicy, ask


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class TestTheRateLimitersSlots:
    def test_back_to_back_reservations_are_one_interval_apart(self):
        clock = FakeClock()
        limiter = RateLimiter(60, clock=clock)
        slots = [limiter.reserve() for _ in range(3)]
        assert slots == [(0.0, 1000.0), (1.0, 1001.0), (2.0, 1002.0)]

    def test_time_that_passed_counts_towards_the_wait(self):
        clock = FakeClock()
        limiter = RateLimiter(60, clock=clock)
        limiter.reserve()
        limiter.reserve()  # next free slot: 1002
        clock.now = 1001.5
        assert limiter.reserve() == (0.5, 1002.0)

    def test_an_idle_limiter_does_not_bank_slots_for_a_burst(self):
        clock = FakeClock()
        limiter = RateLimiter(60, clock=clock)
        limiter.reserve()
        clock.now = 1100.0
        assert [limiter.reserve()[0] for _ in range(3)] == [0.0, 1.0, 2.0]

    def test_no_limit_never_waits(self):
        limiter = RateLimiter(0, clock=FakeClock())
        assert [limiter.reserve()[0] for _ in range(5)] == [0.0] * 5


class TestTheProcessLimits:
    def test_a_slot_carries_its_wait_and_send_time(self):
        limits = LocalLimits(concurrency=2, per_minute=30, clock=FakeClock(50.0))
        first, second = limits.hold(), limits.hold()
        assert (first.wait, first.at) == (0.0, 50.0)
        assert (second.wait, second.at) == (2.0, 52.0)

    def test_no_more_than_concurrency_slots_are_held(self):
        limits = LocalLimits(concurrency=2, per_minute=0)
        held = [limits.hold(), limits.hold()]
        assert limits.hold(should_stop=lambda: True) is None
        held[0].release()
        assert limits.hold(should_stop=lambda: True) is not None

    def test_every_run_of_a_judge_in_the_process_shares_its_limits(self, settings):
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        first = call_limits(scope="judge", pk=9101, concurrency=3, per_minute=10, timeout=5)
        assert isinstance(first, LocalLimits)
        assert call_limits(scope="judge", pk=9101, concurrency=3, per_minute=10, timeout=5) is first
        assert call_limits(scope="generator", pk=9101, concurrency=3, per_minute=10, timeout=5) is not first

    def test_changed_settings_take_effect_on_the_next_run(self, settings):
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        before = call_limits(scope="judge", pk=9102, concurrency=3, per_minute=10, timeout=5)
        after = call_limits(scope="judge", pk=9102, concurrency=1, per_minute=10, timeout=5)
        assert after is not before
        assert after.concurrency == 1


class CountingLimits:
    """Wraps real limits and counts the slots held at once."""

    def __init__(self, inner):
        self.inner = inner
        self.held = 0
        self.taken = 0

    def hold(self, *, should_stop=lambda: False):
        slot = self.inner.hold(should_stop=should_stop)
        if slot is None:
            return None
        self.held += 1
        self.taken += 1
        inner_release = slot.release

        def release():
            self.held -= 1
            inner_release()

        return type(slot)(slot.wait, slot.at, release)

    def observe(self, *, started, seconds, timed_out):
        self.inner.observe(started=started, seconds=seconds, timed_out=timed_out)


class FakeBackend:
    structured_mode = "off"

    def __init__(self, *outcomes, limits=None):
        self.outcomes = list(outcomes)
        self.limits = limits
        self.held_during_calls: list[int] = []

    def complete(self, messages, schema):
        self.held_during_calls.append(self.limits.held if self.limits else 0)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return Completion(outcome, "{}", 1, 1, 5, "stop")

    def downgrade_structured_output(self, mode):
        pass


def parse_digit(text):
    return Parsed(value=int(text), method="fallback") if text and text.isdigit() else Parsed(error="not a digit")


def ask_with(backend, limits, **kwargs):
    waits = []
    answer = ask(
        backend=backend,
        messages=[{"role": "user", "content": "?"}],
        schema=None,
        parse=parse_digit,
        policy=RetryPolicy(max_retries=2, base_seconds=0.01),
        limiter=limits,
        rng=random.Random(1),
        sleep=lambda seconds: waits.append(seconds) if seconds > 0 else None,
        **kwargs,
    )
    return answer, waits


class TestAskHoldsASlotPerCall:
    def test_each_call_holds_one_slot_and_gives_it_back(self):
        limits = CountingLimits(LocalLimits(concurrency=1, per_minute=0))
        backend = FakeBackend(CallError("HTTP 503", retryable=True), "prose", "2", limits=limits)
        answer, _ = ask_with(backend, limits)
        assert answer.status == OK
        assert backend.held_during_calls == [1, 1, 1]
        assert (limits.taken, limits.held) == (3, 0)

    def test_a_call_that_fails_for_good_gives_its_slot_back(self):
        limits = CountingLimits(LocalLimits(concurrency=1, per_minute=0))
        answer, _ = ask_with(FakeBackend(CallError("HTTP 401", retryable=False)), limits)
        assert answer.status == FAILED
        assert limits.held == 0

    def test_an_unexpected_error_still_gives_the_slot_back(self):
        limits = CountingLimits(LocalLimits(concurrency=1, per_minute=0))
        with pytest.raises(RuntimeError):
            ask_with(FakeBackend(RuntimeError("boom")), limits)
        assert limits.held == 0

    def test_the_wait_for_the_send_time_goes_through_the_sleep_given(self):
        limits = LocalLimits(concurrency=4, per_minute=60, clock=FakeClock())
        limits.hold().release()  # the next send time is now one second away
        _, waits = ask_with(FakeBackend("1"), limits)
        assert waits == [1.0]

    def test_a_run_cancelled_while_every_slot_is_taken_sends_nothing(self):
        limits = LocalLimits(concurrency=1, per_minute=0)
        taken = limits.hold()
        backend = FakeBackend("1")
        answer, _ = ask_with(backend, limits, should_stop=lambda: True)
        assert answer.status == ABANDONED
        assert backend.held_during_calls == []
        taken.release()

    def test_a_bare_rate_limiter_still_works_as_the_limits(self):
        answer, waits = ask_with(FakeBackend("3"), RateLimiter(0))
        assert answer.status == OK
        assert waits == []
