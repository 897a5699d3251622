# SPDX-License-Identifier: GPL-3.0-or-later
"""JSON access to a study's analysis and exports for its owner (token or session authentication)."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import OwnedObjectsMixin, get_owned_or_404, owned_study_or_404
from annotation.api.paging import PagedListMixin
from annotation.api.permissions import IsResearcher
from annotation.models import Study
from funnybone.api_errors import error_response

from .alignment import REFERENCES, AlignmentParams, AlignmentUnavailable, metadata_keys, study_judges, task_family
from .cached import report_show
from .exports.formats import export_formats, format_choices
from .exports.responses import export_file_response
from .exports.services import clean_subset, export_create
from .models import Export, StudyReport
from .reports import json_ready, study_agreement
from .selectors import GROUPS, NoNumericCoding, study_raters

# Comma-separated rater ids, as the schema publishes the pattern (ids within 64 bits: at most 18 digits).
RATER_IDS = r"^ *[0-9]{1,18}( *, *[0-9]{1,18})* *$"
RATER_IDS_PARAMETER = OpenApiParameter(
    "raters",
    {"type": "string", "pattern": RATER_IDS},
    description="Comma-separated rater ids to narrow the group to (optional).",
)


class AgreementQuerySerializer(serializers.Serializer):
    group = serializers.ChoiceField(choices=list(GROUPS), default="humans")
    raters = serializers.CharField(
        required=False, allow_blank=True, help_text="Comma-separated rater ids to narrow the group to."
    )

    def validate_raters(self, value: str) -> list[int] | None:
        if not value.strip():
            return None
        if not re.fullmatch(RATER_IDS, value):
            raise serializers.ValidationError("Rater ids must be whole numbers separated by commas.")
        return [int(part) for part in value.split(",")]


class StudyAgreementView(APIView):
    """Agreement figures of one rater group, recomputed from the study's judgments."""

    @extend_schema(
        parameters=[
            OpenApiParameter("group", str, enum=list(GROUPS), description="Whose judgments to analyse."),
            RATER_IDS_PARAMETER,
        ],
        responses={200: dict},
    )
    def get(self, request: Request, slug: str) -> Response:
        study = owned_study_or_404(request, slug=slug)
        query = AgreementQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            report = study_agreement(
                study=study, group=query.validated_data["group"], rater_ids=query.validated_data.get("raters")
            )
        except NoNumericCoding as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(json_ready(report))


# -- API v1 (mounted by funnybone/api_urls.py) ---------------------------------------------


class AgreementReportSerializer(serializers.Serializer):
    study = serializers.CharField(help_text="The study's slug.")
    group = serializers.ChoiceField(choices=list(GROUPS))
    task_type = serializers.CharField()
    scale = serializers.DictField(child=serializers.CharField(), help_text="Numeric code → the scale point's name.")
    n_judgments = serializers.IntegerField()
    raters = serializers.ListField(child=serializers.DictField(), help_text="{id, label, kind} of each rater.")
    agreement = serializers.DictField(
        allow_null=True,
        help_text="Krippendorff's alpha with its interval and the other figures of docs/analysis.md; "
        "null when the group has fewer than two raters (the reason is in warnings).",
    )
    warnings = serializers.ListField(child=serializers.CharField())


