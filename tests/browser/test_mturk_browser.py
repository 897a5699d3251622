"""A Mechanical Turk worker in Chromium: previews the HIT, accepts it, answers, and submits to turkSubmitTo.

``turkSubmitTo`` is a local server standing in for MTurk's ``/mturk/externalSubmit``,
which records the form it receives.
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from django.core.cache import cache

from annotation.models import Enrollment, Item, Rater, Study
from tests.conftest import build_study
from tests.crowd.conftest import _free_port

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORKER = "A1B2C3D4E5F6G7"


class FakeTurk(BaseHTTPRequestHandler):
    received: list[dict[str, list[str]]] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.path == "/mturk/externalSubmit":
            FakeTurk.received.append(parse_qs(self.rfile.read(length).decode()))
            body, status = b"<html><body><h1>HIT submitted</h1></body></html>", 200
        else:
            body, status = b"not found", 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def turk(settings):
    FakeTurk.received = []
    server = ThreadingHTTPServer(("127.0.0.1", _free_port()), FakeTurk)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    settings.FUNNYBONE_MTURK_SUBMIT_HOSTS = [host]
    yield f"http://{host}"
    server.shutdown()
    server.server_close()


def test_an_mturk_worker_previews_accepts_answers_and_submits_the_assignment(
    live_server, browser_page, researcher, turk
):
    cache.clear()
    study = build_study(
        researcher,
        n_items=2,
        quota_per_item=1,
        recruitment=Study.Recruitment.MTURK,
        completion_code="MTURK-DONE",
        description="Rate how funny each short joke is.",
    )
    page = browser_page
    entry = f"{live_server.url}/s/{study.entry_token}/"

    # Preview: MTurk shows the page before the worker accepts; nothing is taken, nobody enrolled.
    response = page.goto(f"{entry}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT1&turkSubmitTo={turk}")
    assert response.status == 200
    assert page.locator("[data-mturk-preview]").is_visible()
    assert "Accept the HIT to begin" in page.locator("main").inner_text()
    assert "Text 0" in page.locator("main").inner_text()  # an example item
    # MTurk's sites may frame it; every other site may not.
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors https://www.mturk.com" in policy and "x-frame-options" not in response.headers
    assert not Rater.objects.exists() and not Enrollment.objects.exists()
    assert sum(Item.objects.filter(study=study).values_list("places_taken", flat=True)) == 0

    # A turkSubmitTo that is not MTurk's is refused, so nobody can make the end page post elsewhere.
    bad = page.goto(f"{entry}?assignmentId=ASG1&hitId=HIT1&workerId={WORKER}&turkSubmitTo=https://evil.example")
    assert bad.status == 400 and not Rater.objects.exists()

    # Accepted: the worker enrols under their worker id and does the task.
    page.goto(f"{entry}?assignmentId=ASG1&hitId=HIT1&workerId={WORKER}&turkSubmitTo={turk}")
    page.wait_for_url("**/consent/")
    page.get_by_role("button", name="I agree").click()
    page.wait_for_url("**/instructions/")
    page.get_by_role("button", name="Start").click()
    for _ in range(2):
        page.wait_for_url("**/item/")
        first = page.locator("input[name=assignment]").input_value()
        page.locator("#item-card form button[type=submit]").first.click()
        page.wait_for_function(
            "prev => { const f = document.querySelector('input[name=assignment]'); return !f || f.value !== prev; }",
            arg=first,
        )
    page.wait_for_url("**/done/")
    enrollment = Enrollment.objects.get(rater__external_id=WORKER)
    assert enrollment.entry_params["assignmentId"] == "ASG1" and enrollment.entry_params["hitId"] == "HIT1"

    # The end page posts the assignment back to turkSubmitTo/mturk/externalSubmit with the completion code.
    page.get_by_role("button", name="Submit the HIT on Mechanical Turk").click()
    page.wait_for_url(f"{turk}/mturk/externalSubmit")
    assert page.get_by_role("heading", name="HIT submitted").is_visible()
    (form,) = FakeTurk.received
    assert form["assignmentId"] == ["ASG1"]
    assert form["completionCode"] == ["MTURK-DONE"]
    assert form["outcome"] == ["completed"]
