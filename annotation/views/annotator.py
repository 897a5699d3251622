"""The annotator's side: entry links, consent, instructions, items, completion.

A rater's enrollment id is kept in the session, one per study, so the same
browser can take part in several studies. Every step checks where the
enrollment stands and sends the rater to the right step, so none can be
skipped by typing a URL. Pages show only what a blind judgment needs: never
candidate keys, provenance, item metadata, gold answers or other answers.
"""

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from .. import mturk
from ..access import owned_by
from ..languages import in_language, items_language, platform_text
from ..models import Assignment, Enrollment, Invitation, Rater, Study
from ..outcomes import DECLINED, end_page, session_outcome
from ..protocols import template_of
from ..ratelimit import entry_rate_limited
from ..rater_steps import (
    admission_check,
    gold_label,
    next_step,
    questionnaire_answers_save,
    step_answer,
    step_entries,
    step_item_shown,
    step_position,
    study_questions,
    wants_questions_after,
)
from ..selectors.annotator import (
    annotator_progress,
    enrollment_by_token,
    has_done_enough,
    leaderboard_prompts,
    shown_item,
    study_is_full,
    vote_leaderboard,
)
from ..services.assignment import mark_shown, next_assignment
from ..services.enrollment import (
    enroll_crowdworker,
    enroll_preview,
    enrollment_complete,
    enrollment_consent,
    enrollment_decline,
    enrollment_instructed,
    preview_owner_matches,
)
from ..services.judgments import answer_and_next
from ..services.leases import heartbeat_seconds, lease_renew
from ..task_types import Shortcut, TaskType, get_task_type
from ..task_types.free_text import edit_segments

SESSION_KEY = "funnybone_enrollments"
ENTRY_PARAMS = ("STUDY_ID", "SESSION_ID")
LEADERBOARD_PROMPTS_SHOWN = 50
# How often the "more items may free up" page asks again (htmx polling).
WAITING_RETRY_SECONDS = 15


# -- helpers: the rater in this session ------------------------------------------


def _message(request: HttpRequest, title: str, message: str, *, status: int = 200, **extra: Any) -> HttpResponse:
    return render(request, "annotation/message.html", {"title": title, "message": message, **extra}, status=status)


def _remember(request: HttpRequest, enrollment: Enrollment) -> None:
    enrollments = dict(request.session.get(SESSION_KEY, {}))
    # A new session key on entry: an id planted in the browser beforehand grants nothing. (Reading the
    # session forgets a key with no session behind it; a session without a key gets a new one when saved.)
    if request.session.session_key is not None:
        request.session.cycle_key()
    enrollments[str(enrollment.study_id)] = enrollment.pk
    request.session[SESSION_KEY] = enrollments


def _enrollment_in_session(request: HttpRequest, entry_token: str) -> Enrollment | None:
    """The enrollment this session holds in the study, read with its study and rater in one query."""
    enrollments = request.session.get(SESSION_KEY, {})
    if not enrollments:
        return None
    enrollment = enrollment_by_token(enrollment_ids=list(enrollments.values()), entry_token=entry_token)
    if enrollment is None or enrollments.get(str(enrollment.study_id)) != enrollment.pk:
        return None
    # An expert's enrollment follows their account: logging out ends access from this browser.
    if enrollment.rater.kind == Rater.Kind.EXPERT and enrollment.rater.user_id != request.user.pk:
        return None
    # So does a researcher's preview.
    if enrollment.rater.is_preview and not (
        request.user.is_authenticated and preview_owner_matches(rater=enrollment.rater, user=request.user)
    ):
        return None
    return enrollment


# Where ``_study_config`` leaves the enrollment it read, for the view it runs before.
READ_ENROLLMENT = "_funnybone_read_enrollment"
# And the study it read when there was no enrollment (someone arriving by the entry link).
READ_STUDY = "_funnybone_read_study"


