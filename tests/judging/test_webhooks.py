# SPDX-License-Identifier: GPL-3.0-or-later
"""Webhooks: a study opening and a judge run ending reach the researcher's address in a POST signed with the
webhook's secret; a receiver that keeps failing leaves a failed delivery with the reason, which can be sent again."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse

from annotation.services.studies import study_set_state
from judging.models import Webhook, WebhookDelivery
from judging.runner import cancel_run
from judging.services.judges import judge_create
from judging.services.runs import run_create

pytestmark = pytest.mark.django_db


class Receiver:
    """A local HTTP server that records every POST and answers with ``status``."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append({"headers": dict(self.headers), "body": body})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def no_waits(monkeypatch):
    monkeypatch.setattr("judging.webhooks.WAITS", (0.0, 0.0))


def add_webhook(client, researcher, url, **fields):
    client.force_login(researcher)
    data = {"url": url, "events": ["study.opened", "study.closed", "run.cancelled", "run.done"], **fields}
    return client.post(reverse("judging:webhook_list"), data)


def send_queued(captured) -> None:
    """Run the deliveries queued on commit through the real task (its job block included), in this process."""
    for callback in captured:
        callback()


@pytest.fixture
def eager(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from funnybone.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def verify(secret: str, headers: dict, body: bytes) -> bool:
    parts = dict(part.split("=", 1) for part in headers["X-Funnybone-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


def test_a_study_opening_is_posted_signed_with_the_secret_shown_once(
    client, researcher, make_study, receiver, eager, django_capture_on_commit_callbacks
):
    study = make_study(n_items=2, open_=False)
    page = add_webhook(client, researcher, receiver.url)
    assert page.status_code == 200
    hook = Webhook.objects.get(owner=researcher)
    assert hook.secret in page.content.decode()  # shown once, on creation
    assert hook.secret not in client.get(reverse("judging:webhook_list")).content.decode()
    with django_capture_on_commit_callbacks() as captured:
        study_set_state(study=study, state="open", actor=researcher)
    send_queued(captured)
    (request,) = receiver.received
    body = json.loads(request["body"])
    assert body["event"] == "study.opened"
    assert body["data"]["study"] == {"id": study.pk, "slug": study.slug, "name": study.name, "state": "open"}
    assert request["headers"]["X-Funnybone-Event"] == "study.opened"
    assert verify(hook.secret, request["headers"], request["body"])
    assert not verify("another secret", request["headers"], request["body"])
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.response_status, delivery.tries) == ("done", 200, 1)


def test_a_judge_run_ending_is_told_with_its_outcome(
    client, researcher, make_study, receiver, eager, django_capture_on_commit_callbacks
):
    study = make_study(n_items=2)
    add_webhook(client, researcher, receiver.url, study=study.pk)
    judge = judge_create(owner=researcher, name="j", base_url="http://127.0.0.1:9/v1", model="m")
    run = run_create(study=study, judge=judge, enqueue=False)
    with django_capture_on_commit_callbacks() as captured:
        cancel_run(run)
    send_queued(captured)
    (request,) = receiver.received
    body = json.loads(request["body"])
    assert body["event"] == "run.cancelled"
    assert body["data"]["run"]["id"] == run.pk and body["data"]["run"]["total"] == 2


def test_a_failing_receiver_leaves_a_failed_delivery_that_can_be_sent_again(
    client, researcher, other_researcher, make_study, receiver, eager, no_waits, django_capture_on_commit_callbacks
):
    study = make_study(n_items=2, open_=False)
    add_webhook(client, researcher, receiver.url)
    receiver.status = 500
    with django_capture_on_commit_callbacks() as captured:
        study_set_state(study=study, state="open")
    send_queued(captured)
    assert len(receiver.received) == 3
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert delivery.error == "the receiver answered HTTP 500 (3 tries)"
    page = client.get(reverse("judging:webhook_list")).content.decode()
    assert "the receiver answered HTTP 500 (3 tries)" in page
    # Nobody else may send it again; its owner may, as a new delivery.
    client.force_login(other_researcher)
    assert client.post(reverse("judging:webhook_redeliver", args=[delivery.pk])).status_code == 404
    client.force_login(researcher)
    receiver.status = 204
    with django_capture_on_commit_callbacks() as captured:
        client.post(reverse("judging:webhook_redeliver", args=[delivery.pk]))
    send_queued(captured)
    assert [d.status for d in WebhookDelivery.objects.order_by("id")] == ["failed", "done"]


def test_an_address_the_outbound_rules_refuse_is_not_saved(client, researcher):
    answer = add_webhook(client, researcher, "http://10.1.2.3/hook")
    assert answer.status_code == 400
    assert "address" in answer.content.decode()
    assert not Webhook.objects.exists()
    assert add_webhook(client, researcher, "ftp://example.org/").status_code == 400


def test_a_webhook_of_another_study_or_researcher_is_not_told(
    client, researcher, other_researcher, make_study, receiver, django_capture_on_commit_callbacks
):
    mine, other = make_study(n_items=1, open_=False), make_study(n_items=1, open_=False)
    add_webhook(client, researcher, receiver.url, study=mine.pk)
    with django_capture_on_commit_callbacks():
        study_set_state(study=other, state="open")
    assert not WebhookDelivery.objects.exists()
    client.force_login(other_researcher)
    hook = Webhook.objects.get()
    assert client.post(reverse("judging:webhook_delete", args=[hook.pk])).status_code == 404
    assert Webhook.objects.exists()
