"""A local stand-in for Prolific's API: the endpoints Funnybone calls, refusing what Prolific refuses.

Plain ``http.server`` (no Django), run in a thread by the tests on a port of
their own. It keeps studies and submissions in memory and answers as Prolific
documents: 401 without the right ``Authorization: Token``, 404 for an unknown
study, submission or bulk payment, 400 for a transition the submission's
status does not allow, a rejection without a category or with a message under
100 characters, a bulk approval naming someone not awaiting review, and bonuses
for someone who did not take part. Listing is paged (``_links.next.href``).
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CATEGORIES = {
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK", "LOW_EFFORT",
    "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
}  # fmt: skip
PAGE = 2


@dataclass
class FakeProlific:
    token: str
    studies: dict[str, list[dict]] = field(default_factory=dict)
    bonuses: dict[str, dict] = field(default_factory=dict)
    paid: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, dict]] = field(default_factory=list)

    def add(self, study_id: str, participant_id: str, status: str, submission_id: str = "") -> str:
        sid = submission_id or uuid.uuid4().hex[:24]
        self.studies.setdefault(study_id, []).append(
            {"id": sid, "participant_id": participant_id, "status": status, "study_id": study_id}
        )
        return sid

    def submission(self, sid: str) -> dict | None:
        return next((s for subs in self.studies.values() for s in subs if s["id"] == sid), None)

    def status_of(self, participant_id: str) -> str:
        return next(
            s["status"] for subs in self.studies.values() for s in subs if s["participant_id"] == participant_id
        )


def _handler(fake: FakeProlific):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _answer(self, status: int, body: dict | None = None) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, detail) -> None:
            self._answer(status, {"error": {"status": status, "detail": detail}})

        def _authorised(self) -> bool:
            if self.headers.get("Authorization") != f"Token {fake.token}":
                self._error(401, "Invalid token.")
                return False
            return True

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self):
            if not self._authorised():
                return
            parts = urlsplit(self.path)
            segments = [p for p in parts.path.split("/") if p]
            fake.calls.append(("GET", parts.path, {}))
            if len(segments) == 5 and segments[:3] == ["api", "v1", "studies"] and segments[4] == "submissions":
                subs = fake.studies.get(segments[3])
                if subs is None:
                    return self._error(404, "Not found.")
                offset = int(parse_qs(parts.query).get("offset", ["0"])[0])
                page = subs[offset : offset + PAGE]
                nxt = None
                if offset + PAGE < len(subs):
                    nxt = {"href": f"http://{self.headers['Host']}{parts.path}?offset={offset + PAGE}"}
                return self._answer(200, {"results": page, "_links": {"next": nxt}, "meta": {"count": len(subs)}})
            self._error(404, "Not found.")

        def do_POST(self):
            if not self._authorised():
                return
            body = self._body()
            path = urlsplit(self.path).path
            segments = [p for p in path.split("/") if p]
            fake.calls.append(("POST", path, body))
            if len(segments) == 5 and segments[:3] == ["api", "v1", "submissions"] and segments[4] == "transition":
                return self._transition(segments[3], body)
            if segments == ["api", "v1", "submissions", "bulk-approve"]:
                subs = fake.studies.get(body.get("study_id", ""))
                if subs is None:
                    return self._error(404, "Study not found.")
                wanted = body.get("participant_ids") or []
                by_pid = {s["participant_id"]: s for s in subs}
                wrong = [p for p in wanted if p not in by_pid or by_pid[p]["status"] != "AWAITING REVIEW"]
                if not wanted or wrong:
                    return self._error(400, {"participant_ids": [f"Not awaiting review: {', '.join(wrong)}"]})
                for p in wanted:
                    by_pid[p]["status"] = "APPROVED"
                return self._answer(200, {})
            if segments == ["api", "v1", "submissions", "bonus-payments"]:
                subs = fake.studies.get(body.get("study_id", ""))
                if subs is None:
                    return self._error(404, "Study not found.")
                takers = {s["participant_id"] for s in subs}
                lines = [line.split(",") for line in (body.get("csv_bonuses") or "").splitlines() if line.strip()]
                wrong = [pid for pid, _ in lines if pid not in takers]
                if not lines or wrong:
                    return self._error(400, {"csv_bonuses": [f"Did not take part: {', '.join(wrong)}"]})
                pid = uuid.uuid4().hex[:24]
                total = sum(float(amount) for _, amount in lines)
                fake.bonuses[pid] = {"lines": lines, "paid": False}
                return self._answer(201, {"id": pid, "study": body["study_id"], "total_amount": total * 100})
            if len(segments) == 5 and segments[:3] == ["api", "v1", "bulk-bonus-payments"] and segments[4] == "pay":
                payment = fake.bonuses.get(segments[3])
                if payment is None:
                    return self._error(404, "Bulk bonus payment not found.")
                payment["paid"] = True
                fake.paid.append(segments[3])
                return self._answer(202, {})
            self._error(404, "Not found.")

        def _transition(self, sid: str, body: dict) -> None:
            sub = fake.submission(sid)
            if sub is None:
                return self._error(404, "Submission not found.")
            action = body.get("action")
            if sub["status"] != "AWAITING REVIEW":
                return self._error(400, f"Cannot {action} a submission that is {sub['status']}.")
            if action == "APPROVE":
                sub["status"] = "APPROVED"
            elif action == "REJECT":
                if body.get("rejection_category") not in CATEGORIES:
                    return self._error(400, {"rejection_category": ["This field is required."]})
                if len(body.get("message") or "") < 100:
                    return self._error(400, {"message": ["Ensure this field has at least 100 characters."]})
                sub["status"] = "REJECTED"
            else:
                return self._error(400, {"action": [f"{action!r} is not a valid choice."]})
            self._answer(200, sub)

    return Handler


def serve(fake: FakeProlific, port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True, name="fake-prolific").start()
    return server