def _study_and_enrollment(request: HttpRequest, entry_token: str) -> tuple[Study, Enrollment] | HttpResponse:
    # Every annotator request comes here: the study is read with the enrollment when there is one,
    # once per request (the language decorator has usually read it already).
    token, enrollment = getattr(request, READ_ENROLLMENT, (None, None))
    if token != entry_token:
        enrollment = _enrollment_in_session(request, entry_token)
    if enrollment is not None:
        return enrollment.study, enrollment
    get_object_or_404(Study.objects.exclude(state=Study.State.DRAFT), entry_token=entry_token)
    return _message(
        request,
        _("Please use your study link"),
        _(
            "We could not find your session. Please open the study again from the link you were given, "
            "for example on the recruitment site."
        ),
        status=403,
    )


def _step(enrollment: Enrollment) -> str:
    """The one step this enrollment may be on now (the steps around the items: ``rater_steps``)."""
    if enrollment.screened_out_at or enrollment.ended_early or not enrollment.study.is_open:
        return "done"
    if enrollment.completed_at:
        return "questions" if wants_questions_after(enrollment) else "done"
    if enrollment.consented_at is None:
        return "consent"
    if enrollment.instructed_at is None:
        return "instructions"
    return next_step(enrollment)


def _to_step(request: HttpRequest, study: Study, step: str) -> HttpResponse:
    url = reverse(f"annotator:{step}", args=[study.entry_token])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _language(study: Study) -> str:
    return items_language(study.config)


def _study_config(request: HttpRequest, entry_token: str, **_kwargs: Any) -> dict[str, Any] | None:
    """The config (and so the language) of the study an annotator URL names; None when there is none.

    A participant with a session has their enrollment read here, with its study, and kept on the
    request for ``_study_and_enrollment``: the language costs no query of its own on the answer path.
    """
    enrollment = _enrollment_in_session(request, entry_token)
    setattr(request, READ_ENROLLMENT, (entry_token, enrollment))
    if enrollment is not None:
        return enrollment.study.config
    study = Study.objects.filter(entry_token=entry_token).first()
    setattr(request, READ_STUDY, (entry_token, study))
    return study.config if study is not None else None


def _study_named(request: HttpRequest, entry_token: str) -> Study:
    """The study of an annotator URL (404 if none), as ``_study_config`` read it when it ran before."""
    token, study = getattr(request, READ_STUDY, (None, None))
    if token == entry_token and study is not None:
        return study
    return get_object_or_404(Study, entry_token=entry_token)


def _invited_study_config(request: HttpRequest, token: str, **_kwargs: Any) -> dict[str, Any] | None:
    return Invitation.objects.filter(token=token).values_list("study__config", flat=True).first()


def _unavailable(request: HttpRequest, study: Study) -> HttpResponse:
    if study.state == Study.State.DRAFT:
        return _message(request, _("Not open yet"), _("This study has not started yet. Please try again later."))
    return _message(
        request,
        _("This study is closed"),
        _("This study is no longer accepting answers. Thank you for your interest."),
        leaderboard_url=_leaderboard_url(study),
    )


def _leaderboard_url(study: Study) -> str:
    if get_task_type(study.task_type).public_leaderboard and study.state == Study.State.CLOSED:
        return reverse("annotator:leaderboard", args=[study.entry_token])
    return ""


# -- what each task type's form needs ------------------------------------------------


@dataclass(frozen=True)
class Button:
    """One answer button: what it posts, what it says, and the keys that press it."""

    value: str
    label: str
    key: str
    alt_key: str = ""


def _buttons(task_type: TaskType, config: dict[str, Any]) -> list[Button]:
    return [Button(o.value, platform_text(o.label), o.shortcut, o.alt_shortcut) for o in task_type.options(config)]


def shortcuts(task_type: TaskType, config: dict[str, Any]) -> list[Shortcut]:
    """The keyboard shortcuts listed on the instructions page (each task type says its own)."""
    return task_type.shortcuts(config)