class StudyAgreementReportApi(OwnedObjectsMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="reports_agreement",
        summary="Agreement figures of one rater group, recomputed from the study's judgments",
        parameters=[
            OpenApiParameter("group", str, enum=list(GROUPS), description="Whose judgments to analyse."),
            RATER_IDS_PARAMETER,
        ],
        responses={200: AgreementReportSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        study = self.get_owned(Study, pk=pk)
        query = AgreementQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            report = study_agreement(
                study=study, group=query.validated_data["group"], rater_ids=query.validated_data.get("raters")
            )
        except NoNumericCoding as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(json_ready(report))


# -- Exports, the JSON endpoints beside the export pages (/exports/api/...) ----------------


class ExportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=[], help_text="One of the export formats this server offers.")
    # Bounded like the database's 64-bit ids: a bigger number failed in the query (500) instead of a 400.
    rater_subset = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False, default=list
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Read from the registry for each request, never frozen when the module loads.
        self.fields["format"].choices = format_choices()


class ExportSerializer(serializers.ModelSerializer):
    """An export and its progress, with the addresses of its status and (once done) its file."""

    #: The routes its addresses point to: the export pages' own JSON endpoint here, API v1's below.
    status_route = "exports:api_status"
    download_route = "exports:download"

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
        return self.context["request"].build_absolute_uri(reverse(self.download_route, args=[export.pk]))

    def get_status_url(self, export: Export) -> str:
        return self.context["request"].build_absolute_uri(reverse(self.status_route, args=[export.pk]))


def _queue_export(request: Request, study: Study, answer: type[ExportSerializer]) -> Response:
    """Check an export request's format and rater subset, queue the export, answer 202 with it."""
    incoming = ExportRequestSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        subset = clean_subset(
            study=study, rater_ids=incoming.validated_data["rater_subset"], fmt=incoming.validated_data["format"]
        )
    except ValidationError as exc:
        raise serializers.ValidationError({"rater_subset": exc.messages}) from None
    export = export_create(study=study, user=request.user, fmt=incoming.validated_data["format"], rater_subset=subset)
    return Response(answer(export, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(request=ExportRequestSerializer, responses={202: ExportSerializer})
@api_view(["POST"])
def api_export_create(request: Request, slug: str) -> Response:
    """Queue an export of one of your studies; poll its status_url until download_url appears."""
    return _queue_export(request, owned_study_or_404(request, slug=slug), ExportSerializer)


@extend_schema(responses=ExportSerializer)
@api_view(["GET"])
def api_export_status(request: Request, pk: int) -> Response:
    export = get_owned_or_404(Export.objects.select_related("study"), user=request.user, pk=pk)
    return Response(ExportSerializer(export, context={"request": request}).data)


class ExportV1Serializer(ExportSerializer):
    status_route = "v1:export_detail"
    download_route = "v1:export_download"


class _Exports(OwnedObjectsMixin, PagedListMixin, APIView):
    permission_classes = [IsResearcher]

    def export(self, pk: int) -> Export:
        return self.get_owned(Export.objects.select_related("study"), pk=pk)


class StudyExportsApi(_Exports):
    @extend_schema(
        operation_id="exports_list",
        summary="A study's exports, newest first",
        responses=ExportV1Serializer(many=True),
    )
    def get(self, request: Request, pk: int) -> Response:
        study = self.get_owned(Study, pk=pk)
        return self.page_of(study.exports.select_related("study").order_by("-created_at", "-id"), ExportV1Serializer)

    @extend_schema(
        operation_id="exports_create",
        summary="Queue an export of the study; poll status_url until download_url appears",
        description="`format` is any of the export formats this server offers (the enum below).",
        request=ExportRequestSerializer,
        responses={202: ExportV1Serializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        return _queue_export(request, self.get_owned(Study, pk=pk), ExportV1Serializer)


class ExportApi(_Exports):
    @extend_schema(operation_id="exports_retrieve", summary="An export and its progress", responses=ExportV1Serializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(ExportV1Serializer(self.export(pk), context={"request": request}).data)


class _AnyAccept(BaseContentNegotiation):
    # A file download answers in the export's own type whatever Accept says (DRF would answer 406
    # to "Accept: text/csv", having no renderer for it); errors still render as JSON.
    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def download_responses() -> dict:
    """The download's answers: the file in each registered format's own content type."""
    answers: dict = {
        (200, content_type): OpenApiResponse(
            OpenApiTypes.BINARY, description="The file, as an attachment, in the export's format."
        )
        for content_type in sorted({fmt.content_type.split(";")[0].strip() for fmt in export_formats()})
    }
    answers[404] = OpenApiResponse(description="No such export among yours, or it is not done yet.")
    return answers


class ExportDownloadApi(_Exports):
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="exports_download",
        summary="The finished export's file (token or session, like every other operation)",
        responses=download_responses(),
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        return export_file_response(self.export(pk))


# -- the alignment report (the alignment page's figures, read from the stored report) ------


JUDGE_IDS_PARAMETER = OpenApiParameter(
    "judges",
    {"type": "string", "pattern": RATER_IDS},
    description="Comma-separated rater ids of the judges to compare (optional; none: every judge of the study).",
)


class AlignmentQuerySerializer(serializers.Serializer):
    reference = serializers.ChoiceField(choices=list(REFERENCES), default="passers")
    raters = serializers.RegexField(RATER_IDS, required=False)
    judges = serializers.RegexField(RATER_IDS, required=False)
    breakdown = serializers.CharField(required=False, allow_blank=True, max_length=200)


class AlignmentReportOutput(serializers.Serializer):
    study = serializers.IntegerField(help_text="The study's id.")
    params = serializers.DictField(help_text="What the report compares: reference, raters, judges, breakdown, seed.")
    status = serializers.CharField(help_text="The stored report's job status (queued, running, done, failed).")
    current = serializers.BooleanField(help_text="The figures were computed from the judgments as they are now.")
    computing = serializers.BooleanField(help_text="A computation is queued or running: ask again shortly.")
    progress = serializers.IntegerField(help_text="Percent done while computing.")
    computed_at = serializers.DateTimeField(allow_null=True, help_text="When `result` was computed.")
    new_judgments = serializers.IntegerField(help_text="Judgments added since `result` was computed.")
    error = serializers.CharField(help_text="Why the last computation failed; empty otherwise.")
    result = serializers.DictField(
        allow_null=True, help_text="The alignment page's figures (docs/alignment.md); null before the first one."
    )


def _ids(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",")) if text else ()


class StudyAlignmentReportApi(OwnedObjectsMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="reports_alignment",
        summary="The alignment report: judges against a human reference, as the alignment page shows it",
        description=(
            "Reads the stored report for these parameters; when the judgments changed since it was computed, "
            "a recomputation is queued (small studies: computed in this request) and `computing` is true "
            "until it is done. Poll until `computing` is false."
        ),
        parameters=[
            OpenApiParameter("reference", str, enum=list(REFERENCES), description="The human reference."),
            OpenApiParameter(
                "raters",
                {"type": "string", "pattern": RATER_IDS},
                description="Comma-separated human rater ids: the reference is these raters (reference=selected).",
            ),
            JUDGE_IDS_PARAMETER,
            OpenApiParameter("breakdown", str, description="An item metadata key to break the figures down by."),
        ],
        responses={
            200: AlignmentReportOutput,
            404: OpenApiResponse(description="No such study among yours, or a rater, judge or metadata key not in it."),
            409: OpenApiResponse(description="The study's task type has no alignment report."),
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        study = self.get_owned(Study, pk=pk)
        query = AlignmentQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            task_family(study)
        except AlignmentUnavailable as exc:
            return error_response(status.HTTP_409_CONFLICT, {"detail": str(exc)})
        data = query.validated_data
        raters, judges, breakdown = _ids(data.get("raters")), _ids(data.get("judges")), data.get("breakdown") or ""
        humans = {r.id for r in study_raters(study=study) if r.kind in ("expert", "crowd")}
        known_judges = {j.id for j in study_judges(study=study)}
        unknown = [f"rater {r}" for r in raters if r not in humans] + [
            f"judge {j}" for j in judges if j not in known_judges
        ]
        if breakdown and breakdown not in metadata_keys(study=study):
            unknown.append(f"metadata key {breakdown!r}")
        if unknown:
            return error_response(status.HTTP_404_NOT_FOUND, {"detail": f"Not in this study: {', '.join(unknown)}."})
        reference = data["reference"]
        if reference == "selected" and not raters:
            raise serializers.ValidationError({"raters": ["Name at least one human rater for reference=selected."]})
        params = AlignmentParams(
            reference=reference,
            reference_rater_ids=raters if reference == "selected" else (),
            judge_ids=judges,
            breakdown=breakdown,
            seed=study.seed,
        )
        shown = report_show(study=study, kind=StudyReport.Kind.ALIGNMENT, params=params.as_dict())
        report = shown.report
        body = {
            "study": study.pk,
            "params": report.params,
            "status": report.status,
            "current": shown.current,
            "computing": shown.computing,
            "progress": report.progress,
            "computed_at": report.computed_at,
            "new_judgments": shown.new_judgments,
            "error": report.error,
            "result": report.result,
        }
        return Response(AlignmentReportOutput(body).data)
