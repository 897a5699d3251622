# SPDX-License-Identifier: GPL-3.0-or-later
"""The client: one method per thing a researcher does, over the API v1 resources."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

import httpx2 as httpx
import yaml  # type: ignore[import-untyped,unused-ignore]

if TYPE_CHECKING:
    import pandas  # type: ignore[import-untyped,unused-ignore]

#: A JSON object as the server sends it.
JSON = dict[str, Any]
#: Called with each state a wait polls (a run's progress, an export's rows written, …).
Progress = Callable[[JSON], None]

# "paused": a judge run stopped because its endpoint never answered; it waits for the researcher to resume it.
UNSUCCESSFUL = ("failed", "cancelled", "paused")
FINISHED = ("done", *UNSUCCESSFUL)
API = "/api/v1"
#: Statuses worth asking again: the server is busy (429) or had a failure it may not have next time (5xx).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Statuses that say the request was not carried out, so even a POST is safe to send again.
NOT_CARRIED_OUT = frozenset({429, 503})


class FunnyboneError(Exception):
    """The server refused a request; ``status`` is the HTTP status, ``body`` what it said.

    Every error of the API is ``{"detail": "...", <field>: [messages], "errors": [messages]}``:
    ``detail`` is the message, ``body`` the whole answer (docs/api.md, "Errors").
    """

    def __init__(self, status: int, body: Any, url: str) -> None:
        self.status = status
        self.body = body
        self.url = url
        super().__init__(f"{status} from {url}: {_message(body)}")

    @property
    def problems(self) -> dict[str, list[str]]:
        """The messages by input field (``errors``: those about no one field); empty when there were none."""
        if not isinstance(self.body, dict):
            return {}
        return {key: value for key, value in self.body.items() if key != "detail" and isinstance(value, list)}


class UnexpectedRedirect(FunnyboneError):
    """The server answered a redirect (the API never does: a proxy or a login page did); not followed."""

    def __init__(self, status: int, location: str, url: str) -> None:
        super().__init__(status, f"an unexpected redirect to {location or '(no Location header)'}", url)
        self.location = location


class ForeignAddress(Exception):
    """The server handed back an address (``next``, ``download_url``) on another origin; not followed."""

    def __init__(self, url: str, origin: str) -> None:
        self.url = url
        super().__init__(
            f"The server handed back {url[:200]}, which is not on {origin}; the client only follows the "
            "server's own addresses, so your token is never sent elsewhere."
        )


class JobFailed(Exception):
    """A background job (run, tournament, import, export) ended failed, cancelled or paused."""

    def __init__(self, what: str, state: JSON) -> None:
        self.state = state
        reason = state.get("error") or "; ".join(state.get("errors") or []) or state.get("status")
        super().__init__(f"{what} {state.get('id', '')} ended {state.get('status')}: {reason}")


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    """Scheme, host and port, the default port written out, so http://h and http://h:80 are one origin."""
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: no origin of ours
        return (scheme, "", -1)
    return (scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme))


def _message(body: Any) -> str:
    if isinstance(body, dict):
        if "detail" in body:
            return str(body["detail"])
        return "; ".join(f"{k}: {v}" for k, v in body.items())
    return str(body)[:500]


