"""A small OpenAI-compatible chat-completions server on loopback that misbehaves on request.

Used by the tests (retry policy, resumption) and the benchmark (fixed
latency). The behaviour is chosen by the base URL, so a judge configured in
another process (a Celery worker) gets it too:

    http://127.0.0.1:PORT/s/<step>,<step>,.../<nonce>/v1   (see FaultServer.url)

Each distinct request (same messages) walks through the steps: the first try
gets the first step, the retry the second, and so on; the last step repeats.
Steps:

    ok              a valid completion (the answer fits the request's schema)
    slow:MS         ok after MS milliseconds
    hang:S          no answer for S seconds (the client should time out)
    drip:S          a valid body sent a few bytes at a time over S seconds
    429:S           HTTP 429 with Retry-After: S
    500, 503        server errors
    invalid         HTTP 200 whose body is not JSON
    truncated       HTTP 200 whose body stops half way (the connection closes)
    garbage         a completion whose content is prose, not an answer
    badjson         a completion whose content is broken JSON
    tie             a pairwise verdict of TIE
    echo            HTTP 401 whose body repeats the request's Authorization header
    noschema        HTTP 400 when a response_format is sent, else ok
    down:S          the connection is closed unanswered until S seconds after this URL's first
                    request, then ok (an endpoint restarting); a time, not a try, so best alone

Bounded by design: it serves only 127.0.0.1 and stops with its owner.
"""

import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def answer_for(request: dict[str, Any], *, tie: bool = False) -> str:
    """A correct answer for whatever the request's schema (or prompt) asks."""
    fmt = request.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
    props = schema.get("properties", {})
    prompt = " ".join(m.get("content", "") for m in request.get("messages", []))
    if "decision" in props or "Joke A" in prompt:
        decision = "TIE" if tie else "A"
        if "enum" in props.get("decision", {}) and decision not in props["decision"]["enum"]:
            decision = props["decision"]["enum"][-1] if tie else props["decision"]["enum"][0]
        return json.dumps(
            {
                "reasoning": "The first one lands its twist.",
                "decision": decision,
                "humor_mechanisms": ["wordplay"],
                "delivery_features": ["conciseness"],
                "failure_features": ["weak_punchline"],
            }
        )
    if "rating" in props or "single digit" in prompt:
        return "2" if not props else json.dumps({"rating": 2})
    if "label" in props:
        return json.dumps({"label": props["label"].get("enum", ["funny"])[0]})
    if "choice" in props:
        return json.dumps({"choice": 1})
    if "votes" in props:
        return json.dumps({"votes": [1]})
    if "replacement" in props:
        return json.dumps({"replacement": "walrus"})
    if "text" in props:
        return json.dumps({"text": "It plays on the two meanings of the word."})
    return "Why did the walrus cross the road? To prove it could."


def completion_body(
    content: str, model: str = "fake", finish_reason: str = "stop", reasoning_content: str | None = None
) -> bytes:
    message = {"role": "assistant", "content": content}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50},
        }
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    server: "FaultServer"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/v1/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw)
        except ValueError:
            self._send(400, b'{"error": "bad json"}')
            return
        steps = _steps(self.path)
        key = hashlib.sha256(json.dumps(request.get("messages"), sort_keys=True).encode()).hexdigest()
        step = self.server.next_step(self.path, key, steps)
        try:
            self._act(step, request)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (a timeout); nothing to answer

    def _act(self, step: str, request: dict[str, Any]) -> None:
        name, _, arg = step.partition(":")
        if name == "down":
            if self.server.seconds_since_first(self.path) < float(arg or 20):
                self.close_connection = True
                self.connection.shutdown(2)
                return
            name = "ok"
        if name == "slow":
            time.sleep(float(arg or 200) / 1000)
            name = "ok"
        if name == "ok":
            self._send(200, completion_body(answer_for(request), request.get("model", "fake")))
        elif name == "tie":
            self._send(200, completion_body(answer_for(request, tie=True)))
        elif name == "hang":
            time.sleep(float(arg or 5))
            self._send(200, completion_body(answer_for(request)))
        elif name == "drip":
            body = completion_body(answer_for(request))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            pieces = [body[i : i + 8] for i in range(0, len(body), 8)]
            for piece in pieces:
                self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(float(arg or 5) / len(pieces))
        elif name == "429":
            self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": arg or "1"})
        elif name in ("500", "503"):
            self._send(int(name), b'{"error": {"message": "server error"}}')
        elif name == "invalid":
            self._send(200, b'{"choices": [ this is not json')
        elif name == "truncated":
            body = completion_body(answer_for(request))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif name == "garbage":
            self._send(200, completion_body("Honestly, both have their charms; it depends on the audience."))
        elif name == "badjson":
            self._send(200, completion_body('{"decision": "A", "reasoning": "cut off mid'))
        elif name == "echo":
            seen = self.headers.get("Authorization", "")
            self._send(401, json.dumps({"error": {"message": f"invalid key in header {seen}"}}).encode())
        elif name == "noschema":
            if request.get("response_format"):
                self._send(400, b'{"error": {"message": "response_format is not supported"}}')
            else:
                self._send(200, completion_body(answer_for(request)))
        else:
            self._send(500, json.dumps({"error": f"unknown step {step}"}).encode())


def _steps(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    if len(parts) >= 2 and parts[0] == "s":
        return [s for s in parts[1].split(",") if s] or ["ok"]
    return ["ok"]


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, port: int = 0) -> None:
        """``port`` 0 takes a free one; a given port serves an address that refused connections until now."""
        super().__init__(("127.0.0.1", port), _Handler)
        self._lock = threading.Lock()
        self.tries: Counter = Counter()
        self.steps_served: Counter = Counter()
        self._urls = 0
        self._first_seen: dict[str, float] = {}
        self._thread: threading.Thread | None = None

    def seconds_since_first(self, path: str) -> float:
        """Seconds since the first request to this URL (0 for the first one)."""
        with self._lock:
            first = self._first_seen.setdefault(path, time.monotonic())
        return time.monotonic() - first

    def next_step(self, path: str, key: str, steps: list[str]) -> str:
        with self._lock:
            n = self.tries[(path, key)]
            self.tries[(path, key)] += 1
            step = steps[min(n, len(steps) - 1)]
            self.steps_served[step] += 1
            return step

    @property
    def requests(self) -> int:
        return sum(self.tries.values())

    def url(self, *steps: str) -> str:
        """A base URL with these steps; each URL is new, so its tries are counted afresh."""
        with self._lock:
            self._urls += 1
            nonce = self._urls
        port = self.server_address[1]
        return f"http://127.0.0.1:{port}/s/{','.join(steps) or 'ok'}/n{nonce}/v1"

    def start(self) -> "FaultServer":
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


if __name__ == "__main__":
    server = FaultServer().start()
    print(server.url("ok"), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
