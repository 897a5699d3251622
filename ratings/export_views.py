# SPDX-License-Identifier: GPL-3.0-or-later
"""Researcher pages for exports: request one, watch it, download it.

Only the study's owner sees any of this; everyone else gets a 404, so other
studies' slugs and export ids stay private. A small study's export is
answered within the request; a large one becomes an ``Export`` row that a
worker writes while an htmx-polled status fragment shows its progress.
"""

from __future__ import annotations

import io
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.access import get_owned_or_404, owned_study_or_404
from annotation.models import Study
from ratings.exports.parquet import write_parquet
from ratings.exports.services import (
    CONTENT_TYPES,
    TEXT_STREAMS,
    clean_subset,
    export_create,
    export_file_path,
    export_filename,
    is_large,
)
from ratings.exports.study_data import HUMAN_KINDS
from ratings.exports.workbook import write_workbook
from ratings.models import Export

RECENT = 10
# Above this many raters the page offers no checkbox list (the API still takes a subset).
SUBSET_CHOICES_MAX = 200


def _get_owned_export(request: HttpRequest, pk: int) -> Export:
    return get_owned_or_404(Export.objects.select_related("study"), user=request.user, pk=pk)


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=Export.Format.choices, initial=Export.Format.XLSX)
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
        return clean_subset(study=self.study, rater_ids=self.cleaned_data.get("rater") or [])


def _page(request: HttpRequest, study: Study, form: ExportForm, *, status_code: int = 200) -> HttpResponse:
    context = {
        "study": study,
        "form": form,
        "exports": study.exports.select_related("created_by")[:RECENT],
        "subset_choices_max": SUBSET_CHOICES_MAX,
    }
    return render(request, "ratings/exports/export_page.html", context, status=status_code)


@require_GET
@login_required
def export_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    return _page(request, study, ExportForm(study=study))


def _direct(study: Study, fmt: str, subset: list[int]) -> HttpResponse:
    """The whole export in this response (small studies only)."""
    filename = export_filename(study, fmt)
    if fmt in (Export.Format.XLSX, Export.Format.PARQUET):
        buffer = io.BytesIO()
        writer = write_workbook if fmt == Export.Format.XLSX else write_parquet
        writer(study, buffer, rater_subset=subset)
        buffer.seek(0)
        return FileResponse(buffer, as_attachment=True, filename=filename, content_type=CONTENT_TYPES[fmt])
    response = StreamingHttpResponse(TEXT_STREAMS[fmt](study, rater_subset=subset), content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_POST
@login_required
def export_request(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    form = ExportForm(request.POST, study=study)
    if not form.is_valid():
        return _page(request, study, form, status_code=400)
    fmt, subset = form.cleaned_data["format"], form.cleaned_data["rater"]
    if not is_large(study):
        return _direct(study, fmt, subset)
    export = export_create(study=study, user=request.user, fmt=fmt, rater_subset=subset)
    if request.htmx:
        return render(request, "ratings/exports/export_status.html#status", {"export": export}, status=202)
    return redirect("exports:status", pk=export.pk)


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


def export_file_response(export: Export) -> FileResponse:
    """The finished export's file as a download; 404 while it is not ready or when its file is gone."""
    if export.status != Export.Status.DONE:
        raise Http404("This export is not ready.")
    try:
        path = export_file_path(export)
        handle = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except FileNotFoundError:
        raise Http404("This export's file is gone; please request a new one.") from None
    return FileResponse(
        handle,
        as_attachment=True,
        filename=path.name.split("-", 1)[1],
        content_type=CONTENT_TYPES[export.format],
    )


# -- API -------------------------------------------------------------------------


class ExportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=Export.Format.choices)
    # Bounded like the database's 64-bit ids: a bigger number failed in the query (500) instead of a 400.
    rater_subset = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False, default=list
    )


class ExportSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    download_url = serializers.SerializerMethodField()
    status_url = serializers.SerializerMethodField()

    class Meta:
        model = Export
        fields = [
            "id",
            "study",
            "format",
            "status",
            "rater_subset",
            "rows_written",
            "rows_expected",
            "created_at",
            "started_at",
            "finished_at",
            "error",
            "status_url",
            "download_url",
        ]

    def get_download_url(self, export: Export) -> str | None:
        if export.status != Export.Status.DONE:
            return None
        return self.context["request"].build_absolute_uri(reverse("exports:download", args=[export.pk]))

    def get_status_url(self, export: Export) -> str:
        return self.context["request"].build_absolute_uri(reverse("exports:api_status", args=[export.pk]))


@extend_schema(request=ExportRequestSerializer, responses={202: ExportSerializer})
@api_view(["POST"])
def api_export_create(request: Request, slug: str) -> Response:
    """Queue an export of one of your studies; poll its status_url until download_url appears."""
    study = owned_study_or_404(request, slug=slug)
    incoming = ExportRequestSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        subset = clean_subset(study=study, rater_ids=incoming.validated_data["rater_subset"])
    except ValidationError as exc:
        return Response({"rater_subset": exc.messages}, status=status.HTTP_400_BAD_REQUEST)
    export = export_create(study=study, user=request.user, fmt=incoming.validated_data["format"], rater_subset=subset)
    return Response(ExportSerializer(export, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(responses=ExportSerializer)
@api_view(["GET"])
def api_export_status(request: Request, pk: int) -> Response:
    export = _get_owned_export(request, pk)
    return Response(ExportSerializer(export, context={"request": request}).data)