def retry_after(response: httpx.Response, *, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (a number or an HTTP date); None without one."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _ids(ids: list[int] | None) -> str | None:
    return ",".join(str(i) for i in ids) if ids else None


class Funnybone:
    """A session with one Funnybone server, authenticated by a researcher's API token.

    ``retries`` is how many times a request is sent again after a connection error, a 429 or a
    5xx, waiting ``backoff`` seconds doubled each time (with jitter, at most ``max_backoff``), or
    what the server's ``Retry-After`` asks for (at most ``max_retry_after``). A POST is sent again
    only when it cannot have been carried out: no connection was made, or the server said 429/503.
    ``poll_every`` is the pause between two looks at a background job.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str,
        timeout: float = 60.0,
        poll_every: float = 1.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 300.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.origin = _origin(urlsplit(self.url))
        self.poll_every = poll_every
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()

    def __enter__(self) -> Funnybone:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ------------------------------------------------------------------------

    def _address(self, path: str) -> str:
        """A path under the API, or an address the server handed back, which must be on the server's own origin.

        The token goes with every request, so following a ``next`` or ``download_url`` that points at another
        host (a hostile or misconfigured server, a proxy rewriting links) would hand it over.
        """
        parts = urlsplit(path)
        if parts.scheme or parts.netloc:
            if _origin(parts) != self.origin:
                raise ForeignAddress(path, self.url)
            return path
        return path if path.startswith(API + "/") else API + path

    @staticmethod
    def _refuse_redirect(response: httpx.Response) -> None:
        # httpx follows none; a 3xx here is a proxy or a login page, and its empty body was read as None.
        if 300 <= response.status_code < 400:
            location = response.headers.get("Location", "")
            raise UnexpectedRedirect(response.status_code, location, str(response.url))

    def _pause(self, attempt: int, response: httpx.Response | None) -> None:
        asked = retry_after(response) if response is not None else None
        if asked is not None:
            wait = min(asked, self.max_retry_after)
        else:
            wait = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)  # noqa: S311
        self.sleep(wait)

    def _send(self, method: str, path: str, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        """One request, sent again on the failures ``retries`` covers; the last answer or error stands."""
        url = self._address(path)
        attempt = 0
        while True:
            try:
                request = self.http.build_request(method, url, **kwargs)
                response = self.http.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout):
                if attempt >= self.retries:
                    raise
            except httpx.TransportError:
                # The request may have reached the server: only a method that can be repeated is sent again.
                if attempt >= self.retries or method == "POST":
                    raise
            else:
                retry = response.status_code in (NOT_CARRIED_OUT if method == "POST" else RETRY_STATUSES)
                if not retry or attempt >= self.retries:
                    return response
                response.close()
                self._pause(attempt, response)
                attempt += 1
                continue
            self._pause(attempt, None)
            attempt += 1

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, path, **kwargs)
        self._refuse_redirect(response)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            raise FunnyboneError(response.status_code, body, str(response.url))
        return response.json() if response.content else None

    def _get(self, path: str, **params: Any) -> Any:
        return self._request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def _post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self._request("POST", path, json=json, **kwargs)

    def _all(self, path: str, **params: Any) -> Iterator[JSON]:
        """Every row of a paged list, lazily: the next page is asked for when the rows before it are used."""
        page = self._get(path, **params)
        while True:
            yield from page["results"]
            if not page["next"]:
                return
            page = self._request("GET", page["next"])

    def _wait(self, what: str, path: str, *, timeout: float | None, on_progress: Progress | None) -> JSON:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state: JSON = self._get(path)
            if on_progress is not None:
                on_progress(state)
            if state.get("status") in FINISHED:
                if state["status"] in UNSUCCESSFUL:
                    raise JobFailed(what, state)
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{what} {path} was still {state.get('status')} after {timeout} s")
            self.sleep(self.poll_every)

    # -- studies -------------------------------------------------------------------------

    def studies(self) -> Iterator[JSON]:
        """Your studies, newest first (lazily, page by page)."""
        return self._all("/studies/")

    def study(self, study_id: int) -> JSON:
        """One of your studies."""
        result: JSON = self._get(f"/studies/{study_id}/")
        return result

    def create_study(self, *, name: str, task_type: str, **settings: Any) -> JSON:
        """A draft study; ``settings`` are ``config`` and the study settings of docs/study-files.md."""
        result: JSON = self._post("/studies/", {"name": name, "task_type": task_type, **settings})
        return result

    def create_study_from_file(self, path: str | Path, *, replace: bool = False) -> JSON:
        """The whole study a study file describes (settings, items, judges, state), created on the server.

        The server checks everything before writing anything. An ``items_file`` the study file
        names is read beside it and sent along.
        """
        path = Path(path)
        files: dict[str, Any] = {"study_file": (path.name, path.read_bytes())}
        items_file = (yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}).get("items_file")
        if isinstance(items_file, str) and items_file:
            local = path.parent / items_file
            files["items_file"] = (local.name, local.read_bytes())
        result: JSON = self._post("/studies/from-study-file/", files=files, data={"replace": str(replace).lower()})
        return result

    def update_study(self, study_id: int, **changes: Any) -> JSON:
        """Change a study's settings (its config only while it has no judgments)."""
        result: JSON = self._request("PATCH", f"/studies/{study_id}/", json=changes)
        return result

    def open_study(self, study_id: int) -> JSON:
        """Open a study to raters."""
        result: JSON = self._post(f"/studies/{study_id}/open/")
        return result

    def close_study(self, study_id: int) -> JSON:
        """Close a study."""
        result: JSON = self._post(f"/studies/{study_id}/close/")
        return result

    def progress(self, study_id: int, *, limit: int | None = None, raters_limit: int | None = None) -> JSON:
        """The study's totals, with the first page of items (least judged first) and of raters."""
        result: JSON = self._get(f"/studies/{study_id}/progress/", limit=limit, raters_limit=raters_limit)
        return result

    def watch_progress(
        self,
        study_id: int,
        *,
        until: Callable[[JSON], bool] | None = None,
        every: float | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]:
        """Yield the study's progress every ``every`` seconds until ``until(progress)`` (default: 100 %)."""
        done = until or (lambda p: p["percent"] >= 100)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            progress = self.progress(study_id)
            yield progress
            if done(progress):
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"study {study_id} was at {progress['percent']} % after {timeout} s")
            self.sleep(self.poll_every if every is None else every)

    # -- items and imports ---------------------------------------------------------------

    def upload_items(
        self,
        study_id: int,
        source: str | Path | list[JSON],
        *,
        replace: bool = False,
        wait: bool = True,
        timeout: float | None = 600,
        on_progress: Progress | None = None,
    ) -> JSON:
        """Add items from a CSV/XLSX/JSONL file or a list of item dicts; all or nothing.

        A big file is imported by a worker: with ``wait`` this polls until it is done, calling
        ``on_progress`` with each state of the import.
        """
        outcome: JSON
        if isinstance(source, list):
            outcome = self._post(f"/studies/{study_id}/imports/", {"items": source, "replace": replace})
        else:
            path = Path(source)
            outcome = self._post(
                f"/studies/{study_id}/imports/",
                files={"file": (path.name, path.read_bytes())},
                data={"replace": str(replace).lower()},
            )
        if wait and outcome.get("status_url") and outcome["status"] not in FINISHED:
            outcome = self._wait("import", outcome["status_url"], timeout=timeout, on_progress=on_progress)
        return outcome

    def items(self, study_id: int) -> Iterator[JSON]:
        """The study's items in their listed order (lazily, page by page)."""
        return self._all(f"/studies/{study_id}/items/")

    def imports(self, study_id: int) -> Iterator[JSON]:
        """The study's file imports, newest first (lazily)."""
        return self._all(f"/studies/{study_id}/imports/")

    def item_import(self, study_id: int, import_id: int) -> JSON:
        """One import's status, its counts and its problems."""
        result: JSON = self._get(f"/studies/{study_id}/imports/{import_id}/")
        return result

    def wait_for_import(
        self, study_id: int, import_id: int, *, timeout: float | None = 600, on_progress: Progress | None = None
    ) -> JSON:
        """Poll an import until it is done; raises ``JobFailed`` (with every problem) if it failed."""
        return self._wait(
            "import", f"/studies/{study_id}/imports/{import_id}/", timeout=timeout, on_progress=on_progress
        )

    # -- judgments and reports -----------------------------------------------------------

    def iter_judgments(
        self, study_id: int, *, rater_kind: str | None = None, status: str | None = None
    ) -> Iterator[JSON]:
        """The study's judgments, oldest first, as dicts (lazily, page by page)."""
        return self._all(f"/studies/{study_id}/judgments/", rater_kind=rater_kind, status=status)

    def judgments(self, study_id: int, *, rater_kind: str | None = None, status: str | None = None) -> pandas.DataFrame:
        """The study's judgments as a pandas DataFrame, one row per judgment (needs the ``pandas`` extra).

        The answer's fields become ``value_<field>`` columns (``value_rating``, ``value_choice`` …);
        ``value`` keeps the whole answer. Missing answers (an unparseable LLM reply) are NaN.
        """
        import pandas as pd

        rows = list(self.iter_judgments(study_id, rater_kind=rater_kind, status=status))
        frame = pd.DataFrame(
            rows,
            columns=[
                "id",
                "item",
                "rater",
                "rater_kind",
                "rater_name",
                "status",
                "value",
                "shown_order",
                "duration_ms",
                "too_fast",
                "attention_passed",
                "provenance",
                "created_at",
            ],
        )
        answers = pd.json_normalize([r["value"] if isinstance(r["value"], dict) else {} for r in rows], sep="_")
        answers.columns = [f"value_{c}" for c in answers.columns]
        frame = pd.concat([frame, answers.set_index(frame.index)], axis=1)
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
        return frame

    def agreement(self, study_id: int, *, group: str = "humans", raters: list[int] | None = None) -> JSON:
        """The agreement report of one rater group, as a dict (docs/analyze.md says what it holds)."""
        result: JSON = self._get(f"/studies/{study_id}/reports/agreement/", group=group, raters=_ids(raters))
        return result

    def alignment(
        self,
        study_id: int,
        *,
        reference: str = "passers",
        raters: list[int] | None = None,
        judges: list[int] | None = None,
        breakdown: str | None = None,
        wait: bool = True,
        timeout: float | None = 600,
        on_progress: Progress | None = None,
    ) -> JSON:
        """The alignment report (judges against a human reference), as the alignment page shows it.

        The server reads its stored report; when judgments changed since, it recomputes it in the
        background. With ``wait`` this polls until the figures are current (``on_progress`` gets
        each state, with ``progress`` in percent); ``result`` holds the figures.
        """
        path = f"/studies/{study_id}/reports/alignment/"
        params = {"reference": reference, "raters": _ids(raters), "judges": _ids(judges), "breakdown": breakdown}
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state: JSON = self._get(path, **params)
            if on_progress is not None:
                on_progress(state)
            if not wait or not state["computing"]:
                if wait and state["status"] == "failed":
                    raise JobFailed("alignment report", state)
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the alignment report of study {study_id} was still computing after {timeout} s")
            self.sleep(self.poll_every)

    # -- raters: qualification, practice, questionnaires, withdrawal ---------------------------

    def rater_steps(self, study_id: int) -> JSON:
        """The study's qualification test, practice items and questionnaires (docs/raters.md), as study-file sections."""
        result: JSON = self._get(f"/studies/{study_id}/rater-steps/")
        return result

    def set_rater_steps(
        self,
        study_id: int,
        *,
        qualification: JSON | None = None,
        practice: JSON | None = None,
        questionnaire: JSON | None = None,
    ) -> JSON:
        """Replace the study's qualification, practice and questionnaires; a section left out (None) is removed."""
        body = {"qualification": qualification, "practice": practice, "questionnaire": questionnaire}
        result: JSON = self._request("PUT", f"/studies/{study_id}/rater-steps/", json=body)
        return result

    def qualification_allowlist(self, study_id: int, to: str | Path) -> Path:
        """Save the CSV of participant ids who passed the study's qualification (a Prolific allowlist) to ``to``."""
        return self.download(f"/studies/{study_id}/qualification/allowlist/", to)

    def withdraw(self, study_id: int, participant: str) -> JSON:
        """Withdraw a participant (their pseudonym ``P-…`` or platform id): everything they gave is deleted."""
        result: JSON = self._post(f"/studies/{study_id}/withdrawals/", json={"participant": participant})
        return result

    # -- exports -------------------------------------------------------------------------

    def exports(self, study_id: int) -> Iterator[JSON]:
        """The study's exports, newest first (lazily)."""
        return self._all(f"/studies/{study_id}/exports/")

    def start_export(self, study_id: int, fmt: str, *, rater_subset: list[int] | None = None) -> JSON:
        """Queue an export in format ``fmt`` (any the server offers); see ``wait_for_export``."""
        result: JSON = self._post(f"/studies/{study_id}/exports/", {"format": fmt, "rater_subset": rater_subset or []})
        return result

    def export_status(self, export_id: int) -> JSON:
        """An export and its progress; ``download_url`` once it is done."""
        result: JSON = self._get(f"/exports/{export_id}/")
        return result

    def wait_for_export(
        self, export_id: int, *, timeout: float | None = 600, on_progress: Progress | None = None
    ) -> JSON:
        """Poll an export until it is done (``rows_written`` grows as it goes)."""
        return self._wait("export", f"/exports/{export_id}/", timeout=timeout, on_progress=on_progress)

    def export(
        self,
        study_id: int,
        fmt: str,
        to: str | Path,
        *,
        rater_subset: list[int] | None = None,
        timeout: float | None = 600,
        on_progress: Progress | None = None,
    ) -> Path:
        """Write the study's export in format ``fmt`` (any the server offers) to the file ``to``."""
        queued = self.start_export(study_id, fmt, rater_subset=rater_subset)
        done = self._wait("export", queued["status_url"], timeout=timeout, on_progress=on_progress)
        return self.download(done["download_url"], to)

    def download(self, url: str, to: str | Path) -> Path:
        """Stream a file the API hands out (an export's ``download_url``) to disk."""
        to = Path(to)
        response = self._send("GET", url, stream=True, headers={"Accept": "*/*"})
        try:
            self._refuse_redirect(response)
            if response.status_code >= 400:
                response.read()
                raise FunnyboneError(response.status_code, response.text, url)
            with to.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return to

    # -- judges and prompt templates -----------------------------------------------------

    def judges(self) -> Iterator[JSON]:
        """Your judges, each in its current version (lazily)."""
        return self._all("/judges/")

    def judge(self, judge_id: int) -> JSON:
        """One judge (an older version too)."""
        result: JSON = self._get(f"/judges/{judge_id}/")
        return result

    def create_judge(self, **settings: Any) -> JSON:
        """A judge: ``baseline="random"|"constant"|"length"``, or ``name``, ``base_url``, ``model``, …"""
        result: JSON = self._post("/judges/", settings)
        return result

    def update_judge(self, judge_id: int, **changes: Any) -> JSON:
        """Change a judge; a judge that has run gets a new version (the answer is that version, a new id)."""
        result: JSON = self._request("PATCH", f"/judges/{judge_id}/", json=changes)
        return result

    def delete_judge(self, judge_id: int) -> None:
        """Delete a judge that has no judgments (a 409 ``FunnyboneError`` otherwise)."""
        self._request("DELETE", f"/judges/{judge_id}/")

    def templates(self, *, name: str | None = None) -> Iterator[JSON]:
        """Your prompt templates and the built-in ones, every version (lazily); ``name`` narrows to one."""
        return self._all("/prompt-templates/", name=name)

    def create_template(
        self,
        *,
        name: str,
        task_type: str,
        user_text: str,
        system_text: str = "",
        description: str = "",
        response_schema: JSON | None = None,
    ) -> JSON:
        """Save the next version of your template ``name`` (of a built-in's name: your own copy)."""
        body = {
            "name": name,
            "task_type": task_type,
            "user_text": user_text,
            "system_text": system_text,
            "description": description,
            "response_schema": response_schema,
        }
        result: JSON = self._post("/prompt-templates/", body)
        return result

    # -- judge runs ----------------------------------------------------------------------

    def runs(self, *, study: int | None = None) -> Iterator[JSON]:
        """Judge runs on your studies, newest first (lazily); ``study`` narrows to one study."""
        return self._all("/runs/", study=study)

    def start_run(self, *, study: int, judge: int, trials: int | None = None, both_orders: bool | None = None) -> JSON:
        """Queue a judge run over a study."""
        body = {"study": study, "judge": judge, "trials": trials, "both_orders": both_orders}
        result: JSON = self._post("/runs/", {k: v for k, v in body.items() if v is not None})
        return result

    def run(self, run_id: int) -> JSON:
        """A run with its progress."""
        result: JSON = self._get(f"/runs/{run_id}/")
        return result

    def cancel_run(self, run_id: int) -> JSON:
        """Cancel a run (calls in flight are recorded)."""
        result: JSON = self._post(f"/runs/{run_id}/cancel/")
        return result

    def resume_run(self, run_id: int) -> JSON:
        """Queue a run again (a paused or cancelled one); judged units are kept."""
        result: JSON = self._post(f"/runs/{run_id}/resume/")
        return result

    def retry_failed(self, run_id: int) -> JSON:
        """A new run of the same judge version over this run's failed and unparseable units."""
        result: JSON = self._post(f"/runs/{run_id}/retry-failed/")
        return result

    def wait_for_run(self, run_id: int, *, timeout: float | None = 600, on_progress: Progress | None = None) -> JSON:
        """Poll a run until it is done; ``on_progress`` gets each state (its ``progress`` counts units)."""
        return self._wait("run", f"/runs/{run_id}/", timeout=timeout, on_progress=on_progress)

    # -- tournaments ---------------------------------------------------------------------

    def tournaments(self) -> Iterator[JSON]:
        """Your tournaments, newest first (lazily)."""
        return self._all("/tournaments/")

    def tournament(self, tournament_id: int) -> JSON:
        """A tournament and its status."""
        result: JSON = self._get(f"/tournaments/{tournament_id}/")
        return result

    def start_tournament(
        self,
        *,
        name: str,
        source_study: int,
        judge: int,
        schedule: str = "round_robin",
        budget: int | None = None,
        seed: int = 0,
    ) -> JSON:
        """A HumorRank tournament between the source study's contestants, judged by ``judge``."""
        body: JSON = {"name": name, "source_study": source_study, "judge": judge, "schedule": schedule, "seed": seed}
        if budget is not None:
            body["budget"] = budget
        result: JSON = self._post("/tournaments/", body)
        return result

    def cancel_tournament(self, tournament_id: int) -> JSON:
        """Cancel a tournament; matches judged so far stay."""
        result: JSON = self._post(f"/tournaments/{tournament_id}/cancel/")
        return result

    def wait_for_tournament(
        self, tournament_id: int, *, timeout: float | None = 600, on_progress: Progress | None = None
    ) -> JSON:
        """Poll a tournament until it is done."""
        return self._wait("tournament", f"/tournaments/{tournament_id}/", timeout=timeout, on_progress=on_progress)

    def standings(self, tournament_id: int) -> JSON:
        """The tournament's leaderboard so far, as a dict (ranking, Bradley–Terry, Elo, win rates)."""
        result: JSON = self._get(f"/tournaments/{tournament_id}/standings/")
        return result

    # -- generators and generation runs ---------------------------------------------------

    def generators(self) -> Iterator[JSON]:
        """Your generators: models that write candidates for a study's prompts (lazily)."""
        return self._all("/generators/")

    def generator(self, generator_id: int) -> JSON:
        """One generator."""
        result: JSON = self._get(f"/generators/{generator_id}/")
        return result

    def create_generator(self, *, name: str, **settings: Any) -> JSON:
        """A generator: ``name``, ``base_url``, ``model``, ``user_text`` …; ``api_key`` is write-only."""
        result: JSON = self._post("/generators/", {"name": name, **settings})
        return result

    def update_generator(self, generator_id: int, **changes: Any) -> JSON:
        """Change a generator; ``api_key`` replaces the stored key, ``""`` removes it."""
        result: JSON = self._request("PATCH", f"/generators/{generator_id}/", json=changes)
        return result

    def generation_runs(self, *, study: int | None = None) -> Iterator[JSON]:
        """Generation runs on your studies, newest first (lazily)."""
        return self._all("/generation-runs/", study=study)

    def start_generation_run(self, *, study: int, generators: list[int]) -> JSON:
        """Queue a generation run: each generator writes one candidate per prompt of the study."""
        result: JSON = self._post("/generation-runs/", {"study": study, "generators": generators})
        return result

    def generation_run(self, run_id: int) -> JSON:
        """A generation run with its progress."""
        result: JSON = self._get(f"/generation-runs/{run_id}/")
        return result

    def cancel_generation_run(self, run_id: int) -> JSON:
        """Cancel a generation run (calls in flight are kept)."""
        result: JSON = self._post(f"/generation-runs/{run_id}/cancel/")
        return result

    def resume_generation_run(self, run_id: int) -> JSON:
        """Queue a generation run again; written candidates are kept."""
        result: JSON = self._post(f"/generation-runs/{run_id}/resume/")
        return result

    def wait_for_generation_run(
        self, run_id: int, *, timeout: float | None = 600, on_progress: Progress | None = None
    ) -> JSON:
        """Poll a generation run until it is done."""
        return self._wait("generation run", f"/generation-runs/{run_id}/", timeout=timeout, on_progress=on_progress)


