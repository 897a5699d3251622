"""Prompt templates: the shared built-ins, each researcher's own, a new version on every save.

A researcher reads their own templates and the shared ones (the built-ins, and the few
ownerless ones from before templates had owners); they change only their own. Saving under
a shared template's name makes the researcher's own copy, numbered after the shared
versions. A name resolves for a researcher in their own templates first, then the shared
ones; another researcher's templates never come into it. Access goes through
``annotation.access`` like every other owned object.
"""

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet

from annotation.access import owned_by, readable_by
from annotation.protocols import protocol_judge_template
from annotation.task_types import TASK_TYPES

from ..models import JudgeConfig, PromptTemplate
from ..prompts import BUILTIN_TEMPLATES, builtin, check_template
from ..task_types import default_template_name


def _shared() -> QuerySet[PromptTemplate]:
    # Shared = no owner. Ordered so a built-in comes before an ownerless leftover of the same name.
    return PromptTemplate.objects.filter(owner__isnull=True).order_by("name", "-builtin", "-version")


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
        return PromptTemplate.objects.get(owner__isnull=True, name=spec.name, version=1)


def ensure_builtin_templates() -> None:
    existing = set(_shared().values_list("name", flat=True))
    for spec in BUILTIN_TEMPLATES:
        if spec.name not in existing:
            _create_builtin(spec.name)


def _shared_latest(name: str) -> PromptTemplate | None:
    return _shared().filter(name=name).first() or _create_builtin(name)


def template_resolve(*, owner: AbstractBaseUser | None, name: str, version: int | None = None) -> PromptTemplate | None:
    """The template ``name`` as ``owner`` sees it: their own newest version (or ``version``), else the shared one."""
    own = owned_by(PromptTemplate, user=owner).filter(name=name).order_by("-version")
    if version is not None:
        _shared_latest(name)  # a built-in is written to the database when first asked for
        return own.filter(version=version).first() or _shared().filter(name=name, version=version).first()
    return own.first() or _shared_latest(name)


def builtin_default(task_type: str, *, protocol: str = "") -> PromptTemplate:
    """The built-in template a judge uses for a task type it has no template pinned for.

    A study made from a protocol's template (``protocol``, ``Study.protocol``) gets the prompt that asks
    that protocol's question, when the protocol names one; otherwise the task type's default.
    """
    name = protocol_judge_template(protocol) or default_template_name(task_type)
    template = _shared_latest(name) if name else None
    if template is None:
        raise ValidationError(f"No prompt template for task type {task_type!r}.")
    return template


def judge_template(*, judge: JudgeConfig, task_type: str, protocol: str = "") -> PromptTemplate:
    """The template a run of ``judge`` over a study of ``task_type`` uses: its pin, else the built-in default.

    ``protocol`` is the study's protocol template key; its default prompt asks that protocol's question.
    """
    pin = judge.template_pins.select_related("template").filter(task_type=task_type).first()
    template = pin.template if pin else builtin_default(task_type, protocol=protocol)
    if template.task_type != task_type:
        raise ValidationError(f"The template {template.name!r} is for {template.task_type} items, not {task_type}.")
    return template


def template_pick(*, owner: AbstractBaseUser, task_type: str, spec: Any) -> PromptTemplate:
    """The template version a judge of ``owner`` gets pinned to for ``task_type``.

    ``spec`` is a template row (from a form's choices), a name (its newest version, as the
    owner sees it) or ``{"name": ..., "version": ...}`` (that version). Another researcher's
    template is reported exactly like a name that does not exist.
    """
    if isinstance(spec, PromptTemplate):
        if not readable_by(PromptTemplate, user=owner).filter(pk=spec.pk).exists():
            raise ValidationError("There is no such prompt template.")
        template: PromptTemplate | None = spec
        name, version = spec.name, spec.version
    else:
        name, version = _parse_spec(spec)
        template = template_resolve(owner=owner, name=name, version=version)
    if template is None:
        at = f" version {version}" if version is not None else ""
        raise ValidationError(f"There is no prompt template named {name!r}{at}.")
    if template.task_type != task_type:
        raise ValidationError(f"The template {name!r} is for {template.task_type} items, not {task_type}.")
    return template


