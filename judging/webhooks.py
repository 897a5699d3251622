# SPDX-License-Identifier: GPL-3.0-or-later
"""Webhooks: a researcher's address told, in a signed POST, when a study opens or closes and when a judge run ends.

What is sent: a JSON body ``{"event", "delivery", "sent_at", "data"}`` with the
headers ``X-Funnybone-Event``, ``X-Funnybone-Delivery`` and
``X-Funnybone-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>" under
the webhook's secret>``, so a receiver can check who sent it and refuse a replay
(docs/webhooks.md shows the check). A delivery is a held background job
(``WEBHOOK_DELIVERIES``): up to ``TRIES`` POSTs a few seconds apart while its
worker holds it; a receiver that never answers 2xx leaves a failed delivery with
the reason on the webhooks page, where it can be sent again.

The address obeys the judges' outbound rules (``judging.outbound``): checked when
saved and on every connection; no redirects are followed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_save
from django.utils import timezone

from annotation.jobs import Recovered, job_fail, job_finish, job_release, stale_jobs_recover
from annotation.models import AuditEntry, Study

from .models import JudgeRun, RunStatus, Webhook, WebhookDelivery
from .outbound import guarded_client

logger = logging.getLogger(__name__)

EVENTS = {
    "study.opened": "A study opened",
    "study.closed": "A study closed",
    "run.done": "A judge run finished",
    "run.failed": "A judge run failed",
    "run.paused": "A judge run paused (its endpoint could not be reached)",
    "run.cancelled": "A judge run was cancelled",
}
#: POSTs per delivery, and the waits between them (seconds).
TRIES = 3
WAITS = (2.0, 8.0)
TIMEOUT_SECONDS = 10.0
MAX_ATTEMPTS = 2  # claims by workers, as for exports
STUDY_EVENTS = {AuditEntry.Action.OPENED: "study.opened", AuditEntry.Action.CLOSED: "study.closed"}
RUN_EVENTS = {
    RunStatus.DONE: "run.done",
    RunStatus.FAILED: "run.failed",
    RunStatus.PAUSED: "run.paused",
    RunStatus.CANCELLED: "run.cancelled",
}


def new_secret() -> str:
    return secrets.token_hex(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Funnybone-Signature`` header's value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def webhook_emit(*, study: Study, event: str, data: dict[str, Any]) -> list[int]:
    """Queue ``event`` for every active webhook of the study's owner that wants it; the deliveries' ids.

    Sent after the surrounding transaction commits (nothing is told about a change that was rolled back).
    """
    if event not in EVENTS:
        raise ValueError(f"Unknown webhook event {event!r}.")
    hooks = Webhook.objects.filter(Q(study=study) | Q(study__isnull=True), owner_id=study.owner_id, active=True)
    ids = []
    for hook in hooks:
        if event in hook.events:
            ids.append(WebhookDelivery.objects.create(webhook=hook, event=event, payload=data).pk)
    if ids:
        from .tasks import webhook_delivery_task

        transaction.on_commit(lambda: [webhook_delivery_task.delay(pk) for pk in ids])
    return ids


def redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery's event again, as a new delivery (the old one keeps its record)."""
    from .tasks import webhook_delivery_task

    again = WebhookDelivery.objects.create(webhook=delivery.webhook, event=delivery.event, payload=delivery.payload)
    transaction.on_commit(lambda: webhook_delivery_task.delay(again.pk))
    return again


def deliver(*, delivery_id: int, token: str, sleep=time.sleep) -> bool:
    """POST one delivery (the held job's work): True when the receiver answered 2xx."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    hook = delivery.webhook
    body = json.dumps(
        {
            "event": delivery.event,
            "delivery": delivery.pk,
            "sent_at": timezone.now().isoformat(),
            "data": delivery.payload,
        },
        ensure_ascii=False,
        sort_keys=True,
    ).encode()
    problem, status = "", None
    with guarded_client(timeout=TIMEOUT_SECONDS, connections=1, socket_options=[]) as client:
        for attempt in range(TRIES):
            if attempt:
                sleep(WAITS[min(attempt - 1, len(WAITS) - 1)])
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "Funnybone-Webhook/1",
                "X-Funnybone-Event": delivery.event,
                "X-Funnybone-Delivery": str(delivery.pk),
                "X-Funnybone-Signature": signature(hook.secret, int(time.time()), body),
            }
            WebhookDelivery.objects.filter(pk=delivery.pk).update(tries=attempt + 1)
            try:
                response = client.post(hook.url, content=body, headers=headers)
            except Exception as exc:  # noqa: BLE001 - any failure to reach the receiver is recorded, then retried
                problem, status = f"{type(exc).__name__}: {exc}"[:500], None
                continue
            status = response.status_code
            if 200 <= status < 300:
                return job_finish(WebhookDelivery, pk=delivery.pk, token=token, response_status=status, error="")
            problem = f"the receiver answered HTTP {status}" + (
                " (redirects are not followed)" if 300 <= status < 400 else ""
            )
    job_fail(WebhookDelivery, pk=delivery.pk, token=token, response_status=status, error=f"{problem} ({TRIES} tries)")
    return False


def deliveries_recover() -> Recovered:
    from .tasks import webhook_delivery_task

    return stale_jobs_recover(
        WebhookDelivery,
        enqueue=webhook_delivery_task.delay,
        failure=lambda reason: {"error": reason},
        max_attempts=MAX_ATTEMPTS,
        advice="Send it again from the webhooks page.",
    )


def delivery_fail(pk: int, reason: str, token: str | None) -> None:
    job_fail(WebhookDelivery, pk=pk, token=token, error=reason[:2000])


def delivery_release(pk: int) -> None:
    job_release(WebhookDelivery, pk=pk)


# -- What is told ------------------------------------------------------------------------------------


def _study_data(study: Study) -> dict[str, Any]:
    return {"id": study.pk, "slug": study.slug, "name": study.name, "state": study.state}


def _on_audit(sender, instance: AuditEntry, created: bool, **kwargs: Any) -> None:
    event = STUDY_EVENTS.get(instance.action)
    if created and event and instance.study_id:
        study = Study.objects.get(pk=instance.study_id)
        webhook_emit(study=study, event=event, data={"study": _study_data(study)})


def run_ended(run_model: type, pk: int) -> None:
    """Tell the webhooks that judge run ``pk`` reached the state it is now in (called where a run's state changes)."""
    if run_model is not JudgeRun:
        return  # generation runs and tournaments have no events yet
    run = JudgeRun.objects.select_related("study", "judge").filter(pk=pk).first()
    if run is None or run.status not in RUN_EVENTS:
        return
    from .selectors import run_progress

    progress = run_progress(run=run)
    data = {
        "study": _study_data(run.study),
        "run": {
            "id": run.pk,
            "judge": run.judge.name,
            "judge_version": run.judge.version,
            "status": run.status,
            "outcome": progress.outcome,
            "judged": progress.judged,
            "unparseable": progress.unparseable,
            "failed": progress.failed,
            "total": progress.total,
            "reason": run.error,
        },
    }
    webhook_emit(study=run.study, event=RUN_EVENTS[run.status], data=data)


def connect() -> None:
    """Listen for studies opening and closing (their audit entries): called from ``judging.apps``."""
    post_save.connect(_on_audit, sender=AuditEntry, dispatch_uid="judging.webhooks.study_events")


__all__ = ["EVENTS", "run_ended", "signature", "webhook_emit"]