#: Every operation of API v1 (its OpenAPI operation id) and the method that calls it; a test checks
#: this against the server's schema, so a new operation without a method here fails.
OPERATIONS: dict[str, str] = {
    "studies_list": "studies",
    "studies_create": "create_study",
    "studies_create_from_study_file": "create_study_from_file",
    "studies_retrieve": "study",
    "studies_update": "update_study",
    "studies_open": "open_study",
    "studies_close": "close_study",
    "studies_progress": "progress",
    "items_list": "items",
    "items_import": "upload_items",
    "imports_list": "imports",
    "imports_retrieve": "item_import",
    "judgments_list": "iter_judgments",
    "reports_agreement": "agreement",
    "reports_alignment": "alignment",
    "studies_rater_steps": "rater_steps",
    "studies_rater_steps_set": "set_rater_steps",
    "studies_qualification_allowlist": "qualification_allowlist",
    "withdrawals_create": "withdraw",
    "exports_list": "exports",
    "exports_create": "start_export",
    "exports_retrieve": "export_status",
    "exports_download": "download",
    "judges_list": "judges",
    "judges_create": "create_judge",
    "judges_retrieve": "judge",
    "judges_update": "update_judge",
    "judges_destroy": "delete_judge",
    "prompt_templates_list": "templates",
    "prompt_templates_create": "create_template",
    "judge_runs_list": "runs",
    "judge_runs_create": "start_run",
    "judge_runs_retrieve": "run",
    "judge_runs_cancel": "cancel_run",
    "judge_runs_resume": "resume_run",
    "judge_runs_retry_failed": "retry_failed",
    "tournaments_list": "tournaments",
    "tournaments_create": "start_tournament",
    "tournaments_retrieve": "tournament",
    "tournaments_cancel": "cancel_tournament",
    "tournaments_standings": "standings",
    "generators_list": "generators",
    "generators_create": "create_generator",
    "generators_retrieve": "generator",
    "generators_update": "update_generator",
    "generation_runs_list": "generation_runs",
    "generation_runs_create": "start_generation_run",
    "generation_runs_retrieve": "generation_run",
    "generation_runs_cancel": "cancel_generation_run",
    "generation_runs_resume": "resume_generation_run",
}
