# SPDX-License-Identifier: GPL-3.0-or-later
"""JSON access to a study's analysis for its owner (token or session authentication)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import owned_study_or_404

from .reports import json_ready, study_agreement
from .selectors import GROUPS, NoNumericCoding


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
