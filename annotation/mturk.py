# SPDX-License-Identifier: GPL-3.0-or-later
"""Amazon Mechanical Turk's ExternalQuestion: the entry link, the preview, the frame and the submit back.

MTurk shows the study's entry link in a frame on its own site and adds
``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo`` to it. Before a
worker accepts the HIT the assignment id is ``ASSIGNMENT_ID_NOT_AVAILABLE``:
that is a preview, which shows what the task is and takes no place. After the
accept the worker enrols with ``workerId`` as their participant id; at the end
the page posts a form to ``turkSubmitTo`` + ``/mturk/externalSubmit`` with the
``assignmentId`` and the completion code, which completes the assignment on
MTurk (the form must hold one field besides the assignment id).

``turkSubmitTo`` comes from the link, so anyone could write another address
there: only hosts in ``FUNNYBONE_MTURK_SUBMIT_HOSTS`` (MTurk's live and sandbox
sites by default) are accepted. The pages of an MTurk study may be framed by
MTurk's sites (``FUNNYBONE_MTURK_FRAME_ANCESTORS``) and post to the checked
submit address; every other study keeps the site's no-frames policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from .models import Enrollment, Study

PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
SUBMIT_PATH = "/mturk/externalSubmit"
NAMESPACE = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
#: The frame's height in pixels the ExternalQuestion asks for (0 would ask for the whole window).
FRAME_HEIGHT = 800
#: The entry link's parameters kept on the enrollment (the worker id becomes the rater's id).
KEPT_PARAMS = ("assignmentId", "hitId", "turkSubmitTo")


@dataclass(frozen=True)
class MTurkEntry:
    """What MTurk's link says: a preview (no assignment yet), or an accepted assignment of a worker."""

    preview: bool
    worker_id: str = ""
    params: dict[str, str] | None = None


def submit_origin(turk_submit_to: str) -> str:
    """``scheme://host[:port]`` of an allowed ``turkSubmitTo``; "" when it is not one of MTurk's sites."""
    try:
        parts = urlsplit(turk_submit_to.strip())
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.username or parts.password:
        return ""
    host = parts.hostname.lower()
    netloc = f"{host}:{port}" if port else host
    allowed = {h.strip().lower() for h in settings.FUNNYBONE_MTURK_SUBMIT_HOSTS if h.strip()}
    if host not in allowed and netloc not in allowed:
        return ""
    return f"{parts.scheme}://{netloc}"


def read_entry(query: Any) -> MTurkEntry:
    """The entry link's MTurk parameters; a ValueError names the one that is wrong."""
    assignment = (query.get("assignmentId") or "").strip()
    if not assignment or assignment == PREVIEW_ASSIGNMENT:
        return MTurkEntry(preview=True)
    worker = (query.get("workerId") or "").strip()
    if not worker:
        raise ValueError("workerId")
    origin = submit_origin(query.get("turkSubmitTo") or "")
    if not origin:
        raise ValueError("turkSubmitTo")
    params = {
        "assignmentId": assignment[:200],
        "hitId": (query.get("hitId") or "").strip()[:200],
        "turkSubmitTo": origin,
    }
    return MTurkEntry(preview=False, worker_id=worker, params=params)


def submit_form(enrollment: Enrollment) -> dict[str, str] | None:
    """Where and what the end page posts to complete the MTurk assignment; None for other entries."""
    params = enrollment.entry_params or {}
    origin = submit_origin(str(params.get("turkSubmitTo") or ""))
    if enrollment.study.recruitment != Study.Recruitment.MTURK or not origin or not params.get("assignmentId"):
        return None
    return {"action": origin + SUBMIT_PATH, "assignment_id": str(params["assignmentId"])}


def external_question_xml(entry_url: str, *, frame_height: int = FRAME_HEIGHT) -> str:
    """The ExternalQuestion to paste as the HIT's question: the study's entry link in MTurk's frame."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ExternalQuestion xmlns="{NAMESPACE}">\n'
        f"  <ExternalURL>{escape(entry_url)}</ExternalURL>\n"
        f"  <FrameHeight>{int(frame_height)}</FrameHeight>\n"
        "</ExternalQuestion>\n"
    )


class MTurkFrameMiddleware:
    """Lets MTurk frame an MTurk study's annotator pages, and its end page post back to MTurk.

    Listed after the clickjacking and CSP middleware, so it answers first and
    they read what it set. The study is the one the annotator views read for the
    request's language (``annotation.views.annotator._study_config``).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        from .views.annotator import READ_ENROLLMENT, READ_STUDY

        _, enrollment = getattr(request, READ_ENROLLMENT, (None, None))
        study = enrollment.study if enrollment is not None else getattr(request, READ_STUDY, (None, None))[1]
        if study is None or study.recruitment != Study.Recruitment.MTURK:
            return response
        policy = dict(settings.SECURE_CSP)
        policy["frame-ancestors"] = list(settings.FUNNYBONE_MTURK_FRAME_ANCESTORS)
        form = submit_form(enrollment) if enrollment is not None else None
        if form is not None:
            policy["form-action"] = [*policy.get("form-action", []), submit_origin(form["action"])]
        response._csp_config = policy
        response.xframe_options_exempt = True
        return response
