"""drf-spectacular hooks for the published OpenAPI schema (SPECTACULAR_SETTINGS in settings.py)."""

from .api_errors import ERROR_COMPONENT, ERROR_SCHEMA
from .deprecation import CURRENT_PREFIX

# The errors every operation can answer with, besides the ones its view describes: the status, when.
COMMON_ERRORS = {
    "400": "Invalid input (a field, a query parameter, a NUL character anywhere in the request); nothing was changed.",
    "401": "No valid token or session.",
    "403": "Not a researcher's account, or a session write without the CSRF token.",
}
NOT_FOUND = "No such object among yours (an id in the path, or one the body names)."
UNSUPPORTED_BODY = "The body's Content-Type is not one the operation reads."


def v1_schema_only(endpoints: list[tuple]) -> list[tuple]:
    """Preprocessing: the published schema describes v1 alone.

    The deprecated addresses serve the same operations (same operation ids), so
    listing both would publish every operation twice. A URL configuration without
    v1 (a test's) keeps its endpoints as they are.
    """
    current = [endpoint for endpoint in endpoints if endpoint[0].startswith(CURRENT_PREFIX)]
    return current or endpoints


def common_error_answers(result: dict, generator, request, public: bool) -> dict:  # noqa: ARG001 - hook signature
    """Postprocessing: every v1 operation's 4xx answers, all in the one error shape of ``funnybone.api_errors``.

    An operation's view may describe when it answers a 4xx of its own (409 for a judge with
    judgments); whatever it declared, the body is the error shape, declared here and nowhere else.
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas[ERROR_COMPONENT] = ERROR_SCHEMA
    ref = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}}}
    for path, operations in result.get("paths", {}).items():
        if not path.startswith(CURRENT_PREFIX) or path == f"{CURRENT_PREFIX}schema/":
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            answers = dict(COMMON_ERRORS)
            if "{" in path or "requestBody" in operation:
                answers["404"] = NOT_FOUND
            if "requestBody" in operation:
                answers["415"] = UNSUPPORTED_BODY
            for code, description in answers.items():
                responses.setdefault(code, {"description": description})
            for code, response in responses.items():
                if code.startswith("4"):
                    response["content"] = ref
    return result
