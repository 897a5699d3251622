"""One call to an OpenAI-compatible chat-completions endpoint, classified for the retry policy.

The SDK's own retries are off: ``judging.retry`` decides. The body is read as a
stream with an overall deadline, because the SDK's timeout bounds each read,
not the whole response, and a server that trickles bytes would otherwise hold
a slot for ever. The raw body of an answer is kept for the judgment's provenance;
of an error, only a short scrubbed excerpt (an endpoint's error page may be an
internal service's, and may echo credentials).

Where the backend may connect is ``judging.outbound``'s business: the endpoint is
checked when the backend is made (before every run) and on every connection.
"""

import json
import socket
import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2
import openai

from ..concurrency import server_slots
from ..keys import redact, scrub
from ..outbound import check_endpoint, guarded_client, refusal_in, unreachable_in

RAW_LIMIT = 20_000
# How much of an error body (or of a body that is not a completion) is shown: one line, this long at most.
EXCERPT_LIMIT = 160


STRUCTURED_MODES = ("json_schema", "json_object", "off")
# A chat completion of a few thousand tokens is a few KB; an endpoint streaming more is misbehaving,
# and reading on would let it fill the worker's memory.
MAX_RESPONSE_BYTES = 8 * 2**20


class CallError(Exception):
    """A call that produced no usable answer. ``retryable`` says whether trying again may help."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        raw: str = "",
        unreachable: bool = False,
        timed_out: bool = False,
    ):
        super().__init__(message)
        self.retryable = retryable
        # No whole answer within the timeout: the endpoint may be queueing our calls (judging.concurrency).
        self.timed_out = timed_out
        self.retry_after = retry_after
        self.raw = raw[:RAW_LIMIT]
        # Nothing answered at all: the connection was refused or the host's name does not resolve.
        self.unreachable = unreachable


class StructuredOutputRejected(CallError):
    """The server refused the response_format sent in ``mode``; the caller asks again another way."""

    def __init__(self, message: str, *, mode: str, raw: str = ""):
        super().__init__(message, retryable=True, raw=raw)
        self.mode = mode


@dataclass(frozen=True)
class Completion:
    content: str | None
    raw: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int
    finish_reason: str | None


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _body(error: openai.APIStatusError) -> str:
    try:
        return error.response.text
    except Exception:  # noqa: BLE001 - a body that cannot be read is simply not shown
        return ""


def excerpt(body: str, *secrets: str) -> str:
    """A short, single-line, scrubbed excerpt of a body, safe to store and show."""
    line = " ".join(scrub(body, *secrets).split())
    line = "".join(ch for ch in line if ch.isprintable())
    return line if len(line) <= EXCERPT_LIMIT else line[: EXCERPT_LIMIT - 1] + "…"


def _redirect_target(error: openai.APIStatusError) -> str:
    """Where a redirect pointed (scheme, host and port only), for the message."""
    location = error.response.headers.get("location", "") if error.response is not None else ""
    try:
        url = httpx2.URL(location)
    except (httpx2.InvalidURL, TypeError, ValueError):
        return ""
    return f" to {url.scheme}://{url.netloc.decode('ascii', 'replace')}" if url.host else ""


def endpoint_address(base_url: str) -> str:
    """The base URL as an error message names it: scheme, host, port and path, never credentials or a query."""
    try:
        url = httpx2.URL(base_url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        return "the judge's base URL"
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{url.path.rstrip('/')}"


class ChatBackend:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        temperature: float,
        max_tokens: int,
        timeout: float,
        structured_output: bool,
        concurrency: int = 4,
    ):
        # How the schema is sent: OpenAI's json_schema first; llama-cpp-python's server wants
        # json_object with a "schema"; "off" when the server takes neither.
        self.structured_mode = STRUCTURED_MODES[0] if structured_output else "off"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self._secret = api_key
        self._lock = threading.Lock()
        self.address = endpoint_address(base_url)
        # Whether any call through this backend got an HTTP response: the retry rule waits out
        # an endpoint that went away, not one that never answered (judging.retry).
        self.answered = False
        # Every run starts here: a judge saved before a rule changed is held to today's rules.
        check_endpoint(base_url)
        self._base_url = base_url
        # Keep a pooled connection per request in flight, and send small requests at once
        # (TCP_NODELAY) instead of letting Nagle's algorithm hold the body for an ACK.
        self._http = guarded_client(
            timeout=timeout,
            connections=max(concurrency, 4),
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0, http_client=self._http
        )

    def server_slots(self) -> int | None:
        """How many requests the endpoint serves at once, when it says (``judging.concurrency``)."""
        return server_slots(self._http, self._base_url)

    def downgrade_structured_output(self, refused: str) -> None:
        """The server refused the schema sent as ``refused``: use the next way (once, across threads)."""
        with self._lock:
            if self.structured_mode == refused:
                self.structured_mode = STRUCTURED_MODES[STRUCTURED_MODES.index(refused) + 1]

    def close(self) -> None:
        self._client.close()

    def complete(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Completion:
        try:
            return self._complete(messages, schema)
        except CallError as exc:
            # A server may echo request headers into an error body: never let the key travel on.
            exc.args = (redact(str(exc), self._secret),)
            exc.raw = redact(exc.raw, self._secret)
            raise

    def _complete(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Completion:
        mode = self.structured_mode
        structured = bool(schema) and mode != "off"
        body: dict[str, Any] = {
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if structured and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            }
        elif structured:
            body["response_format"] = {"type": "json_object", "schema": schema}
        # The body goes as the SDK's extra body, which it sends as given (over the empty ``messages``):
        # passed as arguments, every request's messages and schema are walked against the SDK's typed
        # dictionaries first, 0.6-0.8 ms of CPU per call (measured), which with 64 calls in flight on
        # two cores is a fifth of what a run spends per judgment. The JSON sent is the same.
        kwargs: dict[str, Any] = {"model": self.model, "messages": [], "extra_body": body}
        started = time.monotonic()
        deadline = started + self.timeout
        try:
            with self._client.chat.completions.with_streaming_response.create(**kwargs) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise CallError(
                            f"the response was longer than {MAX_RESPONSE_BYTES:,} bytes and was not read further",
                            retryable=False,
                        )
                    if time.monotonic() > deadline:
                        raise CallError(
                            f"timed out: the response was still arriving after {self.timeout:g}s",
                            retryable=True,
                            timed_out=True,
                        )
                raw = b"".join(chunks).decode("utf-8", "replace")
        except openai.APIStatusError as exc:
            self.answered = True
            status, body = exc.status_code, _body(exc)
            if 300 <= status < 400:
                raise CallError(
                    f"HTTP {status}: the endpoint redirected{_redirect_target(exc)}; redirects are not followed, "
                    "so give the final address as the base URL",
                    retryable=False,
                ) from None
            short = excerpt(body, self._secret)
            if structured and status in (400, 422, 500) and "response_format" in body:
                raise StructuredOutputRejected(f"HTTP {status}: {mode} refused", mode=mode, raw=short) from None
            retryable = status in (408, 409, 425, 429) or status >= 500
            retry_after = _retry_after(exc.response.headers) if retryable else None
            raise CallError(
                f"HTTP {status}: {short}" if short else f"HTTP {status}",
                retryable=retryable,
                retry_after=retry_after,
            ) from None
        except (openai.APITimeoutError, httpx2.TimeoutException):
            raise CallError(f"timed out after {self.timeout:g}s", retryable=True, timed_out=True) from None
        except openai.APIConnectionError as exc:
            refused = refusal_in(exc)
            if refused is not None:
                raise CallError(str(refused), retryable=False) from None
            unreachable = unreachable_in(exc)
            if unreachable is not None:
                raise CallError(
                    f"could not connect to {self.address}: {unreachable}", retryable=True, unreachable=True
                ) from None
            raise CallError(f"connection failed: {exc}", retryable=True) from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            # Raised while reading the body: a connection cut short, a truncated response.
            raise CallError(f"the response was cut short: {type(exc).__name__}", retryable=True) from None
        self.answered = True
        latency_ms = int((time.monotonic() - started) * 1000)
        return self._completion(redact(raw, self._secret), latency_ms)

    @staticmethod
    def _completion(raw: str, latency_ms: int) -> Completion:
        try:
            body = json.loads(raw)
            choice = body["choices"][0]
            content = choice["message"].get("content")
        # RecursionError: a hostile endpoint can answer with JSON nested thousands deep.
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
            raise CallError(
                "the server's response is not a valid chat completion", retryable=True, raw=excerpt(raw)
            ) from None
        usage = body.get("usage") or {}
        return Completion(
            content=content if isinstance(content, str) else None,
            raw=raw[:RAW_LIMIT],
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_ms=latency_ms,
            finish_reason=choice.get("finish_reason"),
        )