def _item_context(
    enrollment: Enrollment,
    assignment: Assignment,
    *,
    error: str = "",
    notice: str = "",
    posted: Any = None,
) -> dict[str, Any]:
    study = enrollment.study
    context = item_form_context(study, shown_item(assignment=assignment), posted=posted or {})
    context.update(
        {
            "assignment_id": assignment.pk,
            "progress": annotator_progress(enrollment=enrollment),
            "error": error,
            "notice": notice,
            "item_url": reverse("annotator:item", args=[study.entry_token]),
            "lease_url": reverse("annotator:lease", args=[study.entry_token]),
            "heartbeat_seconds": heartbeat_seconds(),
            "preview": enrollment.rater.is_preview,
            "expert": enrollment.rater.kind == Rater.Kind.EXPERT,
        }
    )
    return context


def item_form_context(study: Study, item: Any, *, posted: Any) -> dict[str, Any]:
    """What the item card shows of one item, whoever looks: a rater, or the study builder's preview
    (an unsaved study and a sample item; annotation/views/builder.py)."""
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    context: dict[str, Any] = {
        "study": study,
        "item": item,
        "task": task_type.name,
        "task_template": task_type.template,
        "question": platform_text(config.get("question") or task_type.question),
        "buttons": _buttons(task_type, config),
        "config": config,
        "language": _language(study),
    }
    context.update(task_type.form_context(item=item, config=config, posted=posted))
    context.update(_item_parts(study, item))
    return context


def _item_parts(study: Study, item: Any) -> dict[str, Any]:
    """The protocol's names for the item's texts, and the words an edit changed (edited headlines)."""
    template = template_of(study)
    if template is None:
        return {}
    parts: dict[str, Any] = {"part_labels": {part: platform_text(label) for part, label in template.item_parts.items()}}
    if template.marks_edit:
        parts["prompt_segments"], parts["text_segments"] = edit_segments(item.prompt, item.text)
    return parts


# -- entry ---------------------------------------------------------------------


@in_language(_study_config)
@entry_rate_limited
@require_GET
def crowd_entry(request: HttpRequest, entry_token: str) -> HttpResponse:
    study = _study_named(request, entry_token)
    if not study.is_open:
        return _unavailable(request, study)
    if study.recruitment == Study.Recruitment.MTURK:
        return _mturk_entry(request, study)
    participant_id = request.GET.get("PROLIFIC_PID", "")
    params = {name: request.GET[name][:200] for name in ENTRY_PARAMS if name in request.GET}
    try:
        enrollment = enroll_crowdworker(study=study, participant_id=participant_id, params=params)
    except ValidationError as exc:
        return _entry_refused(request, study, problem=" ".join(exc.messages), code=exc.code or "")
    _remember(request, enrollment)
    if not admission_check(enrollment):
        return redirect("annotator:done", study.entry_token)
    # Consent sends a returning worker on to wherever they had got to.
    return redirect("annotator:consent", study.entry_token)


def _mturk_entry(request: HttpRequest, study: Study) -> HttpResponse:
    """MTurk's frame: a preview before the HIT is accepted (no place, no enrollment), else the worker enrols."""
    try:
        entry = mturk.read_entry(request.GET)
    except ValueError as exc:
        problem = _("The link from Mechanical Turk is missing a valid %(name)s.") % {"name": exc.args[0]}
        return _entry_refused(request, study, problem=problem, code="shape")
    if entry.preview:
        example = study.items.filter(is_attention_check=False).order_by("position", "id").first()
        context = {"study": study, "language": _language(study), "example": example}
        return render(request, "annotation/mturk_preview.html", context)
    try:
        enrollment = enroll_crowdworker(study=study, participant_id=entry.worker_id, params=entry.params)
    except ValidationError as exc:
        return _entry_refused(request, study, problem=" ".join(exc.messages), code=exc.code or "")
    _remember(request, enrollment)
    return redirect("annotator:consent", study.entry_token)


