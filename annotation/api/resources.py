"""The study resources of API v1 (mounted by ``funnybone/api_urls.py`` at /api/v1/).

v1 puts each resource at one URL and lets the method say the operation
(``GET /studies/`` lists, ``POST /studies/`` creates, ``PATCH /studies/{id}/``
changes). The operations themselves are the ones in ``views.py``, which also
serve the deprecated ``/api/…`` URLs for one more release: the classes here only
put them together, add the lists v0 lacked, and load a whole study file.
"""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from ..audit import acting_as
from ..study_files import StudyFileError, load_study_upload
from . import serializers as s
from .views import (
    ItemImportApi,
    ResearcherApi,
    StudyCreateApi,
    StudyDetailApi,
    StudyListApi,
    StudyUpdateApi,
)


class StudiesApi(StudyListApi, StudyCreateApi):
    pass


class StudyApi(StudyDetailApi, StudyUpdateApi):
    pass


class ImportsApi(ItemImportApi, generics.ListAPIView):
    serializer_class = s.ItemImportOutput

    def get_queryset(self):
        return self.study(self.kwargs["pk"]).imports.order_by("-created_at", "-id")

    @extend_schema(operation_id="imports_list", summary="A study's file imports, newest first")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class StudyFileInput(serializers.Serializer):
    study_file = serializers.FileField(help_text="The study file (.yaml, .yml or .json), as in docs/study-files.md.")
    items_file = serializers.FileField(
        required=False, help_text="The file the study file's items_file names, when it names one."
    )
    replace = serializers.BooleanField(default=False, help_text="Update your study of the same name (no judgments).")


class StudyFileApi(ResearcherApi):
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="studies_create_from_study_file",
        summary="Create a study (settings, items, judges, state) from a study file",
        description=(
            "Everything is checked before anything is written; a 400 lists every problem. "
            "When the study file names an items_file, send that file too, as `items_file`."
        ),
        request={"multipart/form-data": StudyFileInput},
        responses={201: s.StudyOutput},
    )
    def post(self, request: Request) -> Response:
        data = StudyFileInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            with acting_as(request.user):
                study = load_study_upload(
                    data.validated_data["study_file"],
                    items_upload=data.validated_data.get("items_file"),
                    owner=request.user,
                    replace=data.validated_data["replace"],
                )
        except (StudyFileError, DjangoValidationError) as exc:
            raise ValidationError({"errors": list(exc.messages)}) from None
        return Response(s.StudyOutput(study, context={"request": request}).data, status=status.HTTP_201_CREATED)
