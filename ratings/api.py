# SPDX-License-Identifier: GPL-3.0-or-later
"""JSON access to a study's analysis for its owner (token or session authentication)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import OwnedObjectsMixin, owned_study_or_404
from annotation.api.paging import PagedListMixin
from annotation.api.permissions import IsResearcher
from annotation.models import Study

from .export_views import ExportRequestSerializer, ExportSerializer, export_file_response
from .exports.services import clean_subset, export_create
from .models import Export
from .reports import json_ready, study_agreement
from .selectors import GROUPS, NoNumericCoding


class ErrorDetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


class AgreementQuerySerializer(serializers.Serializer):
    group = serializers.ChoiceField(choices=list(GROUPS), default="humans")
    raters = serializers.CharField(
        required=False, allow_blank=True, help_text="Comma-separated rater ids to narrow the group to."
    )

    def validate_raters(self, value: str) -> list[int] | None:
        if not value.strip():
            return None
        try:
            return [int(part) for part in value.split(",") if part.strip()]
        except ValueError:
            raise serializers.ValidationError("Rater ids must be whole numbers separated by commas.") from None


class StudyAgreementView(APIView):
    """Agreement figures of one rater group, recomputed from the study's judgments."""

    @extend_schema(
        parameters=[
            OpenApiParameter("group", str, enum=list(GROUPS), description="Whose judgments to analyse."),
            OpenApiParameter("raters", str, description="Comma-separated rater ids (optional)."),
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
            OpenApiParameter("raters", str, description="Comma-separated rater ids (optional)."),
        ],
        responses={200: AgreementReportSerializer, 400: ErrorDetailSerializer},
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


class ExportV1Serializer(ExportSerializer):
    def get_download_url(self, export: Export) -> str | None:
        if export.status != Export.Status.DONE:
            return None
        return self.context["request"].build_absolute_uri(reverse("v1:export_download", args=[export.pk]))

    def get_status_url(self, export: Export) -> str:
        return self.context["request"].build_absolute_uri(reverse("v1:export_detail", args=[export.pk]))


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
        responses={202: ExportV1Serializer, 400: ErrorDetailSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        study = self.get_owned(Study, pk=pk)
        incoming = ExportRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            subset = clean_subset(study=study, rater_ids=incoming.validated_data["rater_subset"])
        except ValidationError as exc:
            return Response({"rater_subset": exc.messages}, status=status.HTTP_400_BAD_REQUEST)
        export = export_create(
            study=study, user=request.user, fmt=incoming.validated_data["format"], rater_subset=subset
        )
        return Response(ExportV1Serializer(export, context={"request": request}).data, status=202)


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


class ExportDownloadApi(_Exports):
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="exports_download",
        summary="The finished export's file (token or session, like every other operation)",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The file, as an attachment, in the export's format."
            ),
            404: ErrorDetailSerializer,
        },
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        return export_file_response(self.export(pk))
