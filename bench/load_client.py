# SPDX-License-Identifier: GPL-3.0-or-later
"""Simulated crowdworkers that take an ordinal study over HTTP, as a browser does.

Each rater is one thread with its own keep-alive connection and cookie jar. It
follows the crowd entry link with Prolific parameters, agrees to the consent
form, starts from the instructions and answers items until the study sends it
to the completion page (or its own bound is reached). Like a browser running
htmx it posts answers with ``HX-Request`` and the CSRF token from the page
and receives the next item card in the same response; ``mode="form"`` posts
plain forms instead and follows the redirect.

Every request is timed and every submission is logged with what the client
saw: confirmed (a 2xx/3xx answer that is not the 422 "item taken" form),
rejected (422) or unconfirmed (the response was lost or was a 5xx). An
unconfirmed submission is sent again, the same form for the same assignment,
a bounded number of times, which is what a person pressing the button again
does. The audit (``load_audit``) then holds the database to this log.

Only loopback addresses are accepted: this client is for load and fault tests.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

ASSIGNMENT_FIELD = re.compile(r'name="assignment" value="(\d+)"')
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
RATING_BUTTON = re.compile(r'name="rating" value="(-?\d+)"')
# The "more items may free up" card, and how long a simulated worker waits before asking again
# (the real page polls every 15 s; the harness asks sooner so a level does not idle).
WAITING_CARD = "waiting-card"
WAITING_RETRY_SECONDS = 0.5
REQUEST_TYPES = ("entry", "consent", "instructions", "item", "submit", "done")


class LostResponse(Exception):
    """The connection failed before a whole response arrived."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Submission:
    """One answer as the client saw it; ``attempts`` counts resends of the same form."""

    participant: str
    assignment_id: int
    rating: int
    outcome: str = "unconfirmed"  # confirmed | rejected | unconfirmed
    attempts: int = 0
    statuses: list[str] = field(default_factory=list)


@dataclass
class RaterLog:
    participant: str
    submissions: list[Submission] = field(default_factory=list)
    finished: bool = False  # reached the completion page
    completion_code: bool = False  # and was given the completion code (it had judged something)
    error: str = ""  # why the rater stopped early, if it did
    server_errors: int = 0  # 5xx answers
    lost_responses: int = 0  # connections that broke mid-request


@dataclass
class Timings:
    """Latencies in seconds per request type, shared by every rater thread."""

    samples: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in REQUEST_TYPES})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.samples[kind].append(seconds)


def require_loopback(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        loopback = False
    if not loopback:
        raise ValueError(f"The load client only talks to loopback addresses, not {host!r}.")


def rating_for(participant: str, assignment_id: int, points: list[int]) -> int:
    """A fixed answer per rater and assignment, so the audit can compare stored values."""
    digest = hashlib.blake2b(f"{participant}:{assignment_id}".encode(), digest_size=2).digest()
    return points[int.from_bytes(digest, "big") % len(points)]


class Browser:
    """One keep-alive connection and cookie jar: one person's browser."""

    def __init__(self, base_url: str, *, timeout: float = 30.0):
        parts = urlsplit(base_url)
        require_loopback(parts.hostname or "")
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method: str, path: str, *, form: dict[str, str] | None = None, headers=None) -> Response:
        body = urlencode(form) if form is not None else None
        sent = {"Host": f"{self.host}:{self.port}", "Accept": "text/html", **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.conn.request(method, path, body=body, headers=sent)
            raw = self.conn.getresponse()
            text = raw.read().decode("utf-8", errors="replace")
        except (OSError, http.client.HTTPException) as exc:
            # A killed worker, a reset or a timeout: the outcome on the server is unknown.
            self.close()
            raise LostResponse(f"{type(exc).__name__}: {exc}") from exc
        for name, value in raw.getheaders():
            if name.lower() == "set-cookie":
                pair = value.split(";", 1)[0]
                key, _, val = pair.partition("=")
                self.cookies[key.strip()] = val.strip()
        if raw.getheader("Connection", "").lower() == "close":
            self.close()
        return Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, text)


