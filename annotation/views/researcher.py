"""The researcher's pages: studies, settings, item uploads, progress and invitations.

Every page is for logged-in researchers and shows only their own studies:
someone else's study is a 404, as if it did not exist.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from .. import mturk
from ..access import owned_study_or_404
from ..allocation.state import allocation_summary
from ..api.permissions import is_researcher
from ..audit import acting_as, audit_record
from ..expert_panel import invitations_with_progress
from ..forms import InvitationForm, ItemUploadForm
from ..importers import FileProblem, item_import_start
from ..json_limits import DataTooComplex, load_yaml
from ..models import AuditEntry, ItemImport, Study
from ..rater_steps import allowlist_csv, rater_steps_dump, rater_steps_save, study_questions
from ..selectors import researcher as selectors
from ..selectors.annotator import study_is_full
from ..services.enrollment import invitation_create
from ..services.studies import study_set_state
from ..study_files import YAML_DUMPER, study_file_json_chunks, study_file_yaml_chunks
from ..task_types import TIE, get_task_type

# Prolific replaces these placeholders with the participant's ids when it sends them to us.
PROLIFIC_QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
PROGRESS_ITEMS_SHOWN = 200
PROGRESS_RATERS_SHOWN = 200
ITEMS_PER_PAGE = 50
AUDIT_ENTRIES_SHOWN = 50


def researcher_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log in first; then only researchers (not expert annotators) may continue."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_researcher(request.user):
            raise PermissionDenied("These pages are for researchers.")
        return view(request, *args, **kwargs)

    return wrapped


def _study_for_user(request: HttpRequest, pk: int) -> Study:
    return owned_study_or_404(request, pk=pk)


def _entry_link(request: HttpRequest, study: Study) -> str:
    base = request.build_absolute_uri(reverse("annotator:entry", args=[study.entry_token]))
    # MTurk adds its own parameters (assignmentId, workerId, hitId, turkSubmitTo) to the ExternalURL.
    return base if study.recruitment == Study.Recruitment.MTURK else base + PROLIFIC_QUERY


@researcher_required
def study_list(request: HttpRequest) -> HttpResponse:
    return render(request, "researcher/study_list.html", {"studies": selectors.studies_owned(user=request.user)})


@researcher_required
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    from .builder import builder_context, study_preview_html, study_settings_save

    study = _study_for_user(request, pk)
    form, saved = study_settings_save(request, study)
    if saved:
        messages.success(request, "Settings saved.")
        return redirect("researcher:study_detail", pk=study.pk)
    if form.errors:
        study.refresh_from_db()
    context = {
        **builder_context(form, preview=study_preview_html(request, study)),
        "study": study,
        "entry_link": _entry_link(request, study),
        "external_question": (
            mturk.external_question_xml(_entry_link(request, study))
            if study.recruitment == Study.Recruitment.MTURK
            else ""
        ),
        "task_title": get_task_type(study.task_type).title,
        "invitations": invitations_with_progress(study=study),
        "invitation_form": InvitationForm(),
        "n_items": study.items.filter(is_attention_check=False).count(),
        "n_checks": study.items.filter(is_attention_check=True).count(),
        "audit_entries": study.audit_entries.select_related("actor")[:AUDIT_ENTRIES_SHOWN],
        "allocation": allocation_summary(study=study),
    }
    return render(request, "researcher/study_detail.html", context, status=400 if form.errors else 200)


@require_POST
@researcher_required
def study_state(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study_for_user(request, pk)
    state = request.POST.get("state", "")
    try:
        study_set_state(study=study, state=state, actor=request.user)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, f"The study is now {study.get_state_display().lower()}.")
    return redirect("researcher:study_detail", pk=study.pk)


@researcher_required
def study_items(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study_for_user(request, pk)
    form = ItemUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            # The importers do not pass the user on to items_create; the audit entry still names them.
            with transaction.atomic(), acting_as(request.user):
                item_import = item_import_start(
                    study=study,
                    upload=form.cleaned_data["file"],
                    user=request.user,
                    replace=form.cleaned_data["replace"],
                )
        except FileProblem as exc:
            for message in exc.messages:
                form.add_error("file", message)
        else:
            return redirect("researcher:import_status", pk=study.pk, import_pk=item_import.pk)
    page = Paginator(selectors.study_items(study=study), ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "study": study,
        "form": form,
        "page": page,
        "imports": selectors.study_imports(study=study)[:10],
    }
    return render(request, "researcher/study_items.html", context, status=400 if form.errors else 200)


# How a bare gold cell is written, by the value field it fills (docs/study-files.md, "Gold answers").
GOLD_WRITTEN_AS = {
    "rating": "a whole number on the scale, e.g. 2",
    "label": "one of the labels",
    "choice": "a candidate key",
    "votes": "candidate keys separated by commas, one per vote: a, a, b",
    "replacement": "the replacement word",
    "text": "the text",
}


@researcher_required
def item_format(request: HttpRequest, pk: int) -> HttpResponse:
    """The item-file format for this study: the columns, and what its task type needs in them."""
    study = _study_for_user(request, pk)
    task_type = get_task_type(study.task_type)
    low, high = task_type.candidates
    options = [option.value for option in task_type.options(task_type.config(study.config))]
    gold = GOLD_WRITTEN_AS.get(task_type.gold_field, "")
    if task_type.gold_field == "choice" and TIE in options:
        gold += f", or {TIE}"
    context = {
        "study": study,
        "task_type": task_type,
        "candidates_low": low,
        "candidates_high": high,
        "gold_written_as": gold,
        "labels": options if task_type.gold_field == "label" else [],
    }
    return render(request, "researcher/item_format.html", context)


@researcher_required
def import_status(request: HttpRequest, pk: int, import_pk: int) -> HttpResponse:
    study = _study_for_user(request, pk)
    item_import = get_object_or_404(ItemImport, study=study, pk=import_pk)
    context = {"study": study, "item_import": item_import}
    template = "researcher/import_status.html"
    if request.htmx:
        template += "#status"
    return render(request, template, context)


@dataclass(frozen=True)
class RowPage:
    """Where one page of a long table sits: its number, the rows it shows, and its neighbours."""

    number: int
    pages: int
    first: int  # 1-based row numbers shown
    last: int
    total: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


def _page_number(requested: str | None) -> int:
    """The page number asked for; anything that is not a sensible whole number is the first page."""
    try:
        number = int(requested or 1)
    except ValueError:
        return 1
    return min(max(number, 1), 10_000_000)  # past the last page is simply empty, never a database error


def _rows_shown(number: int, *, per_page: int, shown: int, total: int) -> RowPage:
    first = (number - 1) * per_page + 1 if shown else 0
    return RowPage(number, max(1, -(-total // per_page)), first, first + shown - 1 if shown else 0, total)


@researcher_required
def progress(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study_for_user(request, pk)
    # Totals come from the database; only one page of items and one of raters is read.
    item_page = _page_number(request.GET.get("page"))
    rater_page = _page_number(request.GET.get("raters_page"))
    study_progress = selectors.study_progress(
        study=study,
        item_limit=PROGRESS_ITEMS_SHOWN,
        item_offset=(item_page - 1) * PROGRESS_ITEMS_SHOWN,
        rater_limit=PROGRESS_RATERS_SHOWN,
        rater_offset=(rater_page - 1) * PROGRESS_RATERS_SHOWN,
    )
    context = {
        "study": study,
        "progress": study_progress,
        "item_rows": _rows_shown(
            item_page, per_page=PROGRESS_ITEMS_SHOWN, shown=len(study_progress.items), total=study_progress.items_total
        ),
        "rater_rows": _rows_shown(
            rater_page,
            per_page=PROGRESS_RATERS_SHOWN,
            shown=len(study_progress.raters),
            total=study_progress.raters_total,
        ),
    }
    template = "researcher/study_progress.html"
    if request.htmx:
        template += "#progress"
    return render(request, template, context)


@require_POST
@researcher_required
def invitation_new(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study_for_user(request, pk)
    form = InvitationForm(request.POST)
    if form.is_valid():
        with transaction.atomic():
            invitation = invitation_create(
                study=study, email=form.cleaned_data["email"], name=form.cleaned_data["name"]
            )
            audit_record(
                study=study,
                action=AuditEntry.Action.INVITATION_CREATED,
                actor=request.user,
                changes={"name": [None, invitation.name], "email": [None, invitation.email]},
            )
        link = request.build_absolute_uri(reverse("annotator:invite", args=[invitation.token]))
        messages.success(request, f"Invitation created: {link}")
        if study_is_full(study=study):
            # Said now, not discovered by the expert after making an account for nothing.
            messages.warning(
                request,
                f"This study has no place left for a new expert: every item already has the {study.quota_per_item} "
                "answers its quota asks for, so the expert would find nothing to rate. Raise the answers per item "
                "in the settings to make room for them.",
            )
    else:
        for errors in form.errors.values():
            for message in errors:
                messages.error(request, message)
    return redirect(reverse("researcher:study_detail", args=[study.pk]) + "#invitations")


STUDY_FILE_FORMATS = {
    "yaml": (study_file_yaml_chunks, "application/yaml; charset=utf-8"),
    "json": (study_file_json_chunks, "application/json; charset=utf-8"),
}


@researcher_required
def study_download(request: HttpRequest, pk: int) -> HttpResponse:
    """The study as a study file (YAML, or JSON with ?format=json), streamed: items are read a batch at a time."""
    study = _study_for_user(request, pk)
    fmt = request.GET.get("format", "yaml")
    if fmt not in STUDY_FILE_FORMATS:
        return HttpResponse(
            "The study file comes as format=yaml or format=json.", status=400, content_type="text/plain"
        )
    chunks, content_type = STUDY_FILE_FORMATS[fmt]
    response = StreamingHttpResponse(chunks(study), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{study.slug}.{fmt}"'
    return response


RATER_STEPS_EXAMPLE = """\
# qualification:          # a short test before the task; those below min_correct are screened out
#   name: Funniness check  # shared by your studies of this task type; passes are remembered
#   min_correct: 2
#   items:
#     - {text: "A pun that lands.", gold: 3}
#     - {text: "Not a joke.", gold: 0}
# practice:               # answers get the expected answer and your explanation back; never counted
#   - {text: "A practice joke.", gold: 2, explanation: "Mildly funny: the twist is expected."}
# questionnaire:
#   before: [demographics]
#   after:
#     - {key: enjoyed, kind: scale, text: "Did you enjoy the jokes?", min: 1, max: 5}
"""


@researcher_required
def rater_steps_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The study's qualification, practice and questionnaires, written as the study file's sections."""
    study = _study_for_user(request, pk)
    errors: dict[str, list[str]] = {}
    current = rater_steps_dump(study)
    text = yaml.dump(current, Dumper=YAML_DUMPER, allow_unicode=True, sort_keys=False) if current else ""
    if request.method == "POST":
        text = request.POST.get("steps", "")
        if request.POST.get("add") == "demographics":
            data = dict(current)
            questionnaire = dict(data.get("questionnaire") or {})
            if "demographics" not in (questionnaire.get("before") or []):
                questionnaire["before"] = ["demographics", *(questionnaire.get("before") or [])]
            data["questionnaire"] = questionnaire
        else:
            try:
                data = load_yaml(text, where="steps") if text.strip() else {}
            except (yaml.YAMLError, DataTooComplex) as exc:
                data, errors = None, {"steps": [f"Not readable as YAML: {exc}"]}
        if data is not None:
            try:
                rater_steps_save(study=study, data=data or {}, actor=request.user)
            except ValidationError as exc:
                errors = exc.message_dict if hasattr(exc, "error_dict") else {"steps": exc.messages}
            else:
                messages.success(request, "Qualification, practice and questionnaires saved.")
                return redirect("researcher:rater_steps", pk=study.pk)
    qualification = study.qualification
    context = {
        "study": study,
        "text": text,
        "example": RATER_STEPS_EXAMPLE,
        "errors": sorted(errors.items()),
        "qualification": qualification,
        "passed": qualification.results.filter(passed=True).count() if qualification else 0,
        "taken": qualification.results.count() if qualification else 0,
        "questions_before": study_questions(study, "before"),
        "questions_after": study_questions(study, "after"),
    }
    return render(request, "researcher/rater_steps.html", context, status=400 if errors else 200)


@researcher_required
def qualification_allowlist(request: HttpRequest, pk: int) -> HttpResponse:
    """The participant ids who passed the study's qualification, for Prolific's allowlist (a CSV)."""
    study = _study_for_user(request, pk)
    if study.qualification is None:
        return HttpResponse("This study has no qualification.", status=404, content_type="text/plain")
    response = HttpResponse(allowlist_csv(study.qualification), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-qualified-allowlist.csv"'
    return response
