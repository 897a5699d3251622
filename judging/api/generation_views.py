"""The generation API: generators (keys write-only) and generation runs (create, list, progress, cancel, resume)."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from annotation.models import Study

from ..models import GenerationRun, GeneratorConfig
from ..services.generation import (
    generation_run_cancel,
    generation_run_create,
    generation_run_resume,
    generator_create,
    generator_update,
)
from .bases import (
    BaseConfigDetail,
    BaseConfigListCreate,
    BaseRunCancel,
    BaseRunDetail,
    BaseRunList,
    BaseRunResume,
    invalid,
)
from .serializers import (
    GenerationRunCreateSerializer,
    GenerationRunSerializer,
    GeneratorSerializer,
)
from .views import STUDY_ID

STUDY = OpenApiParameter("study", STUDY_ID, description="Only generation runs on this study.")


@extend_schema_view(
    get=extend_schema(
        operation_id="generators_list", summary="Your generators", responses={200: GeneratorSerializer(many=True)}
    ),
    post=extend_schema(
        operation_id="generators_create",
        summary="Create a generator (api_key is write-only)",
        request=GeneratorSerializer,
        responses={201: GeneratorSerializer},
    ),
)
class GeneratorListCreate(BaseConfigListCreate):
    config_model = GeneratorConfig
    config_serializer = GeneratorSerializer

    def create(self, *, owner, data, api_key, settings) -> GeneratorConfig:
        return generator_create(owner=owner, name=data["name"], api_key=api_key, **settings)


@extend_schema_view(
    get=extend_schema(
        operation_id="generators_retrieve", summary="One of your generators", responses={200: GeneratorSerializer}
    ),
    patch=extend_schema(
        operation_id="generators_update",
        summary='Change a generator; api_key replaces the stored key, "" removes it',
        request=GeneratorSerializer,
        responses={200: GeneratorSerializer},
    ),
)
class GeneratorDetail(BaseConfigDetail):
    config_model = GeneratorConfig
    config_serializer = GeneratorSerializer

    def update(self, config: GeneratorConfig, *, api_key, changes) -> None:
        generator_update(generator=config, api_key=api_key, **changes)


class _GenerationRuns:
    run_serializer = GenerationRunSerializer

    def runs(self, request):
        return self.owned(GenerationRun).prefetch_related("generators")


@extend_schema_view(
    get=extend_schema(
        operation_id="generation_runs_list",
        summary="Generation runs on your studies",
        parameters=[STUDY],
        responses={200: GenerationRunSerializer(many=True)},
    )
)
class GenerationRunListCreate(_GenerationRuns, BaseRunList):
    @extend_schema(
        operation_id="generation_runs_create",
        summary="Queue a generation run: each generator writes one candidate per prompt of the study",
        request=GenerationRunCreateSerializer,
        responses={201: GenerationRunSerializer},
    )
    def post(self, request):
        serializer = GenerationRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        study = self.get_owned(Study, pk=data["study"])
        wanted = set(data["generators"])
        generators = list(self.owned(GeneratorConfig).filter(pk__in=wanted))
        if len(generators) != len(wanted):
            return Response({"detail": "No such generator."}, status=status.HTTP_404_NOT_FOUND)
        try:
            run = generation_run_create(study=study, generators=generators, created_by=request.user)
        except ValidationError as exc:
            raise invalid(exc) from None
        return self.with_progress(run, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(
        operation_id="generation_runs_retrieve",
        summary="A generation run with its progress",
        responses={200: GenerationRunSerializer},
    )
)
class GenerationRunDetail(_GenerationRuns, BaseRunDetail):
    pass


@extend_schema_view(
    post=extend_schema(
        operation_id="generation_runs_cancel",
        summary="Cancel a generation run (calls in flight are kept)",
        request=None,
        responses={200: GenerationRunSerializer},
    )
)
class GenerationRunCancel(_GenerationRuns, BaseRunCancel):
    cancel = staticmethod(generation_run_cancel)


@extend_schema_view(
    post=extend_schema(
        operation_id="generation_runs_resume",
        summary="Queue a generation run again; written candidates are kept",
        request=None,
        responses={200: GenerationRunSerializer},
    )
)
class GenerationRunResume(_GenerationRuns, BaseRunResume):
    resume = staticmethod(generation_run_resume)
