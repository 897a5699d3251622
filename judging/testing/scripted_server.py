"""A loopback OpenAI-compatible chat-completions server whose answers the test scripts.

The test gives a callable ``answer(request) -> str``: it receives the request body
the openai SDK sent (model, messages, response_format) and returns the reply text,
which goes back as the message content of a well-formed completion (usage
included); a :class:`Reply` sets the finish reason too. Ground-truth tests use it for judges that answer from a synthetic
truth; the worker only needs the base URL:

    with ScriptedServer(lambda request: json.dumps({"rating": 2})) as server:
        judge_create(..., base_url=server.url)

For endpoints that misbehave (timeouts, 429s, broken bodies) see fault_server.
Bounded by design: it serves only 127.0.0.1 and stops with its owner.
"""

import json
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any

from judging.testing import fault_server


@dataclass(frozen=True)
class Reply:
    """An answer with a finish reason other than "stop" (say "length": the model ran out of tokens),
    or with the reasoning a reasoning model's server sends beside the answer (``reasoning_content``)."""

    content: str
    finish_reason: str = "stop"
    reasoning_content: str | None = None


Answer = Callable[[dict[str, Any]], "str | Reply"]


def prompt_text(request: dict[str, Any]) -> str:
    """The contents of all the request's messages, one after another, a line break between."""
    return "\n".join(str(message.get("content") or "") for message in request.get("messages", []))


def requested_schema(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema the answer is asked to follow (OpenAI's json_schema, or llama-cpp's json_object); {} if none."""
    fmt = request.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}


def reply_as_asked(request: dict[str, Any], field: str, value: Any) -> str:
    """``{field: value}`` as JSON when the request's schema asks for that field, else the bare value as text."""
    return json.dumps({field: value}) if field in requested_schema(request).get("properties", {}) else str(value)


class _Handler(fault_server._Handler):
    """fault_server's handler (quiet, HTTP/1.1, GET /v1/models), answering every completion from the script."""

    server: "ScriptedServer"

    def do_GET(self) -> None:
        # llama.cpp's server says how many requests it serves at once here (judging.concurrency).
        if self.server.props is not None and self.path.rstrip("/") == "/props":
            self._send(200, json.dumps(self.server.props).encode())
            return
        super().do_GET()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"no endpoint {self.path}"}}).encode())
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._send(400, b'{"error": {"message": "the body is not JSON"}}')
            return
        self.server.count_request()
        try:
            content = self.server.answer(request)
        except Exception:
            # A bug in the test's script: print it where pytest shows it, and fail this call.
            traceback.print_exc()
            self._send(500, b'{"error": {"message": "the scripted answer raised an exception"}}')
            return
        reply = content if isinstance(content, Reply) else Reply(content)
        self._send(
            200,
            fault_server.completion_body(
                reply.content, request.get("model", "fake"), reply.finish_reason, reply.reasoning_content
            ),
        )


class ScriptedServer(ThreadingHTTPServer):
    """Answers every chat completion with ``answer(request)``; ``url`` is the base URL for a judge."""

    daemon_threads = True

    def __init__(self, answer: Answer, *, props: dict[str, Any] | None = None):
        """``props``: the body of ``GET /props``, as llama.cpp's server gives it (404 when None)."""
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.props = props
        self.requests = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def count_request(self) -> None:
        with self._lock:
            self.requests += 1

    def __enter__(self) -> "ScriptedServer":
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()
