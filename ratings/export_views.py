# SPDX-License-Identifier: GPL-3.0-or-later
"""Researcher pages for exports: request one, watch it, download it (the API is in ``ratings.api``).

Only the study's owner sees any of this; everyone else gets a 404, so other
studies' slugs and export ids stay private. A small study's export is
answered within the request; a large one becomes an ``Export`` row that a
worker writes while an htmx-polled status fragment shows its progress.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import get_owned_or_404, owned_study_or_404
from annotation.models import Study
from ratings.exports.formats import default_format, export_formats, format_choices
from ratings.exports.responses import export_direct_response, export_file_response
from ratings.exports.services import clean_subset, export_create, is_large
from ratings.exports.study_data import HUMAN_KINDS
from ratings.models import DatasetCard, Export

RECENT = 10
# Above this many raters the page offers no checkbox list (the API still takes a subset).
SUBSET_CHOICES_MAX = 200


def _get_owned_export(request: HttpRequest, pk: int) -> Export:
    return get_owned_or_404(Export.objects.select_related("study"), user=request.user, pk=pk)


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=format_choices, initial=default_format)
    rater = forms.TypedMultipleChoiceField(
        coerce=int,
        required=False,
        label="Selected rater subset (optional)",
        help_text="The consensus then uses only these raters; the Agreement sheet compares them with everyone.",
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.study = study
        raters = study.enrollments.filter(rater__kind__in=HUMAN_KINDS).select_related("rater").order_by("rater_id")
        # One more than the most the page lists: enough to tell that there are too many, never all of them.
        raters = list(raters[: SUBSET_CHOICES_MAX + 1])
        self.too_many_raters = len(raters) > SUBSET_CHOICES_MAX
        if not self.too_many_raters:
            self.fields["rater"].choices = [(e.rater_id, f"R{e.rater_id} {e.rater}") for e in raters]

    def clean_rater(self) -> list[int]:
        fmt = self.cleaned_data.get("format")
        return clean_subset(study=self.study, rater_ids=self.cleaned_data.get("rater") or [], fmt=fmt)


class DatasetCardForm(forms.ModelForm):
    """What the release bundle's dataset card says that the study does not hold."""

    class Meta:
        model = DatasetCard
        fields = ["licence", "pay", "recruitment_notes", "citation"]
        widgets = {name: forms.Textarea(attrs={"rows": 2}) for name in ("pay", "recruitment_notes")}
        labels = {"licence": "Licence of the data", "recruitment_notes": "Recruitment notes"}


def _card_form(study: Study, data: Any = None) -> DatasetCardForm:
    card = DatasetCard.objects.filter(study=study).first() or DatasetCard(study=study)
    return DatasetCardForm(data, instance=card)


def _page(
    request: HttpRequest,
    study: Study,
    form: ExportForm,
    *,
    status_code: int = 200,
    card_form: DatasetCardForm | None = None,
    card_saved: bool = False,
) -> HttpResponse:
    context = {
        "study": study,
        "form": form,
        "card_form": card_form or _card_form(study),
        "card_saved": card_saved,
        "exports": study.exports.select_related("created_by")[:RECENT],
        "subset_choices_max": SUBSET_CHOICES_MAX,
        "formats": export_formats(),
    }
    return render(request, "ratings/exports/export_page.html", context, status=status_code)


@require_GET
@login_required
def export_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    return _page(request, study, ExportForm(study=study))


@require_POST
@login_required
def export_request(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    form = ExportForm(request.POST, study=study)
    if not form.is_valid():
        return _page(request, study, form, status_code=400)
    fmt, subset = form.cleaned_data["format"], form.cleaned_data["rater"]
    if not is_large(study):
        return export_direct_response(study, fmt, subset)
    export = export_create(study=study, user=request.user, fmt=fmt, rater_subset=subset)
    if request.htmx:
        return render(request, "ratings/exports/export_status.html#status", {"export": export}, status=202)
    return redirect("exports:status", pk=export.pk)


@require_POST
@login_required
def dataset_card_save(request: HttpRequest, slug: str) -> HttpResponse:
    """Save the dataset card's licence, pay, recruitment notes and citation (the release bundle's card)."""
    study = owned_study_or_404(request, slug=slug)
    card_form = _card_form(study, request.POST)
    if not card_form.is_valid():
        return _page(request, study, ExportForm(study=study), card_form=card_form, status_code=400)
    card_form.save()
    return _page(request, study, ExportForm(study=study), card_saved=True)


@require_GET
@login_required
def export_status(request: HttpRequest, pk: int) -> HttpResponse:
    export = _get_owned_export(request, pk)
    template = "ratings/exports/export_status.html"
    if request.htmx:
        template += "#status"
    return render(request, template, {"export": export, "study": export.study})


@require_GET
@login_required
def export_download(request: HttpRequest, pk: int) -> FileResponse:
    return export_file_response(_get_owned_export(request, pk))
