"""The Python client follows only its own server's addresses and never takes a redirect for an answer.

It sent its token to any absolute address the server handed back (a page's ``next``, an
export's ``download_url``), and read a 302 as ``None``. Two real HTTP servers on loopback:
the API, scripted per test, and another origin that records whatever reaches it.
"""

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from funnybone.client.funnybone_client import ForeignAddress, Funnybone, JobFailed, UnexpectedRedirect

TOKEN = "researcher-token"


@dataclass
class Server:
    """A loopback HTTP server answering each path from ``routes``: (status, headers, body)."""

    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization header)
    url: str = ""


def serve(server: Server) -> Iterator[Server]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.seen.append((self.path, self.headers.get("Authorization")))
            status, headers, body = server.routes.get(self.path, (404, {}, b'{"detail": "Not found."}'))
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def api() -> Iterator[Server]:
    yield from serve(Server())


@pytest.fixture
def elsewhere() -> Iterator[Server]:
    """Another origin: the same host on another port (a different origin, as a browser counts them)."""
    yield from serve(Server(routes={"/steal": (200, {}, b'{"results": [], "next": null}')}))


def page(results: list, next_url: str | None) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, json.dumps({"results": results, "next": next_url}).encode()


def client(api: Server) -> Funnybone:
    return Funnybone(api.url, token=TOKEN, poll_every=0)


class TestFollowedAddresses:
    def test_a_next_page_on_the_servers_own_origin_is_followed(self, api):
        api.routes["/api/v1/studies/"] = page([{"id": 1}], f"{api.url}/api/v1/studies/?page=2")
        api.routes["/api/v1/studies/?page=2"] = page([{"id": 2}], None)
        with client(api) as fb:
            assert list(fb.studies()) == [{"id": 1}, {"id": 2}]
        assert [auth for _, auth in api.seen] == [f"Token {TOKEN}"] * 2

    def test_a_next_page_on_another_origin_is_refused_and_gets_no_token(self, api, elsewhere):
        api.routes["/api/v1/studies/"] = page([{"id": 1}], f"{elsewhere.url}/steal")
        with client(api) as fb, pytest.raises(ForeignAddress) as caught:
            list(fb.studies())  # lists are lazy: the next page is asked for when it is reached
        assert f"{elsewhere.url}/steal, which is not on {api.url}" in str(caught.value)
        assert elsewhere.seen == []

    @pytest.mark.parametrize("scheme_relative", [False, True])
    def test_a_download_url_on_another_origin_is_refused_and_gets_no_token(
        self, api, elsewhere, tmp_path, scheme_relative
    ):
        foreign = f"{elsewhere.url}/steal"
        if scheme_relative:
            foreign = foreign.removeprefix("http:")
        with client(api) as fb, pytest.raises(ForeignAddress):
            fb.download(foreign, tmp_path / "export.csv")
        assert elsewhere.seen == []
        assert not (tmp_path / "export.csv").exists()

    def test_another_host_name_for_the_same_address_is_another_origin(self, api, tmp_path):
        # "localhost" may well be 127.0.0.1, but the token was given for the address the researcher typed.
        other_name = api.url.replace("127.0.0.1", "localhost")
        with client(api) as fb, pytest.raises(ForeignAddress):
            fb.download(f"{other_name}/api/v1/exports/1/download/", tmp_path / "export.csv")
        assert api.seen == []


class TestRedirects:
    def test_a_redirect_is_an_error_naming_its_status_and_location(self, api):
        api.routes["/api/v1/studies/7/"] = (302, {"Location": "/accounts/login/?next=/api/v1/studies/7/"}, b"")
        with client(api) as fb, pytest.raises(UnexpectedRedirect) as caught:
            fb.study(7)
        assert caught.value.status == 302
        assert "302 from" in str(caught.value)
        assert "an unexpected redirect to /accounts/login/?next=/api/v1/studies/7/" in str(caught.value)

    def test_a_redirected_download_writes_no_file(self, api, tmp_path):
        api.routes["/api/v1/exports/1/download/"] = (301, {"Location": "https://cdn.example.org/x.csv"}, b"")
        with client(api) as fb, pytest.raises(UnexpectedRedirect, match="cdn.example.org"):
            fb.download(f"{api.url}/api/v1/exports/1/download/", tmp_path / "export.csv")
        assert not (tmp_path / "export.csv").exists()


class TestWaitingForARun:
    def test_a_paused_run_ends_the_wait_with_the_reason_the_server_gave(self, api):
        reason = "could not connect to http://127.0.0.1:9/v1: connection refused"
        api.routes["/api/v1/runs/7/"] = 200, {}, json.dumps({"id": 7, "status": "paused", "error": reason}).encode()
        with client(api) as fb, pytest.raises(JobFailed) as failed:
            fb.wait_for_run(7, timeout=5)
        assert failed.value.state["status"] == "paused"
        assert "ended paused" in str(failed.value) and reason in str(failed.value)

    def test_a_run_that_finishes_is_returned(self, api):
        api.routes["/api/v1/runs/8/"] = 200, {}, json.dumps({"id": 8, "status": "done", "error": ""}).encode()
        with client(api) as fb:
            assert fb.wait_for_run(8, timeout=5)["status"] == "done"
