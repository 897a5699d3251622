"""drf-spectacular hooks for the published OpenAPI schema (SPECTACULAR_SETTINGS in settings.py)."""

from .deprecation import CURRENT_PREFIX

DETAIL = "ErrorDetail"


def v1_schema_only(endpoints: list[tuple]) -> list[tuple]:
    """Preprocessing: the published schema describes v1 alone.

    The deprecated addresses serve the same operations (same operation ids), so
    listing both would publish every operation twice. A URL configuration without
    v1 (a test's) keeps its endpoints as they are.
    """
    current = [endpoint for endpoint in endpoints if endpoint[0].startswith(CURRENT_PREFIX)]
    return current or endpoints


def common_error_answers(result: dict, generator, request, public: bool) -> dict:  # noqa: ARG001 - hook signature
    """Postprocessing: the answers every operation can give besides its own, typed like the rest.

    401 without valid credentials, 403 for an annotator's account (or a session write
    without the CSRF token), 404 for an object that is not yours; all ``{"detail": ...}``.
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        DETAIL,
        {
            "type": "object",
            "properties": {"detail": {"type": "string"}},
            "required": ["detail"],
        },
    )
    ref = {"application/json": {"schema": {"$ref": f"#/components/schemas/{DETAIL}"}}}
    answers = {
        "401": "No valid token or session.",
        "403": "Not a researcher's account, or a session write without the CSRF token.",
    }
    for path, operations in result.get("paths", {}).items():
        if not path.startswith(CURRENT_PREFIX) or path == f"{CURRENT_PREFIX}schema/":
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code, description in answers.items():
                responses.setdefault(code, {"description": description, "content": ref})
            if "{" in path:
                responses.setdefault("404", {"description": "No such object among yours.", "content": ref})
    return result