def _entry_refused(request: HttpRequest, study: Study, *, problem: str, code: str) -> HttpResponse:
    """What the link is for, instead of a rater named after a placeholder; its owner may try it as a participant."""
    owner = owned_by(Study.objects.filter(pk=study.pk), user=request.user).exists()
    context = {
        "study": study,
        "problem": problem,
        "placeholder": code == "placeholder",
        "pid_placeholder": "{{%PROLIFIC_PID%}}",
        "prolific": study.recruitment == Study.Recruitment.PROLIFIC,
        "preview_url": reverse("annotator:preview", args=[study.entry_token]) if owner else "",
        "language": _language(study),
    }
    return render(request, "annotation/entry_refused.html", context, status=400)


@in_language(_study_config)
@require_POST
@login_required
def preview(request: HttpRequest, entry_token: str) -> HttpResponse:
    """The owner walks through their study as a participant; the answers are kept apart and never counted."""
    study = get_object_or_404(owned_by(Study, user=request.user), entry_token=entry_token)
    try:
        enrollment = enroll_preview(study=study, user=request.user)
    except ValidationError as exc:
        return _message(request, _("Preview not available"), " ".join(exc.messages), status=409)
    _remember(request, enrollment)
    return redirect("annotator:consent", study.entry_token)


# -- the steps -------------------------------------------------------------------


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest, entry_token: str) -> HttpResponse:
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (step := _step(enrollment)) != "consent":
        return _to_step(request, study, step)
    if not enrollment.rater.is_preview and study_is_full(study=study):
        # Say so before asking for consent and instructions the worker would read for nothing.
        enrollment_complete(enrollment=enrollment)
        return _to_step(request, study, "done")
    status = 200
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision == "agree":
            enrollment_consent(enrollment=enrollment)
            return redirect("annotator:instructions", study.entry_token)
        if decision == "decline":
            enrollment_decline(enrollment=enrollment)
            return redirect("annotator:declined", study.entry_token)
        status = 400
    context = {"study": study, "language": _language(study), "preview": enrollment.rater.is_preview}
    return render(request, "annotation/consent.html", context, status=status)


@in_language(_study_config)
@never_cache
@require_GET
def declined(request: HttpRequest, entry_token: str) -> HttpResponse:
    study = get_object_or_404(Study.objects.exclude(state=Study.State.DRAFT), entry_token=entry_token)
    enrollment = _enrollment_in_session(request, entry_token)
    # The declined code only for someone who did decline in this browser, not for anyone typing the URL.
    declined_here = enrollment is not None and enrollment.declined_at is not None
    page = end_page(
        outcome=DECLINED, study=study, rater=enrollment.rater if enrollment else None, with_code=declined_here
    )
    context = {"study": study, "page": page, "language": _language(study)}
    return render(request, "annotation/declined.html", context)


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def instructions(request: HttpRequest, entry_token: str) -> HttpResponse:
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (step := _step(enrollment)) != "instructions":
        return _to_step(request, study, step)
    if request.method == "POST":
        enrollment_instructed(enrollment=enrollment)
        return _to_step(request, study, _step(enrollment))
    task_type = get_task_type(study.task_type)
    context = {
        "study": study,
        "language": _language(study),
        "shortcuts": shortcuts(task_type, task_type.config(study.config)),
        "preview": enrollment.rater.is_preview,
    }
    return render(request, "annotation/instructions.html", context)


def _step_context(enrollment: Enrollment, step: str, index: int, *, posted: Any = None) -> dict[str, Any]:
    """A test or practice item's page: the task type's own form, around an item that is not the study's."""
    study = enrollment.study
    entries, task_type, raw_config = step_entries(enrollment, step)
    config = task_type.config(raw_config)
    shown = step_item_shown(entries[index])
    context: dict[str, Any] = {
        "study": study,
        "step": step,
        "index": index,
        "number": index + 1,
        "total": len(entries),
        "item": shown,
        "task": task_type.name,
        "task_template": task_type.template,
        "question": platform_text(config.get("question") or task_type.question),
        "buttons": _buttons(task_type, config),
        "config": config,
        "language": _language(study),
        "step_url": reverse(f"annotator:{step}", args=[study.entry_token]),
        "preview": enrollment.rater.is_preview,
    }
    context.update(task_type.form_context(item=shown, config=config, posted=posted or {}))
    return context


