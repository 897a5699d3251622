"""The study builder's pages: where to start, the sections of a new or existing study, and the live check.

The sections and their rules are ``annotation/builder.py``; the preview draws the
annotator's own item card (``templates/annotation/item.html#item-card``) with the
context ``annotator.item_form_context`` builds, for an unsaved copy of the study and
a sample item: no assignment, judgment or enrollment is made.
"""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.views.decorators.http import require_POST

from ..access import owned_study_or_404
from ..audit import acting_as
from ..builder import FIELDS_SHOWN, StudyBuilder, starter, starters
from ..languages import annotator_language
from ..models import Study
from ..protocols import TEMPLATES
from ..selectors.annotator import AnnotatorProgress, ShownCandidate, ShownItem
from ..services.studies import study_create, study_update
from ..study_files import StudyFileError, load_study_upload
from .annotator import item_form_context
from .researcher import researcher_required

STUDY_FILE_MAX_BYTES = 5 * 1024 * 1024


class StudyFileUploadForm(forms.Form):
    study_file = forms.FileField(label="Study file", help_text="YAML or JSON, as docs/study-files.md describes.")
    items_file = forms.FileField(
        label="Items file", required=False, help_text="Only when the study file names an items_file."
    )


def _add_errors(builder: StudyBuilder, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for name, errors in exc.error_dict.items():
            builder.add_error(name, errors)
    else:
        builder.add_error(None, exc)


def _new_study(request: HttpRequest) -> tuple[Study, dict[str, Any], str]:
    """An unsaved study with a starting point's settings (``?start=``), its config, and its task type."""
    study = Study(owner=request.user)
    found = starter(request.GET.get("start", ""))
    if found is None:
        return study, {}, request.GET.get("task_type", "")
    for name, value in found.settings.items():
        setattr(study, name, value)
    return study, dict(found.config), found.task_type


LIVE_TRIGGER = "input changed delay:500ms, change"


def builder_context(builder: StudyBuilder, **extra: Any) -> dict[str, Any]:
    """The builder's template context; every field asks the live check as it is edited or left."""
    study = builder.study
    check_url = (
        reverse("researcher:builder_check", args=[study.pk]) if study.pk else reverse("researcher:builder_check_new")
    )
    for _section, form in builder.forms:
        for name, field in form.fields.items():
            if name == "task_type":
                # Another task type has other settings: draw the task section afresh for it.
                field.widget.attrs.update(
                    {
                        "hx-get": reverse("researcher:study_new"),
                        "hx-trigger": "change",
                        "hx-target": "#section-task",
                        "hx-select": "#section-task",
                        "hx-swap": "outerHTML",
                    }
                )
            else:
                field.widget.attrs.update({"hx-post": check_url, "hx-trigger": LIVE_TRIGGER})
    return {
        "check_url": check_url,
        "form": builder,
        "builder": builder,
        "fields_shown": FIELDS_SHOWN,
        "languages": settings.LANGUAGES,
        **extra,
    }


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    """GET without a starting point: the choices. GET with one: the builder. POST: create the study."""
    if request.method != "POST":
        if not (request.GET.get("start") or request.GET.get("task_type")):
            return render(
                request,
                "researcher/study_start.html",
                {
                    "starters": starters(),
                    "templates": sorted(TEMPLATES.values(), key=lambda t: (t.protocol, t.key)),
                    "upload_form": StudyFileUploadForm(),
                },
            )
        study, config, task_type = _new_study(request)
        builder = StudyBuilder(study, None, start_config=config, task_type_name=task_type)
        return render(request, "researcher/study_new.html", builder_context(builder))
    builder = StudyBuilder(Study(owner=request.user), request.POST)
    if builder.is_valid():
        changes = builder.changes()
        try:
            with transaction.atomic():
                study = study_create(
                    owner=request.user,
                    actor=request.user,
                    name=changes.pop("name"),
                    task_type=changes.pop("task_type"),
                    config=changes.pop("config"),
                    **changes,
                )
                builder.save_sections(study=study, actor=request.user)
        except ValidationError as exc:
            _add_errors(builder, exc)
        else:
            messages.success(request, f"Created “{study.name}”. Next, upload its items.")
            return redirect("researcher:study_items", pk=study.pk)
    return render(request, "researcher/study_new.html", builder_context(builder), status=400)


def study_settings_save(request: HttpRequest, study: Study) -> tuple[StudyBuilder, bool]:
    """The study page's settings: the builder's sections on the study, saved when posted and valid."""
    builder = StudyBuilder(study, request.POST if request.method == "POST" else None)
    if request.method != "POST" or not builder.is_valid():
        return builder, False
    changes = builder.changes()
    if changes["config"] == study.config:
        # Unchanged: the service refuses any config change once judgments exist.
        changes.pop("config")
    try:
        with transaction.atomic():
            study_update(study=study, actor=request.user, **changes)
            builder.save_sections(study=study, actor=request.user)
    except ValidationError as exc:
        _add_errors(builder, exc)
        return builder, False
    return builder, True


@require_POST
@researcher_required
def study_upload(request: HttpRequest) -> HttpResponse:
    """Create a study (and its items) from a study file; every problem is listed and nothing is written."""
    form = StudyFileUploadForm(request.POST, request.FILES)
    problems: list[str] = []
    if form.is_valid():
        upload = form.cleaned_data["study_file"]
        if upload.size > STUDY_FILE_MAX_BYTES:
            problems.append(f"{upload.name}: the study file is over {STUDY_FILE_MAX_BYTES // (1024 * 1024)} MB.")
        else:
            try:
                with acting_as(request.user):
                    study = load_study_upload(
                        upload, items_upload=form.cleaned_data.get("items_file"), owner=request.user
                    )
            except StudyFileError as exc:
                problems = list(exc.messages)
            except ValidationError as exc:
                problems = list(exc.messages)
            else:
                messages.success(request, f"Created “{study.name}” from {upload.name}.")
                return redirect("researcher:study_detail", pk=study.pk)
    context = {
        "starters": starters(),
        "templates": sorted(TEMPLATES.values(), key=lambda t: (t.protocol, t.key)),
        "upload_form": form,
        "upload_problems": problems,
    }
    return render(request, "researcher/study_start.html", context, status=400)


# -- the live check: field errors and the preview ------------------------------------------------------


def _sample_item(study: Study) -> ShownItem:
    from ..task_types import get_task_type

    prompt, text, candidates = get_task_type(study.task_type).sample_item()
    return ShownItem(
        prompt=prompt,
        text=text,
        candidates=[ShownCandidate(position=i, text=t, context="") for i, t in enumerate(candidates)],
    )


def preview_html(request: HttpRequest, study: Study, *, language: str = "") -> str:
    """The rater's item card for ``study`` (unsaved settings welcome) with a sample item, in ``language``."""
    language = language if language in dict(settings.LANGUAGES) else annotator_language(study.config)
    with translation.override(language):
        context = item_form_context(study, _sample_item(study), posted={})
        context.update(
            {
                "assignment_id": "",
                "progress": AnnotatorProgress(done=0, expected=max(1, study.per_rater_cap or 20)),
                "error": "",
                "notice": "",
                "item_url": "",
                "lease_url": "",
                "heartbeat_seconds": 3600,
                "preview_language": language,
            }
        )
        return render_to_string("researcher/builder/_preview.html", context, request=request)


def _checked_copy(builder: StudyBuilder, study: Study) -> Study | None:
    """An unsaved copy of the study with the builder's task settings; None until they make sense."""
    if builder.task_type is None or builder.config is None:
        return None
    shown = copy.copy(study)
    shown.task_type, shown.config = builder.task_type.name, builder.config
    return shown


def _check(request: HttpRequest, study: Study) -> HttpResponse:
    builder = StudyBuilder(study, request.POST)
    valid = builder.is_valid()
    # Errors are shown for the field being edited and for every field holding something; an empty field
    # not yet reached is not scolded before the form is sent.
    touched = request.headers.get("HX-Trigger-Name", "")
    errors = builder.errors
    shown_errors = {
        name: (errors.get(name, []) if name == touched or request.POST.get(name, "") != "" else [])
        for name in builder.field_names()
    }
    shown = _checked_copy(builder, study)
    preview = "" if shown is None else preview_html(request, shown, language=request.POST.get("preview_language", ""))
    context = {
        "field_errors": shown_errors,
        "non_field_errors": [e for name, errs in errors.items() if name == "__all__" for e in errs],
        "preview": preview,
        "valid": valid,
        "problems": sum(len(v) for v in errors.values()),
    }
    return render(request, "researcher/builder/_check.html", context)


@require_POST
@researcher_required
def builder_check_new(request: HttpRequest) -> HttpResponse:
    return _check(request, Study(owner=request.user))


@require_POST
@researcher_required
def builder_check(request: HttpRequest, pk: int) -> HttpResponse:
    return _check(request, owned_study_or_404(request, pk=pk))


def study_preview_html(request: HttpRequest, study: Study) -> str:
    """The preview of a saved study as it stands (the study page draws it before any edit)."""
    try:
        return preview_html(request, study)
    except ValidationError:
        return ""
