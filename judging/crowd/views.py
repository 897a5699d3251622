# SPDX-License-Identifier: GPL-3.0-or-later
"""The study's crowd page: participants with their outcome and Prolific status, Prolific's actions, withdrawal."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.access import owned_study_or_404
from annotation.models import Study
from annotation.privacy import retention_days
from annotation.views.researcher import researcher_required

from . import prolific, services
from .withdrawal import participant_find, participant_withdraw

ACTIONS = ("approve", "reject", "free", "bonus")


def _problems(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{field}: {m}" if field != "__all__" else m for field, ms in exc.message_dict.items() for m in ms]
    return list(exc.messages)


@researcher_required
def crowd_page(request: HttpRequest, pk: int, *, problems: list[str] | None = None, status: int = 200) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    has_token = prolific.token_stored(owner=request.user)
    submissions, api_problem = None, ""
    if has_token and study.prolific_study_id:
        try:
            with prolific.ProlificClient.for_owner(request.user) as client:
                submissions = list(client.submissions(study.prolific_study_id))
        except prolific.ProlificError as exc:
            api_problem = str(exc)
    context: dict[str, Any] = {
        "study": study,
        "has_token": has_token,
        "people": services.participants(study=study, submissions=submissions),
        "submissions_read": submissions is not None,
        "api_problem": api_problem,
        "problems": problems or [],
        "reject_min": prolific.REJECT_MESSAGE_MIN,
        "is_prolific": study.recruitment == Study.Recruitment.PROLIFIC,
        "retention_days": retention_days(),
    }
    return render(request, "crowd/crowd_page.html", context, status=status)


@require_POST
@researcher_required
def token_save(request: HttpRequest, pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    if request.POST.get("remove"):
        prolific.token_remove(owner=request.user)
        messages.success(request, "The Prolific token was removed.")
        return redirect("crowd:page", pk=study.pk)
    try:
        prolific.token_store(owner=request.user, token=request.POST.get("token", ""))
    except prolific.ProlificError as exc:
        return crowd_page(request, pk, problems=[f"token: {exc}"], status=400)
    messages.success(request, "A Prolific token is stored. It will not be shown again.")
    return redirect("crowd:page", pk=study.pk)


@require_POST
@researcher_required
def link(request: HttpRequest, pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    try:
        services.prolific_link(
            study=study, prolific_study_id=request.POST.get("prolific_study_id", ""), actor=request.user
        )
    except ValidationError as exc:
        return crowd_page(request, pk, problems=_problems(exc), status=400)
    messages.success(request, "Linked." if study.prolific_study_id else "The Prolific study was unlinked.")
    return redirect("crowd:page", pk=study.pk)


@require_POST
@researcher_required
def act(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    if action not in ACTIONS:
        return crowd_page(request, pk, problems=[f"action: no action {action!r}"], status=404)
    try:
        with prolific.ProlificClient.for_owner(request.user) as client:
            if action == "approve":
                n = services.approve_completed(study=study, client=client, actor=request.user)
                done = f"Approved {n} submission{'s' if n != 1 else ''} of participants who completed the study."
            elif action == "reject":
                n, left = services.reject_failed_checks(
                    study=study, client=client, actor=request.user, message=request.POST.get("message", "")
                )
                done = f"Rejected {n} submission{'s' if n != 1 else ''} that failed the attention checks."
                if left:
                    done += f" {left} more remain: press the button again."
            elif action == "free":
                n, freed = services.free_places_of_leavers(study=study, client=client, actor=request.user)
                done = f"{n} participant{'s' if n != 1 else ''} returned, timed out or were rejected; {freed} place{'s' if freed != 1 else ''} given back."
            else:
                n, total = services.bonuses_pay(
                    study=study, client=client, actor=request.user, text=request.POST.get("bonuses", "")
                )
                done = f"Bonuses of {total} in all paid to {n} participant{'s' if n != 1 else ''}."
    except ValidationError as exc:
        return crowd_page(request, pk, problems=_problems(exc), status=400)
    except prolific.ProlificError as exc:
        # Prolific failing or unreachable is a bad gateway; a step the researcher must take first is theirs.
        failed_upstream = not isinstance(exc, prolific.ProlificNotSetUp) and (exc.status is None or exc.status >= 500)
        return crowd_page(request, pk, problems=[str(exc)], status=502 if failed_upstream else 400)
    messages.success(request, done)
    return redirect("crowd:page", pk=study.pk)


@require_POST
@researcher_required
def withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    try:
        rater = participant_find(study=study, who=request.POST.get("participant", ""))
        gone = participant_withdraw(study=study, rater=rater, actor=request.user)
    except ValidationError as exc:
        return crowd_page(request, pk, problems=_problems(exc), status=400)
    messages.success(
        request,
        f"{gone.pseudonym} withdrew: {gone.answers} answer{'s' if gone.answers != 1 else ''} deleted, "
        f"{gone.exports} stored export{'s' if gone.exports != 1 else ''} deleted; reports will be computed afresh.",
    )
    return redirect("crowd:page", pk=study.pk)