@dataclass
class Study:
    """What the client needs to know of the study under load."""

    base_url: str
    entry_token: str
    points: list[int]
    prefix: str = "/s"  # "/bare" for the bare reference (bench/bare.py)
    # The answer's form field: "rating" (a point of the scale), or "choice" (a pairwise study: the
    # position of the candidate chosen, 0 or 1, as ``points``).
    field: str = "rating"

    def path(self, step: str = "") -> str:
        return f"{self.prefix}/{self.entry_token}/{step + '/' if step else ''}"


@dataclass
class Plan:
    """How a rater behaves: bounds, htmx or plain forms, resends after a failure."""

    mode: str = "htmx"  # htmx | form
    max_submissions: int = 10_000
    resend_limit: int = 8  # resends of one answer after a lost response or a 5xx
    deadline: float = float("inf")  # time.monotonic() after which the rater stops
    on_item: Callable[[Rater, int], None] | None = None  # called before each answer (fault tests)


class Rater:
    """One simulated crowdworker going through the study."""

    def __init__(self, study: Study, participant: str, timings: Timings, plan: Plan):
        self.study, self.participant, self.timings, self.plan = study, participant, timings, plan
        self.browser = Browser(study.base_url)
        self.log = RaterLog(participant)
        self.csrf = ""

    # -- requests ---------------------------------------------------------------------

    def _timed(self, kind: str, method: str, path: str, **kwargs) -> Response:
        started = time.perf_counter()
        try:
            response = self.browser.request(method, path, **kwargs)
        except LostResponse:
            self.log.lost_responses += 1
            raise
        self.timings.add(kind, time.perf_counter() - started)
        if response.status >= 500:
            self.log.server_errors += 1
        match = CSRF_FIELD.search(response.body)
        if match:
            self.csrf = match.group(1)
        return response

    def _get_with_resends(self, kind: str, path: str, **kwargs) -> Response:
        for attempt in range(self.plan.resend_limit + 1):
            try:
                response = self._timed(kind, "GET", path, **kwargs)
            except LostResponse:
                response = None
            if response is not None and response.status < 500:
                return response
            time.sleep(min(1.0, 0.05 * 2**attempt))
        raise RuntimeError(f"GET {path} kept failing")

    def _post_step(self, kind: str, path: str, form: dict[str, str]) -> Response:
        for attempt in range(self.plan.resend_limit + 1):
            try:
                response = self._timed(kind, "POST", path, form={**form, "csrfmiddlewaretoken": self.csrf})
            except LostResponse:
                response = None
            if response is not None and response.status < 500:
                return response
            time.sleep(min(1.0, 0.05 * 2**attempt))
        raise RuntimeError(f"POST {path} kept failing")

    def _expect_redirect(self, response: Response, step: str) -> None:
        if response.status not in (301, 302, 303) or not response.headers.get("location", "").endswith(f"/{step}/"):
            raise RuntimeError(f"expected a redirect to {step}, got {response.status}")

    # -- the walk through the study ---------------------------------------------------------

    def enter(self) -> Response:
        """Entry link, consent, instructions; returns the first item page."""
        query = urlencode({"PROLIFIC_PID": self.participant, "STUDY_ID": "load", "SESSION_ID": self.participant})
        response = self._get_with_resends("entry", f"{self.study.path()}?{query}")
        self._expect_redirect(response, "consent")
        self._get_with_resends("consent", self.study.path("consent"))
        response = self._post_step("consent", self.study.path("consent"), {"decision": "agree"})
        self._expect_redirect(response, "instructions")
        self._get_with_resends("instructions", self.study.path("instructions"))
        response = self._post_step("instructions", self.study.path("instructions"), {})
        self._expect_redirect(response, "item")
        return self._get_with_resends("item", self.study.path("item"))

    def _submit(self, assignment_id: int) -> Response | None:
        """Answer one assignment; None when the study sent the rater to the completion page."""
        rating = rating_for(self.participant, assignment_id, self.study.points)
        submission = Submission(self.participant, assignment_id, rating)
        self.log.submissions.append(submission)
        headers = {"HX-Request": "true", "X-CSRFToken": self.csrf} if self.plan.mode == "htmx" else {}
        path = self.study.path("item")
        form = {"assignment": str(assignment_id), self.study.field: str(rating)}
        for attempt in range(self.plan.resend_limit + 1):
            submission.attempts += 1
            try:
                response = self._timed(
                    "submit", "POST", path, form={**form, "csrfmiddlewaretoken": self.csrf}, headers=headers
                )
            except LostResponse as exc:
                submission.statuses.append(f"lost ({exc})")
                time.sleep(min(1.0, 0.05 * 2**attempt))
                continue
            submission.statuses.append(str(response.status))
            if response.status >= 500:
                time.sleep(min(1.0, 0.05 * 2**attempt))
                continue
            if response.status == 422:
                submission.outcome = "rejected"
                return response
            if response.status >= 400:
                raise RuntimeError(f"submit answered {response.status}")
            submission.outcome = "confirmed"
            if response.headers.get("hx-redirect", "").endswith("/done/"):
                return None
            if response.status in (301, 302, 303):
                return self._follow_after_submit(response)
            return response
        return None  # gave up on this answer; the audit counts it as unconfirmed

    def _follow_after_submit(self, response: Response) -> Response | None:
        if response.headers.get("location", "").endswith("/done/"):
            return None
        return self._get_with_resends("item", self.study.path("item"))

    def run(self, start: threading.Barrier | None = None) -> RaterLog:
        try:
            if start is not None:
                start.wait()
            page: Response | None = self.enter()
            while page is not None and len(self.log.submissions) < self.plan.max_submissions:
                if time.monotonic() > self.plan.deadline:
                    self.log.error = "deadline"
                    break
                if page.status in (301, 302, 303) or page.headers.get("hx-redirect"):
                    break  # sent to the completion page
                match = ASSIGNMENT_FIELD.search(page.body)
                if match is None and WAITING_CARD in page.body:
                    # Every item left is leased to someone else: the page asks again later, as do we.
                    time.sleep(WAITING_RETRY_SECONDS)
                    page = self._get_with_resends("item", self.study.path("item"))
                    continue
                if match is None:
                    break
                assignment_id = int(match.group(1))
                if self.plan.on_item is not None:
                    self.plan.on_item(self, assignment_id)
                page = self._submit(assignment_id)
                if page is None and self.log.submissions[-1].outcome == "unconfirmed":
                    self.log.error = "gave up resending an answer"
                    return self.log
            if page is None or page.status in (301, 302, 303) or page.headers.get("hx-redirect"):
                done = self._get_with_resends("done", self.study.path("done"))
                # "No items left" is a finish too: the study ran out before this rater got an item.
                self.log.finished = done.status == 200
                self.log.completion_code = "completion-code" in done.body
        except (RuntimeError, threading.BrokenBarrierError) as exc:
            self.log.error = str(exc)
        finally:
            self.browser.close()
        return self.log


def run_raters(
    study: Study,
    participants: list[str],
    plan: Plan,
    timings: Timings | None = None,
    *,
    plans: dict[str, Plan] | None = None,
) -> tuple[list[RaterLog], Timings, float]:
    """Run the raters together from a barrier; returns their logs, the timings and the wall time.

    ``plans`` gives some participants a plan of their own (the fault tests' victims).
    """
    timings = timings or Timings()
    plans = plans or {}
    raters = [Rater(study, p, timings, plans.get(p, plan)) for p in participants]
    logs: list[RaterLog | None] = [None] * len(raters)
    start = threading.Barrier(len(raters) + 1, timeout=60)

    def work(index: int) -> None:
        logs[index] = raters[index].run(start)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(raters))]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return [log for log in logs if log is not None], timings, time.perf_counter() - began


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
