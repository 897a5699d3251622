"""The judging API: judges (CRUD, keys write-only), runs (create, list, progress, cancel, resume), templates."""

from django.core.exceptions import ValidationError
from django.db.models import ProtectedError
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import readable_by
from annotation.allocation import UNIFORM
from annotation.api.permissions import IsResearcher
from annotation.models import Study

from ..models import JudgeConfig, JudgeRun, PromptTemplate
from ..services.judges import judge_create, judge_update
from ..services.runs import run_cancel, run_create, run_resume, run_retry_failed
from ..services.templates import ensure_builtin_templates, template_save
from .bases import (
    BaseConfigDetail,
    BaseConfigListCreate,
    BaseRunCancel,
    BaseRunDetail,
    BaseRunList,
    BaseRunResume,
    invalid,
)
from .serializers import JudgeSerializer, RunCreateSerializer, RunSerializer, TemplateSerializer

CONFLICT = OpenApiResponse(description="The judge has judgments (or a tournament) and stays.")
# The filter as RunFilterSerializer reads it: a study id, 1 to the largest 64-bit id.
STUDY_ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
STUDY = OpenApiParameter("study", STUDY_ID, description="Only runs on this study.")
NAME = OpenApiParameter("name", str, description="Only versions of this template.")


@extend_schema_view(
    get=extend_schema(operation_id="judges_list", summary="Your judges", responses={200: JudgeSerializer(many=True)}),
    post=extend_schema(
        operation_id="judges_create",
        summary="Create a judge (api_key is write-only)",
        request=JudgeSerializer,
        responses={201: JudgeSerializer},
    ),
)
class JudgeListCreate(BaseConfigListCreate):
    config_model = JudgeConfig
    config_serializer = JudgeSerializer
    config_prefetch = ("template_pins__template",)

    def configs(self, request):
        # Each judge's current version; an older one stays readable at judges/<id>/.
        return super().configs(request).current()

    def create(self, *, owner, data, api_key, settings) -> JudgeConfig:
        return judge_create(
            owner=owner, name=data.get("name", ""), baseline=data.get("baseline", ""), api_key=api_key, **settings
        )


@extend_schema_view(
    get=extend_schema(operation_id="judges_retrieve", summary="One of your judges", responses={200: JudgeSerializer}),
    patch=extend_schema(
        operation_id="judges_update",
        summary='Change a judge; api_key replaces the stored key, "" removes it. A change of what produces '
        "the answers of a judge that has run makes a new version: the response is that version (a new id)",
        request=JudgeSerializer,
        responses={200: JudgeSerializer},
    ),
)
class JudgeDetail(BaseConfigDetail):
    config_model = JudgeConfig
    config_serializer = JudgeSerializer
    config_prefetch = ("template_pins__template",)

    def update(self, config: JudgeConfig, *, api_key, changes) -> None:
        judge_update(judge=config, api_key=api_key, **changes)

    @extend_schema(
        operation_id="judges_destroy",
        summary="Delete a judge that has no judgments",
        responses={204: None, 409: CONFLICT},
    )
    def delete(self, request, pk):
        judge = self.config(request, pk)
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


class _JudgeRuns:
    run_serializer = RunSerializer

    def runs(self, request):
        return self.owned(JudgeRun).select_related("judge", "template")


@extend_schema_view(
    get=extend_schema(
        operation_id="judge_runs_list",
        summary="Runs on your studies",
        parameters=[STUDY],
        responses={200: RunSerializer(many=True)},
    )
)
class RunListCreate(_JudgeRuns, BaseRunList):
    @extend_schema(
        operation_id="judge_runs_create",
        summary="Queue a judge run over a study",
        request=RunCreateSerializer,
        responses={201: RunSerializer},
    )
    def post(self, request):
        serializer = RunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        study = self.get_owned(Study, pk=data["study"])
        judge = self.get_owned(JudgeConfig, pk=data["judge"])
        try:
            run = run_create(
                study=study,
                judge=judge,
                trials=data.get("trials"),
                both_orders=data.get("both_orders"),
                created_by=request.user,
                allocation_policy=data.get("allocation_policy") or UNIFORM,
            )
        except ValidationError as exc:
            raise invalid(exc) from None
        return self.with_progress(run, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(
        operation_id="judge_runs_retrieve", summary="A run with its progress", responses={200: RunSerializer}
    )
)
class RunDetail(_JudgeRuns, BaseRunDetail):
    pass


@extend_schema_view(
    post=extend_schema(
        operation_id="judge_runs_cancel",
        summary="Cancel a run (calls in flight are recorded)",
        request=None,
        responses={200: RunSerializer},
    )
)
class RunCancel(_JudgeRuns, BaseRunCancel):
    cancel = staticmethod(run_cancel)


@extend_schema_view(
    post=extend_schema(
        operation_id="judge_runs_resume",
        summary="Queue a run again; judged units are kept",
        request=None,
        responses={200: RunSerializer},
    )
)
class RunResume(_JudgeRuns, BaseRunResume):
    resume = staticmethod(run_resume)


@extend_schema_view(
    post=extend_schema(
        operation_id="judge_runs_retry_failed",
        summary="Queue a new run of the same judge version over this run's failed and unparseable units",
        request=None,
        responses={201: RunSerializer},
    )
)
class RunRetryFailed(_JudgeRuns, BaseRunResume):
    def post(self, request, pk):
        try:
            retry = run_retry_failed(run=self.run(request, pk), created_by=request.user)
        except ValidationError as exc:
            raise invalid(exc) from None
        return self.with_progress(retry, status=status.HTTP_201_CREATED)


class TemplateListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="prompt_templates_list",
        summary="Your prompt templates and the built-in ones, every version",
        parameters=[NAME],
        responses={200: TemplateSerializer(many=True)},
    )
    def get(self, request):
        ensure_builtin_templates()
        templates = readable_by(PromptTemplate, user=request.user)
        if request.query_params.get("name"):
            templates = templates.filter(name=request.query_params["name"])
        return Response(TemplateSerializer(templates, many=True).data)

    @extend_schema(
        operation_id="prompt_templates_create",
        summary="Save a new version of one of your templates (of a built-in's name: your own copy)",
        request=TemplateSerializer,
        responses={201: TemplateSerializer},
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
                owner=request.user,
            )
        except ValidationError as exc:
            raise invalid(exc) from None
        return Response(TemplateSerializer(template).data, status=status.HTTP_201_CREATED)
