# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python client: it covers every v1 operation, retries as documented against a real HTTP server,
reads pages lazily, type-checks under ``mypy --strict``, and its docs (docs/client.md) are current.

The client's whole run against a live site is tests/live/test_client_readme.py.
"""

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "funnybone" / "client"
sys.path.insert(0, str(CLIENT))

from funnybone_client import OPERATIONS, Funnybone, FunnyboneError  # noqa: E402


def schema_operations() -> set[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator(api_version="v1").get_schema(request=None, public=True)
    return {operation["operationId"] for path in schema["paths"].values() for operation in path.values()}


def test_every_v1_operation_has_a_client_method():
    assert set(OPERATIONS) == schema_operations()
    for method in OPERATIONS.values():
        assert callable(getattr(Funnybone, method, None)), method
        assert getattr(Funnybone, method).__doc__, f"{method} has no docstring for docs/client.md"


class Script:
    """A real HTTP server on loopback that answers each request with the next of a script of answers."""

    def __init__(self, answers: list[tuple[int, dict[str, str], object]]) -> None:
        self.answers = answers
        self.seen: list[tuple[str, str]] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                script.seen.append((self.command, self.path))
                status, headers, body = script.answers.pop(0)
                data = json.dumps(body).replace("{origin}", script.origin).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def script() -> Iterator[Script]:
    served = Script([])
    yield served
    served.close()


def client(script: Script, waits: list[float], **options) -> Funnybone:
    return Funnybone(script.origin, token="t", sleep=waits.append, backoff=0.5, **options)


class TestRetries:
    def test_429_and_5xx_are_asked_again_honouring_retry_after(self, script):
        script.answers = [
            (429, {"Retry-After": "7"}, {"detail": "Slow down."}),
            (503, {}, {"detail": "Busy."}),
            (200, {}, {"id": 1}),
        ]
        waits: list[float] = []
        assert client(script, waits).study(1) == {"id": 1}
        assert waits[0] == 7.0
        assert 0.5 <= waits[1] <= 1.0  # backoff 0.5 doubled once, with jitter down to half
        assert [path for _, path in script.seen] == ["/api/v1/studies/1/"] * 3

    def test_after_the_last_retry_the_error_names_the_servers_message(self, script):
        script.answers = [(502, {}, {"detail": "Bad gateway."})] * 3
        waits: list[float] = []
        with pytest.raises(FunnyboneError, match="Bad gateway") as raised:
            client(script, waits, retries=2).study(1)
        assert raised.value.status == 502 and len(waits) == 2

    def test_a_post_is_not_sent_again_after_a_500_but_is_after_a_429(self, script):
        script.answers = [(500, {}, {"detail": "Boom."})]
        with pytest.raises(FunnyboneError):
            client(script, []).open_study(1)
        assert len(script.seen) == 1
        script.answers = [(429, {"Retry-After": "1"}, {"detail": "Later."}), (200, {}, {"state": "open"})]
        assert client(script, []).open_study(1) == {"state": "open"}

    def test_a_refused_connection_is_tried_again_then_raised(self):
        import httpx2

        waits: list[float] = []
        fb = Funnybone("http://127.0.0.1:21799", token="t", sleep=waits.append, retries=3)
        with pytest.raises(httpx2.ConnectError):
            fb.study(1)
        assert len(waits) == 3 and waits == sorted(waits)

    def test_error_bodies_keep_their_fields(self, script):
        script.answers = [(400, {}, {"detail": "name: This field is required.", "name": ["This field is required."]})]
        with pytest.raises(FunnyboneError, match="name: This field is required") as raised:
            client(script, []).create_study(name="", task_type="ordinal")
        assert raised.value.problems == {"name": ["This field is required."]}


def test_lists_ask_for_the_next_page_only_when_it_is_reached(script):
    script.answers = [
        (
            200,
            {},
            {
                "count": 3,
                "next": "{origin}/api/v1/runs/?limit=2&offset=2",
                "previous": None,
                "results": [{"id": 1}, {"id": 2}],
            },
        ),
        (200, {}, {"count": 3, "next": None, "previous": None, "results": [{"id": 3}]}),
    ]
    runs = client(script, []).runs(study=5)
    assert script.seen == []
    assert next(runs) == {"id": 1} and next(runs) == {"id": 2}
    assert len(script.seen) == 1 and script.seen[0][1] == "/api/v1/runs/?study=5"
    assert [run["id"] for run in runs] == [3]
    assert len(script.seen) == 2


def test_a_wait_reports_each_state_it_polls(script):
    script.answers = [
        (200, {}, {"id": 4, "status": "running", "rows_written": 10}),
        (200, {}, {"id": 4, "status": "done", "rows_written": 30}),
    ]
    seen: list[int] = []
    state = client(script, []).wait_for_export(4, on_progress=lambda s: seen.append(s["rows_written"]))
    assert state["status"] == "done" and seen == [10, 30]


def test_the_public_api_type_checks_under_mypy_strict(tmp_path):
    """From a copy, as a user's type checker sees the installed package (py.typed), not the server's code."""
    shutil.copytree(CLIENT / "funnybone_client", tmp_path / "funnybone_client")
    assert (tmp_path / "funnybone_client" / "py.typed").exists()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "funnybone_client"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_docs_client_md_is_the_one_the_code_writes():
    done = subprocess.run(
        [sys.executable, str(CLIENT / "write_docs.py"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
