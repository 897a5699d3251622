"""The researcher's API: one view per operation, own studies only.

Authentication is a token (``Authorization: Token <key>``) or the browser
session (then with the CSRF header). Another researcher's study answers 404,
as if it did not exist; annotator accounts are refused with 403.
"""

import json
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.db import transaction
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from ..access import OwnedObjectsMixin
from ..audit import acting_as
from ..importers import FileProblem, import_item_objects, item_import_start
from ..importers.background import inline_max_bytes
from ..models import ItemImport, Judgment, Rater, Study
from ..rater_steps import allowlist_csv, rater_steps_dump, rater_steps_save
from ..selectors import researcher as selectors
from ..services.studies import study_create, study_set_state, study_update
from ..study_files import config_problems
from ..task_types import get_task_type
from . import serializers as s
from .json_input import BoundedJSONParser
from .permissions import IsResearcher


def _errors(exc: DjangoValidationError | FileProblem) -> ValidationError:
    return ValidationError({"errors": list(exc.messages)})


def _check_config(task_type: str, config: Any) -> None:
    if config is None:
        return
    unknown = config_problems(get_task_type(task_type), config)
    if unknown:
        raise ValidationError({"errors": [f"config: {m}" for m in unknown]})


def _body_size(request: Request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class ResearcherApi(OwnedObjectsMixin, APIView):
    permission_classes = [IsAuthenticated, IsResearcher]

    def study(self, pk: int) -> Study:
        return self.get_owned(Study, pk=pk)


class StudyListApi(ResearcherApi, generics.ListAPIView):
    serializer_class = s.StudyOutput

    def get_queryset(self):
        return self.owned(Study).order_by("-created_at", "-id")

    @extend_schema(operation_id="studies_list", summary="Your studies, newest first")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class StudyCreateApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_create",
        summary="Create a study (in draft)",
        request=s.StudyCreateInput,
        responses={201: s.StudyOutput},
    )
    def post(self, request: Request) -> Response:
        data = s.StudyCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        _check_config(fields["task_type"], fields.get("config"))
        try:
            study = study_create(owner=request.user, actor=request.user, **fields)
        except DjangoValidationError as exc:
            raise _errors(exc) from None
        return Response(s.StudyOutput(study, context={"request": request}).data, status=status.HTTP_201_CREATED)


class StudyDetailApi(ResearcherApi):
    @extend_schema(operation_id="studies_retrieve", summary="One of your studies", responses={200: s.StudyOutput})
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.StudyOutput(self.study(pk), context={"request": request}).data)


class StudyUpdateApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_update",
        summary="Change a study's settings (the config only while it has no judgments)",
        request=s.StudySettingsInput,
        responses={200: s.StudyOutput},
    )
    def patch(self, request: Request, pk: int) -> Response:
        study = self.study(pk)
        data = s.StudySettingsInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        _check_config(study.task_type, changes.get("config"))
        try:
            with transaction.atomic():
                study = study_update(study=study, actor=request.user, **changes)
        except DjangoValidationError as exc:
            raise _errors(exc) from None
        return Response(s.StudyOutput(study, context={"request": request}).data)


class _StudyStateApi(ResearcherApi):
    def set_state(self, request: Request, pk: int, state: str) -> Response:
        study = self.study(pk)
        try:
            study_set_state(study=study, state=state, actor=request.user)
        except DjangoValidationError as exc:
            raise _errors(exc) from None
        return Response(s.StudyOutput(study, context={"request": request}).data)


