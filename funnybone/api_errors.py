# SPDX-License-Identifier: GPL-3.0-or-later
"""The one shape of every error the API answers with, and the one place that makes it.

An error body is a JSON object:

* ``detail`` (always): one sentence a person can read, the first problem found
  ("name: This field is required.", "Not found.", "JSON parse error - …");
* then one key per input field with a problem, holding a list of messages about it
  (``{"config": ["points: …"]}``); a problem inside a nested value keeps the top-level
  field as its key and names the rest of the place in the message (``"[2].text: …"``);
* ``errors``: problems that belong to no one field (a row of an uploaded file, a state
  the study is in).

``exception_handler`` (REST_FRAMEWORK's EXCEPTION_HANDLER) puts every error DRF raises into
that shape; ``error_response`` is for a view that answers an error itself; ``not_found`` answers
Django's own 404 under /api/ (an address no URL pattern matches) in the same shape.
``ERROR_SCHEMA`` is the shape's OpenAPI schema; ``funnybone.schema.common_error_answers``
declares it as every v1 operation's 4xx answers, so no view declares an error body of its own.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

ERROR_COMPONENT = "Error"
#: Problems that belong to no one field. DRF's own name for them (non_field_errors) is mapped here.
GENERAL = "errors"

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "Every error of the API. `detail` says what is wrong in one sentence; every other key is an "
        "input field (or `errors`, for problems that belong to no one field) with its messages."
    ),
    "properties": {"detail": {"type": "string", "description": "What is wrong, in one sentence."}},
    "required": ["detail"],
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}


def _messages(value: Any, where: str = "") -> Iterator[str]:
    """Every message in a DRF error value, with the place inside the field before it."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            place = f"{where}[{key}]" if isinstance(key, int) or str(key).isdigit() else f"{where}.{key}"
            yield from _messages(inner, place)
    elif isinstance(value, list | tuple):
        if all(not isinstance(inner, Mapping | list | tuple) for inner in value):
            for inner in value:
                yield f"{where.lstrip('.')}: {inner}" if where else str(inner)
        else:
            for index, inner in enumerate(value):
                yield from _messages(inner, f"{where}[{index}]")
    elif value not in (None, ""):
        yield f"{where.lstrip('.')}: {value}" if where else str(value)


def error_body(data: Any) -> dict[str, Any]:
    """Any error value (DRF's detail: a string, a list, a dict of fields) in the API's one shape."""
    body: dict[str, Any] = {}
    if isinstance(data, Mapping):
        for key, value in data.items():
            if key == "detail" and isinstance(value, str):
                continue
            name = GENERAL if key in ("detail", api_settings.NON_FIELD_ERRORS_KEY) else str(key)
            body.setdefault(name, []).extend(_messages(value))
        detail = data.get("detail") if isinstance(data.get("detail"), str) else None
    else:
        messages = list(_messages(data))
        if len(messages) > 1:
            body[GENERAL] = messages
        detail = messages[0] if len(messages) == 1 else None
    body = {key: messages for key, messages in body.items() if messages}
    if detail is None:
        detail = _summary(body)
    return {"detail": detail, **body}


def _summary(body: dict[str, list[str]]) -> str:
    if not body:
        return "Invalid input."
    field, messages = next(iter(body.items()))
    first = messages[0] if field == GENERAL else f"{field}: {messages[0]}"
    more = sum(len(m) for m in body.values()) - 1
    return first if more == 0 else f"{first} (and {more} more problem{'s' if more > 1 else ''})"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = error_body(response.data)
    return response


def error_response(status: int, data: Any) -> Response:
    """An error a view answers itself (a 404 with its reason, a 409), in the one shape."""
    return Response(error_body(data), status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 (no URL pattern matched): JSON in the API's shape under /api/, the page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
