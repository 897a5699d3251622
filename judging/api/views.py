"""The judging API: judges (CRUD, keys write-only), runs (create, list, progress, cancel, resume), templates."""

from django.core.exceptions import ValidationError
from django.db.models import ProtectedError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.permissions import IsResearcher
from annotation.models import Study

from ..models import JudgeConfig, JudgeRun, PromptTemplate
from ..services.judges import judge_create, judge_update
from ..services.runs import run_cancel, run_create, run_resume
from ..services.templates import ensure_builtin_templates, template_save
from .serializers import JudgeSerializer, RunCreateSerializer, RunFilterSerializer, RunSerializer, TemplateSerializer

ERRORS = OpenApiResponse(description="Invalid input; the body says what is wrong.")
CONFLICT = OpenApiResponse(description="The judge has judgments (or a tournament) and stays.")
STUDY = OpenApiParameter("study", int, description="Only runs on this study.")
NAME = OpenApiParameter("name", str, description="Only versions of this template.")


def _invalid(exc: ValidationError) -> ApiValidationError:
    return ApiValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


class JudgeListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(operation_id="judges_list", summary="Your judges", responses={200: JudgeSerializer(many=True)})
    def get(self, request):
        judges = JudgeConfig.objects.filter(owner=request.user)
        return Response(JudgeSerializer(judges, many=True).data)

    @extend_schema(
        operation_id="judges_create",
        summary="Create a judge (api_key is write-only)",
        request=JudgeSerializer,
        responses={201: JudgeSerializer, 400: ERRORS},
    )
    def post(self, request):
        serializer = JudgeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            judge = judge_create(
                owner=request.user,
                name=data.get("name", ""),
                baseline=data.get("baseline", ""),
                api_key=data.get("api_key") or None,
                **serializer.settings(),
            )
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)


class JudgeDetail(APIView):
    permission_classes = [IsResearcher]

    def _judge(self, request, pk):
        return get_object_or_404(JudgeConfig, pk=pk, owner=request.user)

    @extend_schema(operation_id="judges_retrieve", summary="One of your judges", responses={200: JudgeSerializer})
    def get(self, request, pk):
        return Response(JudgeSerializer(self._judge(request, pk)).data)

    @extend_schema(
        operation_id="judges_update",
        summary='Change a judge; api_key replaces the stored key, "" removes it',
        request=JudgeSerializer,
        responses={200: JudgeSerializer, 400: ERRORS},
    )
    def patch(self, request, pk):
        judge = self._judge(request, pk)
        serializer = JudgeSerializer(judge, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = serializer.settings()
        if "name" in serializer.validated_data:
            changes["name"] = serializer.validated_data["name"]
        try:
            judge_update(judge=judge, api_key=serializer.validated_data.get("api_key"), **changes)
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(JudgeSerializer(judge).data)

    @extend_schema(
        operation_id="judges_destroy",
        summary="Delete a judge that has no judgments",
        responses={204: None, 409: CONFLICT},
    )
    def delete(self, request, pk):
        judge = self._judge(request, pk)
        if judge.rater.judgments.exists():
            return Response(
                {"detail": "This judge has judgments; it stays so they keep their rater."},
                status=status.HTTP_409_CONFLICT,
            )
        try:
            judge.rater.delete()
        except ProtectedError:
            return Response({"detail": "This judge is used by a tournament."}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="judge_runs_list",
        summary="Runs on your studies",
        parameters=[STUDY],
        responses={200: RunSerializer(many=True)},
    )
    def get(self, request):
        filters = RunFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = JudgeRun.objects.filter(study__owner=request.user).select_related("judge", "template")
        if filters.validated_data.get("study"):
            runs = runs.filter(study_id=filters.validated_data["study"])
        return Response(RunSerializer(runs[:500], many=True).data)

    @extend_schema(
        operation_id="judge_runs_create",
        summary="Queue a judge run over a study",
        request=RunCreateSerializer,
        responses={201: RunSerializer, 400: ERRORS},
    )
    def post(self, request):
        serializer = RunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        study = get_object_or_404(Study, pk=data["study"], owner=request.user)
        judge = get_object_or_404(JudgeConfig, pk=data["judge"], owner=request.user)
        try:
            run = run_create(
                study=study,
                judge=judge,
                trials=data.get("trials"),
                both_orders=data.get("both_orders"),
                created_by=request.user,
            )
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(RunSerializer(run, context={"with_progress": True}).data, status=status.HTTP_201_CREATED)


def _run(request, pk) -> JudgeRun:
    return get_object_or_404(JudgeRun.objects.select_related("judge", "template"), pk=pk, study__owner=request.user)


class RunDetail(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="judge_runs_retrieve", summary="A run with its progress", responses={200: RunSerializer}
    )
    def get(self, request, pk):
        return Response(RunSerializer(_run(request, pk), context={"with_progress": True}).data)


class RunCancel(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="judge_runs_cancel",
        summary="Cancel a run (calls in flight are recorded)",
        request=None,
        responses={200: RunSerializer},
    )
    def post(self, request, pk):
        run = _run(request, pk)
        run_cancel(run=run)
        return Response(RunSerializer(run, context={"with_progress": True}).data)


class RunResume(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="judge_runs_resume",
        summary="Queue a run again; judged units are kept",
        request=None,
        responses={200: RunSerializer},
    )
    def post(self, request, pk):
        run = run_resume(run=_run(request, pk))
        return Response(RunSerializer(run, context={"with_progress": True}).data)


class TemplateListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="prompt_templates_list",
        summary="Prompt templates, every version",
        parameters=[NAME],
        responses={200: TemplateSerializer(many=True)},
    )
    def get(self, request):
        ensure_builtin_templates()
        templates = PromptTemplate.objects.all()
        if request.query_params.get("name"):
            templates = templates.filter(name=request.query_params["name"])
        return Response(TemplateSerializer(templates, many=True).data)

    @extend_schema(
        operation_id="prompt_templates_create",
        summary="Save a new version of a template",
        request=TemplateSerializer,
        responses={201: TemplateSerializer, 400: ERRORS},
    )
    def post(self, request):
        serializer = TemplateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            template = template_save(
                name=data["name"],
                task_type=data["task_type"],
                user_text=data["user_text"],
                system_text=data.get("system_text", ""),
                description=data.get("description", ""),
                response_schema=data.get("response_schema"),
                created_by=request.user,
            )
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(TemplateSerializer(template).data, status=status.HTTP_201_CREATED)