# What a saved template's name and version can be (a SlugField of 80, a PostgreSQL integer); anything else is
# refused before it reaches a query, where a NUL or a 30-digit number would be a server error.
NAME = re.compile(r"[-a-zA-Z0-9_]{1,80}")
MAX_VERSION = 2**31 - 1


def _parse_spec(spec: Any) -> tuple[str, int | None]:
    name, version = (spec, None) if isinstance(spec, str) else (None, None)
    if isinstance(spec, dict) and set(spec) <= {"name", "version"}:
        name, version = spec.get("name"), spec.get("version")
    ok_version = version is None or (
        isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= MAX_VERSION
    )
    if not (isinstance(name, str) and NAME.fullmatch(name) and ok_version):
        raise ValidationError(
            "Templates must map task types to a template name, or to {name, version} for one version of it."
        )
    return name, version


def template_choices(*, user: AbstractBaseUser | None) -> tuple[list[PromptTemplate], list[PromptTemplate]]:
    """The newest version of each of the user's own templates, and of each shared one, by name."""
    ensure_builtin_templates()
    own: dict[str, PromptTemplate] = {}
    for template in owned_by(PromptTemplate, user=user).order_by("name", "-version"):
        own.setdefault(template.name, template)
    shared: dict[str, PromptTemplate] = {}
    for template in _shared():
        shared.setdefault(template.name, template)
    return list(own.values()), list(shared.values())


def template_versions(*, user: AbstractBaseUser, name: str) -> list[PromptTemplate]:
    """Every version of ``name`` the user may read, newest first: their own, then the shared ones."""
    _shared_latest(name)
    versions = readable_by(PromptTemplate, user=user).filter(name=name)
    return sorted(versions, key=lambda t: (t.shared, -t.version))


def template_save(
    *,
    owner: AbstractBaseUser,
    name: str,
    task_type: str,
    user_text: str,
    system_text: str = "",
    description: str = "",
    response_schema: dict[str, Any] | None = None,
) -> PromptTemplate:
    """Save a template as the next version of ``owner``'s ``name``.

    Under a shared (built-in) name this makes the owner's own copy, numbered after the shared
    versions; the shared template itself never changes. Judges keep the version they are
    pinned to, and runs the version they started with.
    """
    if task_type not in TASK_TYPES:
        raise ValidationError(f"Unknown task type {task_type!r}.")
    check_template(system=system_text, user=user_text, task_type=task_type)
    if response_schema is not None and (
        not isinstance(response_schema, dict) or response_schema.get("type") != "object"
    ):
        raise ValidationError("The response schema must be a JSON schema of an object.")
    shared = _shared_latest(name)
    try:
        with transaction.atomic():
            own = list(owned_by(PromptTemplate, user=owner).select_for_update().filter(name=name).order_by("-version"))
            latest = own[0] if own else shared
            if latest is not None and latest.task_type != task_type:
                raise ValidationError(f"The template {name!r} is for another task type; choose a new name.")
            shared_max = _shared().filter(name=name).aggregate(v=Max("version"))["v"] or 0
            template = PromptTemplate(
                owner=owner,
                name=name,
                version=max(own[0].version if own else 0, shared_max) + 1,
                task_type=task_type,
                description=description,
                system_text=system_text,
                user_text=user_text,
                response_schema=response_schema,
                created_by=owner,
            )
            template.full_clean()
            template.save()
    except IntegrityError:
        # Two saves of the same name at once: the unique (owner, name, version) constraint let one through.
        raise ValidationError(f"The template {name!r} was saved at the same moment elsewhere; save again.") from None
    return template
