# SPDX-License-Identifier: GPL-3.0-or-later
"""The client: one method per thing a researcher does, over the API v1 resources."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx2 as httpx
import yaml

# "paused": a judge run stopped because its endpoint never answered; it waits for the researcher to resume it.
UNSUCCESSFUL = ("failed", "cancelled", "paused")
FINISHED = ("done", *UNSUCCESSFUL)
API = "/api/v1"


class FunnyboneError(Exception):
    """The server refused a request; ``status`` is the HTTP status, ``body`` what it said."""

    def __init__(self, status: int, body: Any, url: str) -> None:
        self.status = status
        self.body = body
        self.url = url
        super().__init__(f"{status} from {url}: {_message(body)}")


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


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    """Scheme, host and port, the default port written out, so http://h and http://h:80 are one origin."""
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: no origin of ours
        return (scheme, "", -1)
    return (scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme))


class JobFailed(Exception):
    """A background job (run, tournament, import, export) ended failed or cancelled."""

    def __init__(self, what: str, state: dict[str, Any]) -> None:
        self.state = state
        reason = state.get("error") or "; ".join(state.get("errors") or []) or state.get("status")
        super().__init__(f"{what} {state.get('id', '')} ended {state.get('status')}: {reason}")


def _message(body: Any) -> str:
    if isinstance(body, dict):
        if "errors" in body:
            return "; ".join(str(e) for e in body["errors"])
        if "detail" in body:
            return str(body["detail"])
        return "; ".join(f"{k}: {v}" for k, v in body.items())
    return str(body)[:500]


