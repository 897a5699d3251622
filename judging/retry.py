"""Asking a model until it answers: retries, exponential backoff with jitter, rate limiting.

The retry budget covers transport failures (timeouts, HTTP 429 and 5xx,
connection errors, bodies that are not a chat completion) and answers that
cannot be parsed alike: ``max_retries`` more tries after the first. HTTP 429's
Retry-After is honoured (up to a cap). A client error such as 401 is final at
once. After the budget, the outcome is "unparseable" when at least one answer
came back and none could be read, else "failed".
"""

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backends.chat import CallError, ChatBackend, Completion, StructuredOutputRejected
from .parsing import Parsed

OK, UNPARSEABLE, FAILED, ABANDONED = "ok", "unparseable", "failed", "abandoned"


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_seconds: float = 1.0
    cap_seconds: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, retry: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): equal jitter over an exponential step."""
        step = min(self.cap_seconds, self.base_seconds * 2**retry)
        backoff = step / 2 + rng.uniform(0, step / 2)
        if retry_after is not None:
            return min(max(retry_after, backoff), self.max_retry_after)
        return backoff


class RateLimiter:
    """Spaces calls at least 60/per_minute seconds apart, across threads. 0 = no limit."""

    def __init__(self, per_minute: float, *, clock: Callable[[], float] = time.monotonic):
        self.interval = 60.0 / per_minute if per_minute and per_minute > 0 else 0.0
        self._clock = clock
        self._next = 0.0
        self._lock = threading.Lock()

    def wait_time(self) -> float:
        """Reserve the next slot and return how long to wait for it."""
        if not self.interval:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
            return slot - now


@dataclass
class Answer:
    status: str
    parsed: Parsed | None = None
    completion: Completion | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    structured_output: str = "off"
    refusals: list[str] = field(default_factory=list)

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
    limiter: RateLimiter,
    rng: random.Random,
    should_stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Answer:
    attempts: list[dict[str, Any]] = []
    refusals: list[str] = []
    got_answer = False
    delay = 0.0
    last: Completion | None = None
    last_error = ""
    while len(attempts) <= policy.max_retries:
        if attempts:
            if should_stop():
                return Answer(ABANDONED, attempts=attempts, error="cancelled", refusals=refusals)
            sleep(delay)
        sleep(limiter.wait_time())
        try:
            completion = backend.complete(messages, schema)
        except StructuredOutputRejected as exc:
            # Send the schema another way (or not at all) and ask again at once. Not charged
            # to the retry budget: there are only two ways to step down.
            refusals.append(str(exc))
            backend.downgrade_structured_output(exc.mode)
            continue
        except CallError as exc:
            record: dict[str, Any] = {"attempt": len(attempts) + 1, "error": str(exc)}
            last_error = str(exc)
            if exc.raw:
                record["raw"] = exc.raw[:2000]
            attempts.append(record)
            if not exc.retryable:
                break
            delay = policy.delay(len(attempts) - 1, rng, exc.retry_after)
            continue
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
    return Answer(
        status, None, last, attempts, error=last_error, structured_output=backend.structured_mode, refusals=refusals
    )