def _step_item_view(request: HttpRequest, entry_token: str, step: str) -> HttpResponse:
    """A qualification test or practice round, one item a page; practice answers get the expected answer back."""
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (at := _step(enrollment)) != step:
        return _to_step(request, study, at)
    index = step_position(enrollment, step)
    if request.method == "POST":
        try:
            posted_index = int(request.POST.get("index", ""))
        except ValueError:
            posted_index = -1
        try:
            answer = step_answer(enrollment=enrollment, step=step, index=posted_index, data=request.POST)
        except ValidationError as exc:
            context = _step_context(enrollment, step, index, posted=request.POST)
            context["error"] = " ".join(exc.messages)
            return render(request, "annotation/step_item.html", context, status=422)
        if step == "practice":
            entries, task_type, _config = step_entries(enrollment, step)
            entry = entries[answer.index]
            context = _step_context(enrollment, step, answer.index)
            context["feedback"] = {
                "correct": answer.correct,
                "expected": gold_label(task_type=task_type, entry=entry),
                "explanation": entry.get("explanation", ""),
            }
            return render(request, "annotation/step_item.html", context)
        return redirect(f"annotator:{step}", study.entry_token)
    return render(request, "annotation/step_item.html", _step_context(enrollment, step, index))


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def qualification(request: HttpRequest, entry_token: str) -> HttpResponse:
    return _step_item_view(request, entry_token, "qualification")


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def practice(request: HttpRequest, entry_token: str) -> HttpResponse:
    return _step_item_view(request, entry_token, "practice")


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def questions(request: HttpRequest, entry_token: str) -> HttpResponse:
    """The study's questions before the items, or (once through them) after."""
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (at := _step(enrollment)) != "questions":
        return _to_step(request, study, at)
    phase = "after" if enrollment.completed_at else "before"
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        try:
            questionnaire_answers_save(enrollment=enrollment, phase=phase, data=request.POST)
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            return redirect("annotator:done" if phase == "after" else "annotator:item", study.entry_token)
    context = {
        "study": study,
        "phase": phase,
        "questions": [(q, errors.get(q.key, []), request.POST.get(q.key, "")) for q in study_questions(study, phase)],
        "has_errors": bool(errors),
        "language": _language(study),
        "preview": enrollment.rater.is_preview,
    }
    return render(request, "annotation/questions.html", context, status=400 if errors else 200)


def _posted_assignment_id(request: HttpRequest) -> int:
    try:
        return int(request.POST.get("assignment", ""))
    except ValueError:
        raise Http404("No such assignment.") from None


@in_language(_study_config)
@never_cache
@require_http_methods(["GET", "POST"])
def item(request: HttpRequest, entry_token: str) -> HttpResponse:
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (step := _step(enrollment)) != "item":
        return _to_step(request, study, step)

    error, posted, failed_pk, nxt = "", None, None, None
    if request.method == "POST":
        assignment_id = _posted_assignment_id(request)
        try:
            # The answer and the next item in one transaction: one commit per answer. A second
            # submit of the same assignment returns the stored judgment: nothing to do.
            nxt = answer_and_next(
                enrollment=enrollment, assignment_id=assignment_id, data=request.POST, lease_next=bool(request.htmx)
            )
        except Assignment.DoesNotExist:
            raise Http404("No such assignment.") from None
        except ValidationError as exc:
            error, posted, failed_pk = " ".join(exc.messages), request.POST, assignment_id
        else:
            if not request.htmx:
                return redirect("annotator:item", study.entry_token)

    if nxt is None or nxt.reason == "busy":
        # Asked afresh, outside the answer's transaction: free to wait for an item another request holds.
        nxt = next_assignment(enrollment=enrollment, shown=True)
    if nxt.assignment is None:
        if nxt.finished:
            enrollment_complete(enrollment=enrollment)
        if nxt.reason == "waiting":
            return _waiting(request, enrollment, notice=error)
        if error:
            # The late answer's item went to someone else and nothing is left: say so on the next page.
            messages.info(request, error)
        return _to_step(request, study, "done")
    notice = ""
    if error and nxt.assignment.pk != failed_pk:
        # The answered item is gone (its lease lapsed and someone else took it): say so on the next one.
        error, notice, posted = "", error, None
    mark_shown(assignment=nxt.assignment)
    context = _item_context(enrollment, nxt.assignment, error=error, notice=notice, posted=posted)
    template = "annotation/item.html#item-card" if request.htmx else "annotation/item.html"
    return render(request, template, context, status=422 if error else 200)