class StudyOpenApi(_StudyStateApi):
    @extend_schema(
        operation_id="studies_open",
        summary="Open a study to raters",
        request=None,
        responses={200: s.StudyOutput},
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.set_state(request, pk, Study.State.OPEN)


class StudyCloseApi(_StudyStateApi):
    @extend_schema(operation_id="studies_close", summary="Close a study", request=None, responses={200: s.StudyOutput})
    def post(self, request: Request, pk: int) -> Response:
        return self.set_state(request, pk, Study.State.CLOSED)


class ItemListApi(ResearcherApi, generics.ListAPIView):
    serializer_class = s.ItemOutput

    def get_queryset(self):
        return selectors.study_items(study=self.study(self.kwargs["pk"]))

    @extend_schema(operation_id="items_list", summary="A study's items in their listed order")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class ItemImportApi(ResearcherApi):
    parser_classes = [MultiPartParser, BoundedJSONParser]

    @extend_schema(
        operation_id="items_import",
        summary="Import items: a file upload, or a JSON list of items",
        description=(
            "Send a CSV/XLSX/JSONL file as multipart form data, or a JSON body with an `items` list. "
            "Nothing is written unless every item is valid. Files and bodies over "
            "FUNNYBONE_IMPORT_INLINE_MAX_BYTES (1 MB by default) are imported in the background: "
            "the answer is 202 and `status_url` tells when it is done."
        ),
        request={"multipart/form-data": s.ItemsFileInput, "application/json": s.ItemsJsonInput},
        responses={
            201: s.ImportOutcomeOutput,
            202: s.ImportOutcomeOutput,
            400: OpenApiResponse(description="Every problem found (`errors`, by row); nothing was imported."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        study = self.study(pk)
        if "file" in request.FILES:
            return self._file(request, study)
        data = s.ItemsJsonInput(data=request.data)
        data.is_valid(raise_exception=True)
        if _body_size(request) > inline_max_bytes():
            # A big list is imported like a big file: written as JSON Lines and handed to a worker.
            lines = "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in data.validated_data["items"])
            upload = SimpleUploadedFile("items.jsonl", lines.encode(), content_type="application/x-ndjson")
            return self._start(request, study, upload=upload, replace=data.validated_data["replace"])
        # The importers do not pass the user on to items_create; the audit entry still names them.
        with acting_as(request.user):
            result = import_item_objects(
                study=study, objects=data.validated_data["items"], replace=data.validated_data["replace"]
            )
        if not result.ok:
            raise ValidationError({"errors": result.errors})
        outcome = {
            "status": ItemImport.Status.DONE,
            "items_created": result.count,
            "errors": [],
            "import_id": None,
            "status_url": None,
        }
        return Response(outcome, status=status.HTTP_201_CREATED)

    def _file(self, request: Request, study: Study) -> Response:
        data = s.ItemsFileInput(data=request.data)
        data.is_valid(raise_exception=True)
        return self._start(request, study, upload=data.validated_data["file"], replace=data.validated_data["replace"])

    def _start(self, request: Request, study: Study, *, upload: UploadedFile, replace: bool) -> Response:
        try:
            with transaction.atomic(), acting_as(request.user):
                item_import = item_import_start(study=study, upload=upload, user=request.user, replace=replace)
        except FileProblem as exc:
            raise ValidationError({"errors": exc.messages}) from None
        if item_import.status == ItemImport.Status.FAILED:
            raise ValidationError({"errors": item_import.errors})
        # The deprecated /api/ and v1 both serve this operation; each names its own status URL.
        url = reverse(f"{request.resolver_match.namespace}:import_detail", args=[study.pk, item_import.pk])
        outcome = {
            "status": item_import.status,
            "items_created": item_import.items_created,
            "errors": item_import.errors,
            "import_id": item_import.pk,
            "status_url": request.build_absolute_uri(url),
        }
        done = item_import.status == ItemImport.Status.DONE
        return Response(outcome, status=status.HTTP_201_CREATED if done else status.HTTP_202_ACCEPTED)


class ItemImportDetailApi(ResearcherApi):
    @extend_schema(
        operation_id="imports_retrieve", summary="The status of a file import", responses={200: s.ItemImportOutput}
    )
    def get(self, request: Request, pk: int, import_pk: int) -> Response:
        study = self.study(pk)
        item_import = study.imports.filter(pk=import_pk).first()
        if item_import is None:
            return Response({"detail": "No such import."}, status=status.HTTP_404_NOT_FOUND)
        return Response(s.ItemImportOutput(item_import).data)


class JudgmentListApi(ResearcherApi, generics.ListAPIView):
    serializer_class = s.JudgmentOutput

    def get_queryset(self):
        filters = s.JudgmentFilterInput(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return selectors.study_judgments(
            study=self.study(self.kwargs["pk"]),
            rater_kind=filters.validated_data.get("rater_kind"),
            status=filters.validated_data.get("status"),
        )

    @extend_schema(
        operation_id="judgments_list",
        summary="A study's judgments, oldest first",
        parameters=[
            OpenApiParameter("rater_kind", str, enum=Rater.Kind.values, description="Only this kind of rater."),
            OpenApiParameter("status", str, enum=Judgment.Status.values, description="Only this status."),
        ],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class StudyProgressApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_progress",
        summary="Totals, and a page of judgments per item and per rater",
        description=(
            "The totals cover the whole study. `items` (least judged first) and `raters` are pages: "
            "follow `items_next` and `raters_next` for the rest."
        ),
        parameters=[s.ProgressQueryInput],
        responses={200: s.ProgressOutput},
    )
    def get(self, request: Request, pk: int) -> Response:
        study = self.study(pk)
        query = s.ProgressQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = query.validated_data
        progress = selectors.study_progress(
            study=study,
            item_limit=page["limit"],
            item_offset=page["offset"],
            rater_limit=page["raters_limit"],
            rater_offset=page["raters_offset"],
        )
        data = s.ProgressOutput(progress).data
        url = request.build_absolute_uri()
        items_end = page["offset"] + page["limit"]
        raters_end = page["raters_offset"] + page["raters_limit"]
        data["items_next"] = replace_query_param(url, "offset", items_end) if items_end < progress.items_total else None
        data["raters_next"] = (
            replace_query_param(url, "raters_offset", raters_end) if raters_end < progress.raters_total else None
        )
        return Response(data)


class StudyRaterStepsApi(ResearcherApi):
    """The study's qualification test, practice items and questionnaires (docs/raters.md)."""

    def _output(self, request: Request, study: Study) -> dict[str, Any]:
        data: dict[str, Any] = {"qualification": None, "practice": None, "questionnaire": None}
        data.update(rater_steps_dump(study))
        url = reverse("v1:study_allowlist", args=[study.pk]) if study.qualification_id else None
        data["allowlist_url"] = request.build_absolute_uri(url) if url else None
        return data

    @extend_schema(
        operation_id="studies_rater_steps",
        summary="The qualification, practice and questionnaires",
        responses={200: s.RaterStepsOutput},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.RaterStepsOutput(self._output(request, self.study(pk))).data)

    @extend_schema(
        operation_id="studies_rater_steps_set",
        summary="Replace the qualification, practice and questionnaires (a section left out is removed)",
        request=s.RaterStepsInput,
        responses={200: s.RaterStepsOutput},
    )
    def put(self, request: Request, pk: int) -> Response:
        study = self.study(pk)
        if not isinstance(request.data, dict):
            raise ValidationError({"errors": ["The body must be a JSON object."]})
        data = {k: v for k, v in request.data.items() if v is not None}
        try:
            rater_steps_save(study=study, data=data, actor=request.user)
        except DjangoValidationError as exc:
            problems = exc.message_dict if hasattr(exc, "error_dict") else {"errors": exc.messages}
            raise ValidationError(
                {"errors": [f"{key}: {m}" if key != "errors" else m for key, ms in problems.items() for m in ms]}
            ) from None
        study.refresh_from_db()
        return Response(s.RaterStepsOutput(self._output(request, study)).data)


class QualificationAllowlistApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_qualification_allowlist",
        summary="Participant ids who passed the study's qualification (CSV, for a Prolific allowlist)",
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR, description="A participant_id header, then one id a line."
            )
        },
    )
    def get(self, request: Request, pk: int) -> HttpResponse:
        study = self.study(pk)
        if study.qualification is None:
            raise NotFound("This study has no qualification.")
        response = HttpResponse(allowlist_csv(study.qualification), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-qualified-allowlist.csv"'
        return response
