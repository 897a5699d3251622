# SPDX-License-Identifier: GPL-3.0-or-later
"""The bare reference for the load harness: the least a Django view can do to take one answer.

It serves the same walk the load client takes (entry link, consent, instructions,
then answers posted with htmx headers, each answer's response carrying the next
item) at ``/bare/<entry_token>/...`` and makes the same writes as Funnybone's
answer path, on the same tables and the same server: lock the rater's
enrollment and the answered assignment, insert the judgment, mark the
assignment done, pick the next item with room (``SELECT ... FOR UPDATE SKIP
LOCKED`` on the index of items with room, in listed order), take its place and
insert its assignment. Nothing else: no session, no CSRF token, no templates,
no validation beyond the rating being a number of the scale, no leases that
expire, no attention checks, no per-rater order, no progress bar.

Only the load harness mounts it (``bench.bare_settings``); it is never part of the app.
"""

from __future__ import annotations

import html
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from annotation.models import Assignment, Enrollment, Item, Judgment, Rater, Study

COOKIE = "bare_enrollment"
LEASE = timedelta(hours=1)


def _prefix(token: str) -> str:
    return f"/bare/{token}/"


def _enrollment(request: HttpRequest) -> int | None:
    try:
        return int(request.COOKIES.get(COOKIE, ""))
    except ValueError:
        return None


def entry(request: HttpRequest, token: str) -> HttpResponse:
    study = Study.objects.only("pk").get(entry_token=token)
    participant = request.GET.get("PROLIFIC_PID", "")
    if not participant:
        return HttpResponseBadRequest("PROLIFIC_PID is missing.")
    rater, _ = Rater.objects.get_or_create(kind=Rater.Kind.CROWD, external_id=participant)
    enrollment, _ = Enrollment.objects.get_or_create(study=study, rater=rater)
    response = HttpResponseRedirect(_prefix(token) + "consent/")
    response.set_cookie(COOKIE, str(enrollment.pk), httponly=True, samesite="Lax")
    return response


@csrf_exempt
def consent(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "POST":
        return HttpResponseRedirect(_prefix(token) + "instructions/")
    return HttpResponse("<form method=post><button name=decision value=agree>Agree</button></form>")


@csrf_exempt
def instructions(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "POST":
        return HttpResponseRedirect(_prefix(token) + "item/")
    return HttpResponse("<form method=post><button>Start</button></form>")


def _pick_next(enrollment: Enrollment, study: Study) -> Assignment | None:
    """The rater's open assignment, or the first item in listed order with room, leased to them."""
    current = Assignment.objects.filter(
        rater_id=enrollment.rater_id, study_id=study.pk, state=Assignment.State.LEASED
    ).first()
    if current is not None:
        return current
    item_id = (
        Item.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(study_id=study.pk, is_attention_check=False, places_taken__lt=study.quota_per_item)
        .exclude(assignments__rater_id=enrollment.rater_id)
        .order_by("places_taken", "position")
        .values_list("pk", flat=True)
        .first()
    )
    if item_id is None:
        return None
    Item.objects.filter(pk=item_id).update(places_taken=F("places_taken") + 1)
    now = timezone.now()
    return Assignment.objects.create(
        study_id=study.pk,
        item_id=item_id,
        rater_id=enrollment.rater_id,
        leased_at=now,
        lease_expires_at=now + LEASE,
    )


def _card(token: str, assignment: Assignment | None, htmx: bool) -> HttpResponse:
    if assignment is None:
        if htmx:
            response = HttpResponse("")
            response["HX-Redirect"] = _prefix(token) + "done/"
            return response
        return HttpResponseRedirect(_prefix(token) + "done/")
    return HttpResponse(
        '<form method=post><input type=hidden name="csrfmiddlewaretoken" value="bare">'
        f'<input type=hidden name="assignment" value="{assignment.pk}">'
        + "".join(f'<button name="rating" value="{p}">{p}</button>' for p in range(4))
        + f"<p>{html.escape(str(assignment.item_id))}</p></form>"
    )


@csrf_exempt
@transaction.atomic
def item(request: HttpRequest, token: str) -> HttpResponse:
    enrollment_id = _enrollment(request)
    if enrollment_id is None:
        return HttpResponseBadRequest("No enrollment.")
    enrollment = Enrollment.objects.select_for_update(of=("self",)).get(pk=enrollment_id)
    study = Study.objects.only("pk", "quota_per_item").get(pk=enrollment.study_id)
    if request.method == "POST":
        try:
            assignment_id, rating = int(request.POST["assignment"]), int(request.POST["rating"])
        except (KeyError, ValueError):
            return HttpResponseBadRequest("assignment and rating must be numbers.")
        if not 0 <= rating <= 3:
            return HttpResponseBadRequest("rating must be 0-3.")
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .filter(pk=assignment_id, rater_id=enrollment.rater_id)
            .first()
        )
        if assignment is None:
            return HttpResponseBadRequest("No such assignment.")
        if not Judgment.objects.filter(assignment_id=assignment.pk).exists():
            Judgment.objects.create(
                assignment_id=assignment.pk,
                study_id=study.pk,
                item_id=assignment.item_id,
                rater_id=enrollment.rater_id,
                value={"rating": rating},
            )
            Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.DONE)
    return _card(token, _pick_next(enrollment, study), bool(request.headers.get("HX-Request")))


def done(request: HttpRequest, token: str) -> HttpResponse:
    return HttpResponse("<p>Thank you.</p>")


urlpatterns = [
    path("bare/<str:token>/", entry),
    path("bare/<str:token>/consent/", consent),
    path("bare/<str:token>/instructions/", instructions),
    path("bare/<str:token>/item/", item),
    path("bare/<str:token>/done/", done),
]
