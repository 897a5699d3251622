"""A chat-completions endpoint on loopback that remembers who called it and with which key.

What it answers is set on the server: ``answer`` (a valid completion), ``redirect`` (a 302 to
``redirect_to``) or ``error`` (HTTP 400 with ``error_body``) or ``raw`` (HTTP 200 with ``raw_body`` as it is).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from judging.testing.fault_server import answer_for, completion_body


class _Handler(BaseHTTPRequestHandler):
    server: "RecordingServer"

    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.calls.append({"path": self.path, "authorization": self.headers.get("Authorization", "")})
        if self.server.mode == "redirect":
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.server.mode == "raw":
            # A 200 whose body is whatever the test set: deep JSON, a flood of bytes.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(self.server.raw_body)))
            self.end_headers()
            self.wfile.write(self.server.raw_body)
            return
        if self.server.mode == "error":
            payload, status = self.server.error_body.encode(), 400
        else:
            payload, status = completion_body(answer_for(json.loads(body or b"{}"))), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if status == 200 else "text/html")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode: str = "answer") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = mode
        self.redirect_to = ""
        self.error_body = ""
        self.raw_body = b""
        self.calls: list[dict[str, str]] = []
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/v1"

    def keys_seen(self) -> list[str]:
        return [call["authorization"] for call in self.calls]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