# htmx stops polling on this status: the page is told once and asks no more.
STOP_POLLING = 286


@never_cache
@require_POST
def lease(request: HttpRequest, entry_token: str) -> HttpResponse:
    """The open item page's heartbeat: keep the rater's own current item, or tell the page it is gone."""
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    try:
        renewal = lease_renew(enrollment=enrollment, assignment_id=int(request.POST.get("assignment", "")))
    except (ValueError, Assignment.DoesNotExist):
        raise Http404("No such assignment.") from None
    if renewal.renewed:
        return HttpResponse(status=204)
    context = {"study": study, "reason": renewal.reason, "item_url": reverse("annotator:item", args=[entry_token])}
    return render(request, "annotation/item.html#lease-ended", context, status=STOP_POLLING)


def _waiting(request: HttpRequest, enrollment: Enrollment, *, notice: str = "") -> HttpResponse:
    """Every item left is leased to someone else: not finished, the page asks again by itself."""
    study = enrollment.study
    context = {
        "study": study,
        "waiting": True,
        "question": _("More items may free up"),
        "notice": notice,
        "progress": annotator_progress(enrollment=enrollment),
        "retry_seconds": WAITING_RETRY_SECONDS,
        "item_url": reverse("annotator:item", args=[study.entry_token]),
        "language": _language(study),
        "preview": enrollment.rater.is_preview,
    }
    template = "annotation/item.html#waiting-card" if request.htmx else "annotation/item.html"
    return render(request, template, context)


@in_language(_study_config)
@never_cache
@require_GET
def done(request: HttpRequest, entry_token: str) -> HttpResponse:
    found = _study_and_enrollment(request, entry_token)
    if isinstance(found, HttpResponse):
        return found
    study, enrollment = found
    if (step := _step(enrollment)) != "done":
        return _to_step(request, study, step)
    outcome = session_outcome(enrollment=enrollment, done_enough=lambda: has_done_enough(enrollment=enrollment))
    context = {
        "study": study,
        "page": end_page(outcome=outcome, study=study, rater=enrollment.rater),
        "leaderboard_url": _leaderboard_url(study),
        "language": _language(study),
        "preview": enrollment.rater.is_preview,
        "mturk_submit": mturk.submit_form(enrollment),
    }
    return render(request, "annotation/done.html", context)


@in_language(_study_config)
@require_GET
def leaderboard(request: HttpRequest, entry_token: str) -> HttpResponse:
    study = get_object_or_404(Study.objects.exclude(state=Study.State.DRAFT), entry_token=entry_token)
    if not get_task_type(study.task_type).public_leaderboard:
        raise Http404("This study has no leaderboard.")
    # Totals stay hidden while voting is open so they cannot sway anyone's votes.
    context: dict = {"study": study, "boards": None, "language": _language(study)}
    if not study.is_open:
        # A page of prompts at a time: a study may have thousands.
        total = leaderboard_prompts(study=study)
        pages = max(1, -(-total // LEADERBOARD_PROMPTS_SHOWN))
        try:
            number = min(max(int(request.GET.get("page") or 1), 1), pages)
        except ValueError:
            number = 1
        offset = (number - 1) * LEADERBOARD_PROMPTS_SHOWN
        context.update(
            boards=vote_leaderboard(study=study, offset=offset, limit=LEADERBOARD_PROMPTS_SHOWN),
            page=number,
            pages=pages,
            previous_page=number - 1 if number > 1 else None,
            next_page=number + 1 if number < pages else None,
        )
    return render(request, "annotation/leaderboard.html", context)
