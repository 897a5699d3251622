"""The API before v1 keeps answering for one release, marked deprecated.

Every answer from a pre-v1 API address (``/api/…`` outside ``/api/v1/``,
``/analysis/api/…``, ``/exports/api/…``) carries ``Deprecation`` (RFC 9745: the
date it was deprecated) and, where the operation has a v1 address, a ``Link``
to it with ``rel="successor-version"`` (RFC 8594), so a client can log the
move and follow it. The old addresses are not redirected: a redirect would turn
a POST into a GET in some clients and drop the token header in others.
"""

from collections.abc import Callable
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

from annotation.access import owned_by
from annotation.models import Study

DEPRECATED_SINCE = datetime(2026, 11, 24, tzinfo=UTC)
DEPRECATED_PREFIXES = ("/api/", "/analysis/api/", "/exports/api/")
CURRENT_PREFIX = "/api/v1/"

# The old operation's URL name → its v1 URL name. Old URLs that take a study's slug get the
# v1 URL of the same study by id (see _successor).
SUCCESSORS = {
    "api:schema": "v1:schema",
    "api:study_list": "v1:study_list",
    "api:study_create": "v1:study_list",
    "api:study_detail": "v1:study_detail",
    "api:study_update": "v1:study_detail",
    "api:study_open": "v1:study_open",
    "api:study_close": "v1:study_close",
    "api:study_progress": "v1:study_progress",
    "api:item_list": "v1:item_list",
    "api:item_import": "v1:import_list",
    "api:import_detail": "v1:import_detail",
    "api:judgment_list": "v1:judgment_list",
    "judging-api-judges": "v1:judge_list",
    "judging-api-judge": "v1:judge_detail",
    "judging-api-runs": "v1:run_list",
    "judging-api-run": "v1:run_detail",
    "judging-api-run-cancel": "v1:run_cancel",
    "judging-api-run-resume": "v1:run_resume",
    "judging-api-run-retry-failed": "v1:run_retry_failed",
    "judging-api-templates": "v1:template_list",
    "judging-api-generators": "v1:generator_list",
    "judging-api-generator": "v1:generator_detail",
    "judging-api-generations": "v1:generation_run_list",
    "judging-api-generation": "v1:generation_run_detail",
    "judging-api-generation-cancel": "v1:generation_run_cancel",
    "judging-api-generation-resume": "v1:generation_run_resume",
    "ratings:api_agreement": "v1:report_agreement",
    "exports:api_create": "v1:export_list",
    "exports:api_status": "v1:export_detail",
}


def is_deprecated_path(path: str) -> bool:
    return path.startswith(DEPRECATED_PREFIXES) and not path.startswith(CURRENT_PREFIX)


def _successor(request: HttpRequest) -> str | None:
    match = request.resolver_match
    name = SUCCESSORS.get(match.view_name) if match else None
    if name is None:
        return None
    kwargs = dict(match.kwargs)
    if "slug" in kwargs:
        # Only the owner learns the study's id; anyone else is already answered 404.
        pk = owned_by(Study, user=request.user).filter(slug=kwargs.pop("slug")).values_list("pk", flat=True).first()
        if pk is None:
            return None
        kwargs["pk"] = pk
    try:
        return request.build_absolute_uri(reverse(name, kwargs=kwargs))
    except NoReverseMatch:
        return None


class DeprecatedApiMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if is_deprecated_path(request.path_info):
            response["Deprecation"] = f"@{int(DEPRECATED_SINCE.timestamp())}"
            successor = _successor(request)
            if successor:
                response["Link"] = f'<{successor}>; rel="successor-version"'
        return response
