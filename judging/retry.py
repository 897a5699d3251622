"""Asking a model until it answers: retries, exponential backoff with jitter, call limits.

The retry budget covers transport failures (timeouts, HTTP 429 and 5xx,
connection errors, bodies that are not a chat completion) and answers that
cannot be parsed alike: ``max_retries`` more tries after the first. A
transport failure is also retried, beyond those tries, while the whole
question has taken less than ``max_elapsed_seconds`` (waits included): an
endpoint that restarts for a minute is waited out instead of failing every
unit in flight. Waits grow exponentially up to ``cap_seconds``, so the first
try after the endpoint is back comes soon. That patience is for an endpoint that
went away: while the endpoint has never answered (the backend's ``answered``), a
refused connection or a name that does not resolve gets the ``max_retries`` tries
only, and the answer says the endpoint is down (``Answer.endpoint_down``), so the
run can pause with that reason instead of failing every unit the same way.
HTTP 429's Retry-After is honoured (up to a cap). A client error such as 401 is final at once. After the budget,
the outcome is "unparseable" when at least one answer came back and none
could be read, else "failed", and the error says how many tries over how long.

Each call holds a slot of the judge's limits (``judging.limits``) while it is
sent: a place among the calls in flight and a send time. Waits between
retries hold none. How long each call took (or that it timed out) goes back to
the limits, whose number of places may follow it (``judging.concurrency``).
"""

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backends.chat import CallError, ChatBackend, Completion, StructuredOutputRejected
from .limits import Limits, RateLimiter, Slot
from .parsing import Parsed

OK, UNPARSEABLE, FAILED, ABANDONED = "ok", "unparseable", "failed", "abandoned"

# RateLimiter lives in judging.limits now; it stays importable from here.
__all__ = ["ABANDONED", "FAILED", "OK", "UNPARSEABLE", "Answer", "RateLimiter", "RetryPolicy", "ask"]


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_seconds: float = 1.0
    cap_seconds: float = 15.0
    max_retry_after: float = 120.0
    # Transport failures are retried past ``max_retries`` until this much time has gone by; 0 = tries only.
    max_elapsed_seconds: float = 0.0

    def may_retry(
        self, *, tries: int, elapsed: float, delay: float, transport: bool, endpoint_down: bool = False
    ) -> bool:
        """Whether to try again after ``tries`` tries that took ``elapsed`` seconds, waiting ``delay`` first.

        ``endpoint_down``: the last try could not reach an endpoint that has never answered, so it is not
        waited out past the tries (a mistyped address would otherwise cost minutes per unit).
        """
        if tries <= self.max_retries:
            return True
        return transport and not endpoint_down and elapsed + delay <= self.max_elapsed_seconds

    def delay(self, retry: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): equal jitter over an exponential step."""
        step = min(self.cap_seconds, self.base_seconds * 2**retry)
        backoff = step / 2 + rng.uniform(0, step / 2)
        if retry_after is not None:
            return min(max(retry_after, backoff), self.max_retry_after)
        return backoff


@dataclass
class Answer:
    status: str
    parsed: Parsed | None = None
    completion: Completion | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    structured_output: str = "off"
    refusals: list[str] = field(default_factory=list)
    # Failed because the endpoint could not be reached and had never answered: a reason to pause the run.
    endpoint_down: bool = False

    @property
    def prompt_tokens(self) -> int:
        return sum(a.get("prompt_tokens") or 0 for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        return sum(a.get("completion_tokens") or 0 for a in self.attempts)


def ask(
    *,
    backend: ChatBackend,
    messages: list[dict[str, str]],
    schema: dict[str, Any] | None,
    parse: Callable[[str | None], Parsed],
    policy: RetryPolicy,
    limiter: Limits,
    rng: random.Random,
    should_stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Answer:
    attempts: list[dict[str, Any]] = []
    refusals: list[str] = []
    got_answer = False
    delay = 0.0
    # Seconds spent on this question: calls as measured by ``clock`` plus the waits asked of ``sleep``
    # (counted as asked, so a test's instant sleep still uses up the budget).
    elapsed = 0.0
    transport_failure = endpoint_down = False
    last: Completion | None = None
    last_error = ""
    while not attempts or policy.may_retry(
        tries=len(attempts), elapsed=elapsed, delay=delay, transport=transport_failure, endpoint_down=endpoint_down
    ):
        if attempts:
            if should_stop():
                return Answer(ABANDONED, attempts=attempts, error="cancelled", refusals=refusals)
            sleep(delay)
            elapsed += delay
        slot = limiter.hold(should_stop=should_stop)
        if slot is None:  # cancelled while every slot was taken: nothing was sent
            return Answer(ABANDONED, attempts=attempts, error="cancelled", refusals=refusals)
        started = clock()
        try:
            completion = _send(backend, messages, schema, slot, sleep, limiter)
        except StructuredOutputRejected as exc:
            # Send the schema another way (or not at all) and ask again at once. Not charged
            # to the retry budget: there are only two ways to step down.
            refusals.append(str(exc))
            backend.downgrade_structured_output(exc.mode)
            continue
        except CallError as exc:
            elapsed += max(0.0, clock() - started)
            record: dict[str, Any] = {"attempt": len(attempts) + 1, "error": str(exc)}
            last_error = str(exc)
            if exc.raw:
                record["raw"] = exc.raw[:2000]
            attempts.append(record)
            endpoint_down = exc.unreachable and not getattr(backend, "answered", False)
            if not exc.retryable:
                break
            transport_failure = True
            delay = policy.delay(len(attempts) - 1, rng, exc.retry_after)
            continue
        elapsed += max(0.0, clock() - started)
        transport_failure = endpoint_down = False
        got_answer, last = True, completion
        record = {
            "attempt": len(attempts) + 1,
            "latency_ms": completion.latency_ms,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "finish_reason": completion.finish_reason,
        }
        attempts.append(record)
        parsed = parse(completion.content)
        if parsed.ok:
            return Answer(
                OK, parsed, completion, attempts, structured_output=backend.structured_mode, refusals=refusals
            )
        record["parse_error"] = last_error = parsed.error
        record["content"] = (completion.content or "")[:2000]
        delay = policy.delay(len(attempts) - 1, rng)
    status = UNPARSEABLE if got_answer else FAILED
    tries = len(attempts)
    error = f"{last_error} (gave up after {tries} {'try' if tries == 1 else 'tries'} over {elapsed:.1f} s)"
    return Answer(
        status,
        None,
        last,
        attempts,
        error=error,
        structured_output=backend.structured_mode,
        refusals=refusals,
        endpoint_down=endpoint_down and not got_answer,
    )


def _send(
    backend: ChatBackend, messages, schema, slot: Slot, sleep: Callable[[float], None], limiter: Limits
) -> Completion:
    try:
        sleep(slot.wait)
        # Timed from here: the wait for a place and a send time above is ours, not the endpoint's.
        sent = time.monotonic()
        try:
            completion = backend.complete(messages, schema)
        except CallError as exc:
            if exc.timed_out:
                limiter.observe(started=sent, seconds=time.monotonic() - sent, timed_out=True)
            raise
        limiter.observe(started=sent, seconds=time.monotonic() - sent, timed_out=False)
        return completion
    finally:
        slot.release()