class Funnybone:
    """A session with one Funnybone server, authenticated by a researcher's API token."""

    def __init__(self, url: str, *, token: str, timeout: float = 60.0, poll_every: float = 1.0) -> None:
        self.url = url.rstrip("/")
        self.origin = _origin(urlsplit(self.url))
        self.poll_every = poll_every
        self.http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
        )

    def close(self) -> None:
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

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, self._address(path), **kwargs)
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

    def _all(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every row of a paged list, following ``next`` to the end."""
        page = self._get(path, **params)
        while True:
            yield from page["results"]
            if not page["next"]:
                return
            page = self._request("GET", page["next"])

    def _wait(self, what: str, path: str, *, timeout: float | None, done: Callable[[dict], bool]) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self._get(path)
            if done(state):
                if state.get("status") in UNSUCCESSFUL:
                    raise JobFailed(what, state)
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{what} {path} was still {state.get('status')} after {timeout} s")
            time.sleep(self.poll_every)

    # -- studies -------------------------------------------------------------------------

    def studies(self) -> list[dict[str, Any]]:
        return list(self._all("/studies/"))

    def study(self, study_id: int) -> dict[str, Any]:
        return self._get(f"/studies/{study_id}/")

    def create_study(self, *, name: str, task_type: str, **settings: Any) -> dict[str, Any]:
        """A draft study; ``settings`` are ``config`` and the study settings of docs/study-files.md."""
        return self._post("/studies/", {"name": name, "task_type": task_type, **settings})

    def create_study_from_file(self, path: str | Path, *, replace: bool = False) -> dict[str, Any]:
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
        return self._post("/studies/from-study-file/", files=files, data={"replace": str(replace).lower()})

    def update_study(self, study_id: int, **changes: Any) -> dict[str, Any]:
        return self._request("PATCH", f"/studies/{study_id}/", json=changes)

    def open_study(self, study_id: int) -> dict[str, Any]:
        return self._post(f"/studies/{study_id}/open/")

    def close_study(self, study_id: int) -> dict[str, Any]:
        return self._post(f"/studies/{study_id}/close/")

    def progress(self, study_id: int) -> dict[str, Any]:
        return self._get(f"/studies/{study_id}/progress/")

    def watch_progress(
        self,
        study_id: int,
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        every: float | None = None,
        timeout: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Yield the study's progress every ``every`` seconds until ``until(progress)`` (default: 100 %)."""
        until = until or (lambda p: p["percent"] >= 100)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            progress = self.progress(study_id)
            yield progress
            if until(progress):
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"study {study_id} was at {progress['percent']} % after {timeout} s")
            time.sleep(self.poll_every if every is None else every)

    # -- items ---------------------------------------------------------------------------

    def upload_items(
        self,
        study_id: int,
        source: str | Path | list[dict[str, Any]],
        *,
        replace: bool = False,
        wait: bool = True,
        timeout: float | None = 600,
    ) -> dict[str, Any]:
        """Add items from a CSV/XLSX/JSONL file or a list of item dicts; all or nothing.

        A big file is imported by a worker: with ``wait`` this polls until it is done.
        """
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
            outcome = self._wait(
                "import", outcome["status_url"], timeout=timeout, done=lambda s: s["status"] in FINISHED
            )
        return outcome

    def items(self, study_id: int) -> list[dict[str, Any]]:
        return list(self._all(f"/studies/{study_id}/items/"))

    # -- judgments and reports -----------------------------------------------------------

    def judgments(self, study_id: int, *, rater_kind: str | None = None, status: str | None = None):
        """The study's judgments as a pandas DataFrame, one row per judgment.

        The answer's fields become ``value_<field>`` columns (``value_rating``, ``value_choice`` …);
        ``value`` keeps the whole answer. Missing answers (an unparseable LLM reply) are NaN.
        """
        import pandas as pd

        rows = list(self._all(f"/studies/{study_id}/judgments/", rater_kind=rater_kind, status=status))
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

    def agreement(self, study_id: int, *, group: str = "humans", raters: list[int] | None = None) -> dict[str, Any]:
        """The agreement report of one rater group, as a dict (docs/analyze.md says what it holds)."""
        ids = ",".join(str(r) for r in raters) if raters else None
        return self._get(f"/studies/{study_id}/reports/agreement/", group=group, raters=ids)

    # -- exports -------------------------------------------------------------------------

    def export(
        self,
        study_id: int,
        fmt: str,
        to: str | Path,
        *,
        rater_subset: list[int] | None = None,
        timeout: float | None = 600,
    ) -> Path:
        """Write the study's export in format ``fmt`` (any the server offers) to the file ``to``."""
        queued = self._post(f"/studies/{study_id}/exports/", {"format": fmt, "rater_subset": rater_subset or []})
        done = self._wait("export", queued["status_url"], timeout=timeout, done=lambda s: s["status"] in FINISHED)
        return self.download(done["download_url"], to)

    def download(self, url: str, to: str | Path) -> Path:
        """Stream a file the API hands out (an export's ``download_url``) to disk."""
        to = Path(to)
        with self.http.stream("GET", self._address(url), headers={"Accept": "*/*"}) as response:
            self._refuse_redirect(response)
            if response.status_code >= 400:
                response.read()
                raise FunnyboneError(response.status_code, response.text, url)
            with to.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        return to

    # -- judges, runs, tournaments -------------------------------------------------------

    def judges(self) -> list[dict[str, Any]]:
        return list(self._all("/judges/"))

    def create_judge(self, **settings: Any) -> dict[str, Any]:
        """A judge: ``baseline="random"|"constant"|"length"``, or ``name``, ``base_url``, ``model``, …"""
        return self._post("/judges/", settings)

    def start_run(self, *, study: int, judge: int, trials: int | None = None, both_orders: bool | None = None):
        body = {"study": study, "judge": judge, "trials": trials, "both_orders": both_orders}
        return self._post("/runs/", {k: v for k, v in body.items() if v is not None})

    def run(self, run_id: int) -> dict[str, Any]:
        return self._get(f"/runs/{run_id}/")

    def wait_for_run(self, run_id: int, *, timeout: float | None = 600) -> dict[str, Any]:
        return self._wait("run", f"/runs/{run_id}/", timeout=timeout, done=lambda s: s["status"] in FINISHED)

    def start_tournament(
        self,
        *,
        name: str,
        source_study: int,
        judge: int,
        schedule: str = "round_robin",
        budget: int | None = None,
        seed: int = 0,
    ) -> dict[str, Any]:
        body = {"name": name, "source_study": source_study, "judge": judge, "schedule": schedule, "seed": seed}
        if budget is not None:
            body["budget"] = budget
        return self._post("/tournaments/", body)

    def wait_for_tournament(self, tournament_id: int, *, timeout: float | None = 600) -> dict[str, Any]:
        return self._wait(
            "tournament", f"/tournaments/{tournament_id}/", timeout=timeout, done=lambda s: s["status"] in FINISHED
        )

    def standings(self, tournament_id: int) -> dict[str, Any]:
        """The tournament's leaderboard so far, as a dict (ranking, Bradley–Terry, Elo, win rates)."""
        return self._get(f"/tournaments/{tournament_id}/standings/")
