"""Prompt templates: the built-in ones in the database, new versions on every edit."""

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max

from annotation.task_types import TASK_TYPES

from ..models import PromptTemplate
from ..prompts import BUILTIN_TEMPLATES, builtin, check_template
from ..task_types import JUDGING_TYPES


def _create_builtin(name: str) -> PromptTemplate | None:
    spec = builtin(name)
    if spec is None:
        return None
    try:
        with transaction.atomic():
            return PromptTemplate.objects.create(
                name=spec.name,
                version=1,
                task_type=spec.task_type,
                description=spec.description,
                system_text=spec.system,
                user_text=spec.user,
                response_schema=spec.response_schema,
                builtin=True,
            )
    except IntegrityError:
        return PromptTemplate.objects.get(name=spec.name, version=1)


def ensure_builtin_templates() -> None:
    existing = set(PromptTemplate.objects.values_list("name", flat=True))
    for spec in BUILTIN_TEMPLATES:
        if spec.name not in existing:
            _create_builtin(spec.name)


def latest_template(name: str) -> PromptTemplate | None:
    found = PromptTemplate.objects.filter(name=name).order_by("-version").first()
    return found or _create_builtin(name)


def template_for(*, task_type: str, names: dict[str, Any] | None = None) -> PromptTemplate:
    """The newest version of the template a judge uses for this task type."""
    default = JUDGING_TYPES[task_type].default_template if task_type in JUDGING_TYPES else ""
    name = (names or {}).get(task_type) or default
    if not name:
        raise ValidationError(f"No prompt template for task type {task_type!r}.")
    template = latest_template(name)
    if template is None:
        raise ValidationError(f"There is no prompt template named {name!r}.")
    if template.task_type != task_type:
        raise ValidationError(f"The template {name!r} is for {template.task_type} items, not {task_type}.")
    return template


def template_save(
    *,
    name: str,
    task_type: str,
    user_text: str,
    system_text: str = "",
    description: str = "",
    response_schema: dict[str, Any] | None = None,
    created_by=None,
) -> PromptTemplate:
    """Save a template as a new version of ``name`` (version 1 when the name is new).

    Runs already made keep the version they were created with.
    """
    if task_type not in TASK_TYPES:
        raise ValidationError(f"Unknown task type {task_type!r}.")
    check_template(system=system_text, user=user_text, task_type=task_type)
    if response_schema is not None and (
        not isinstance(response_schema, dict) or response_schema.get("type") != "object"
    ):
        raise ValidationError("The response schema must be a JSON schema of an object.")
    latest_template(name)  # a built-in name gets its version 1 first, so an edit is version 2
    with transaction.atomic():
        versions = PromptTemplate.objects.select_for_update().filter(name=name)
        current = versions.aggregate(v=Max("version"))["v"] or 0
        if current and versions.filter(version=current).values_list("task_type", flat=True).get() != task_type:
            raise ValidationError(f"The template {name!r} is for another task type; choose a new name.")
        template = PromptTemplate(
            name=name,
            version=current + 1,
            task_type=task_type,
            description=description,
            system_text=system_text,
            user_text=user_text,
            response_schema=response_schema,
            created_by=created_by,
        )
        template.full_clean()
        template.save()
    return template
