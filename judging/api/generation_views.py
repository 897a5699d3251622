"""The generation API: generators (keys write-only) and generation runs (create, list, progress, cancel, resume)."""

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.permissions import IsResearcher
from annotation.models import Study

from ..models import GenerationRun, GeneratorConfig
from ..services.generation import (
    generation_run_cancel,
    generation_run_create,
    generation_run_resume,
    generator_create,
    generator_update,
)
from .serializers import (
    GenerationRunCreateSerializer,
    GenerationRunSerializer,
    GeneratorSerializer,
    RunFilterSerializer,
)
from .views import ERRORS, _invalid

STUDY = OpenApiParameter("study", int, description="Only generation runs on this study.")


class GeneratorListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="generators_list", summary="Your generators", responses={200: GeneratorSerializer(many=True)}
    )
    def get(self, request):
        return Response(GeneratorSerializer(GeneratorConfig.objects.filter(owner=request.user), many=True).data)

    @extend_schema(
        operation_id="generators_create",
        summary="Create a generator (api_key is write-only)",
        request=GeneratorSerializer,
        responses={201: GeneratorSerializer, 400: ERRORS},
    )
    def post(self, request):
        serializer = GeneratorSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            generator = generator_create(
                owner=request.user, name=data["name"], api_key=data.get("api_key") or None, **serializer.settings()
            )
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(GeneratorSerializer(generator).data, status=status.HTTP_201_CREATED)


class GeneratorDetail(APIView):
    permission_classes = [IsResearcher]

    def _generator(self, request, pk) -> GeneratorConfig:
        return get_object_or_404(GeneratorConfig, pk=pk, owner=request.user)

    @extend_schema(
        operation_id="generators_retrieve", summary="One of your generators", responses={200: GeneratorSerializer}
    )
    def get(self, request, pk):
        return Response(GeneratorSerializer(self._generator(request, pk)).data)

    @extend_schema(
        operation_id="generators_update",
        summary='Change a generator; api_key replaces the stored key, "" removes it',
        request=GeneratorSerializer,
        responses={200: GeneratorSerializer, 400: ERRORS},
    )
    def patch(self, request, pk):
        generator = self._generator(request, pk)
        serializer = GeneratorSerializer(generator, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = serializer.settings()
        if "name" in serializer.validated_data:
            changes["name"] = serializer.validated_data["name"]
        try:
            generator_update(generator=generator, api_key=serializer.validated_data.get("api_key"), **changes)
        except ValidationError as exc:
            raise _invalid(exc) from None
        return Response(GeneratorSerializer(generator).data)


def _generation(request, pk) -> GenerationRun:
    return get_object_or_404(GenerationRun, pk=pk, study__owner=request.user)


def _with_progress(run: GenerationRun, **kwargs) -> Response:
    return Response(GenerationRunSerializer(run, context={"with_progress": True}).data, **kwargs)


class GenerationRunListCreate(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="generation_runs_list",
        summary="Generation runs on your studies",
        parameters=[STUDY],
        responses={200: GenerationRunSerializer(many=True)},
    )
    def get(self, request):
        filters = RunFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = GenerationRun.objects.filter(study__owner=request.user).prefetch_related("generators")
        if filters.validated_data.get("study"):
            runs = runs.filter(study_id=filters.validated_data["study"])
        return Response(GenerationRunSerializer(runs[:500], many=True).data)

    @extend_schema(
        operation_id="generation_runs_create",
        summary="Queue a generation run: each generator writes one candidate per prompt of the study",
        request=GenerationRunCreateSerializer,
        responses={201: GenerationRunSerializer, 400: ERRORS},
    )
    def post(self, request):
        serializer = GenerationRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        study = get_object_or_404(Study, pk=data["study"], owner=request.user)
        wanted = set(data["generators"])
        generators = list(GeneratorConfig.objects.filter(owner=request.user, pk__in=wanted))
        if len(generators) != len(wanted):
            return Response({"detail": "No such generator."}, status=status.HTTP_404_NOT_FOUND)
        try:
            run = generation_run_create(study=study, generators=generators, created_by=request.user)
        except ValidationError as exc:
            raise _invalid(exc) from None
        return _with_progress(run, status=status.HTTP_201_CREATED)


class GenerationRunDetail(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="generation_runs_retrieve",
        summary="A generation run with its progress",
        responses={200: GenerationRunSerializer},
    )
    def get(self, request, pk):
        return _with_progress(_generation(request, pk))


class GenerationRunCancel(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="generation_runs_cancel",
        summary="Cancel a generation run (calls in flight are kept)",
        request=None,
        responses={200: GenerationRunSerializer},
    )
    def post(self, request, pk):
        run = _generation(request, pk)
        generation_run_cancel(run=run)
        return _with_progress(run)


class GenerationRunResume(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        operation_id="generation_runs_resume",
        summary="Queue a generation run again; written candidates are kept",
        request=None,
        responses={200: GenerationRunSerializer},
    )
    def post(self, request, pk):
        return _with_progress(generation_run_resume(run=_generation(request, pk)))
