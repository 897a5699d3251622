"""How many calls a judge keeps in flight: what the endpoint says it serves at once, else what its latency allows.

A judge's ``concurrency`` is a ceiling, not a promise the endpoint keeps. A
local llama.cpp server with one slot answers one request at a time and queues
the rest, and the time a request waits in the *server's* queue counts against
our timeout: four calls in flight against one slot made the fourth wait three
answers long and time out. (The time a call waits for a place in our own
limiter, ``judging.limits``, is never counted: the deadline starts when the
request is sent.)

So a run first asks the endpoint (:func:`server_slots`): llama.cpp's server
says how many requests it serves at once in ``/props`` (``total_slots``) and
``/slots``; the judge never sends more than that. Servers that do not say
(llama-cpp-python, vLLM, Ollama, whose ``OLLAMA_NUM_PARALLEL`` is not
exposed, hosted APIs) get :class:`AdaptiveWidth`: it starts at one call and
adds one per answer that came back well within the timeout, or at once as
many as a server answering one at a time would still serve within a quarter
of the timeout (slow start),
halves when a call timed out or used more than half of the timeout (the
server is queueing), then grows by one per window of answers again (AIMD, as
TCP does). It never exceeds the judge's ``concurrency``.
"""

import logging
import math
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import httpx2

logger = logging.getLogger(__name__)

# A call that used more than this share of its timeout was queued at the server: send fewer at once.
SLOW_SHARE = 0.5
PROBE_TIMEOUT_SECONDS = 3.0


def server_root(base_url: str) -> str:
    """The server's own address for a base URL (``http://h:8080/v1`` -> ``http://h:8080``)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def server_slots(client: httpx2.Client, base_url: str) -> int | None:
    """How many requests the endpoint serves at once, when it says (llama.cpp's server); None when it does not.

    ``client`` is the judge's own guarded HTTP client (``judging.outbound``), so the probe goes only where
    the judge's calls may go."""
    root = server_root(base_url)
    for path, read in (("/props", _slots_from_props), ("/slots", _slots_from_list)):
        try:
            response = client.get(root + path, timeout=PROBE_TIMEOUT_SECONDS)
            if response.status_code != 200:
                continue
            slots = read(response.json())
        except (httpx2.HTTPError, ValueError) as exc:
            logger.debug("%s%s did not say how many requests it serves at once: %s", root, path, exc)
            continue
        except Exception as exc:  # noqa: BLE001 - a refused or odd endpoint is simply not probed; calls report it
            logger.debug("probing %s%s failed: %s", root, path, exc)
            return None
        if slots:
            return slots
    return None


def _slots_from_props(body: object) -> int | None:
    total = body.get("total_slots") if isinstance(body, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None


def _slots_from_list(body: object) -> int | None:
    return len(body) if isinstance(body, list) and body else None


class AdaptiveWidth:
    """How many calls may be in flight now, between 1 and ``ceiling``, learned from the calls' latencies.

    ``fixed``: the endpoint said how many it serves (or the caller wants no adaptation): ``limit`` stays at
    ``ceiling``. Thread-safe; :meth:`observe` is called after every call that got an answer or timed out."""

    def __init__(
        self, *, ceiling: int, timeout: float, fixed: bool = False, clock: Callable[[], float] = time.monotonic
    ):
        self.ceiling = max(1, ceiling)
        self.timeout = timeout
        self.fixed = fixed
        self._clock = clock
        self._width = float(self.ceiling if fixed else 1)
        self._slow_start = True
        self._last_cut = -math.inf
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return max(1, min(self.ceiling, math.floor(self._width)))

    def observe(self, *, started: float, seconds: float, timed_out: bool) -> None:
        """One call sent at ``started`` (this object's clock) took ``seconds``; it ``timed_out`` or answered."""
        if self.fixed:
            return
        with self._lock:
            if timed_out or seconds > SLOW_SHARE * self.timeout:
                # One cut per round of calls: the calls that were already in flight when the limit was
                # cut saw the same queue and must not cut it again.
                if started >= self._last_cut:
                    self._width = max(1.0, self._width / 2)
                    self._slow_start = False
                    self._last_cut = self._clock()
                return
            if not self._slow_start:
                self._width = min(float(self.ceiling), self._width + 1.0 / self._width)
                return
            # Slow start grows by one per answer, and at once to as many calls as the server could
            # answer one after another within half the slow mark: were it serving one at a time, the
            # last of them would still come back in time. A quick endpoint reaches the judge's
            # concurrency in one round of calls instead of doubling towards it for several.
            fit = math.floor(SLOW_SHARE * self.timeout / (2 * seconds)) if seconds > 0 else self.ceiling
            self._width = min(float(self.ceiling), max(self._width + 1.0, float(fit)))
