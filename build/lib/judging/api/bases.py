"""What the judge and generator endpoints share: an owner's endpoint settings, and runs over a study.

The concrete views say which model, serializer and service they use, and carry
their own schema (operation ids, summaries) with ``extend_schema_view``. The
classes here have comments, not docstrings: drf-spectacular would publish a
docstring as every inheriting operation's description.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import OwnedObjectsMixin
from annotation.api.permissions import IsResearcher

from .serializers import EndpointSerializer, RunFilterSerializer


def invalid(exc: ValidationError) -> ApiValidationError:
    """A service's ValidationError as the API's 400."""
    return ApiValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})


class _Configs(OwnedObjectsMixin, APIView):
    permission_classes = [IsResearcher]
    config_model: type[Model]
    config_serializer: type[EndpointSerializer]
    config_prefetch: tuple[str, ...] = ()

    def configs(self, request) -> QuerySet:
        return self.owned(self.config_model).prefetch_related(*self.config_prefetch)


# GET the researcher's own configs; POST a new one (api_key is write-only).
class BaseConfigListCreate(_Configs, ABC):
    @abstractmethod
    def create(self, *, owner, data: dict[str, Any], api_key: str | None, settings: dict[str, Any]) -> Model:
        """Create the config through its service."""

    def get(self, request):
        return Response(self.config_serializer(self.configs(request), many=True).data)

    def post(self, request):
        serializer = self.config_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            config = self.create(
                owner=request.user,
                data=serializer.validated_data,
                api_key=serializer.validated_data.get("api_key") or None,
                settings=serializer.settings(),
            )
        except ValidationError as exc:
            raise invalid(exc) from None
        return Response(self.config_serializer(config).data, status=status.HTTP_201_CREATED)


# GET or PATCH one of the researcher's configs; another's is a 404.
class BaseConfigDetail(_Configs, ABC):
    @abstractmethod
    def update(self, config: Model, *, api_key: str | None, changes: dict[str, Any]) -> None:
        """Apply the changes through the config's service."""

    def config(self, request, pk) -> Model:
        return self.get_owned(self.configs(request), pk=pk)

    def get(self, request, pk):
        return Response(self.config_serializer(self.config(request, pk)).data)

    def patch(self, request, pk):
        config = self.config(request, pk)
        serializer = self.config_serializer(config, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = serializer.settings()
        if "name" in serializer.validated_data:
            changes["name"] = serializer.validated_data["name"]
        try:
            self.update(config, api_key=serializer.validated_data.get("api_key"), changes=changes)
        except ValidationError as exc:
            raise invalid(exc) from None
        return Response(self.config_serializer(config).data)


# Runs on the researcher's own studies; another's run is a 404.
class _Runs(OwnedObjectsMixin, APIView, ABC):
    permission_classes = [IsResearcher]
    run_serializer: type[serializers.ModelSerializer]

    @abstractmethod
    def runs(self, request) -> QuerySet:
        """The runs this researcher may see: ``self.owned(...)`` of the run model."""

    def run(self, request, pk) -> Model:
        return self.get_owned(self.runs(request), pk=pk)

    def with_progress(self, run: Model, **kwargs: Any) -> Response:
        return Response(self.run_serializer(run, context={"with_progress": True}).data, **kwargs)


# GET the runs (the latest 500), optionally of one study. The POST that creates one is each kind's own.
class BaseRunList(_Runs):
    def get(self, request):
        filters = RunFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = self.runs(request)
        if filters.validated_data.get("study"):
            runs = runs.filter(study_id=filters.validated_data["study"])
        return Response(self.run_serializer(runs[:500], many=True).data)


class BaseRunDetail(_Runs):
    def get(self, request, pk):
        return self.with_progress(self.run(request, pk))


class BaseRunCancel(_Runs):
    cancel: Callable[..., bool]  # a staticmethod: the run service

    def post(self, request, pk):
        run = self.run(request, pk)
        self.cancel(run=run)
        return self.with_progress(run)


class BaseRunResume(_Runs):
    resume: Callable[..., Model]  # a staticmethod: the run service

    def post(self, request, pk):
        return self.with_progress(self.resume(run=self.run(request, pk)))
