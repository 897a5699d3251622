"""Study templates: the settings a published protocol fixes, and how its data files are read.

A template names one study of a protocol (JEST has one; Chumor has two: the
explanation labels and the explanation preference). Creating a study from a
template gives it the protocol's task type, scale, labels, quotas and
attention-check policy; ``Study.protocol`` keeps the template's key so the
ratings app can lay out the protocol's report, and ``analyses`` is the report's
preset (e.g. how many raters to select). Each protocol module registers its
templates here; nothing else needs to know about them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError

from ..models import Study
from ..services.studies import ItemSpec, study_create

if TYPE_CHECKING:
    from ..services.imported_judgments import ImportedJudgment
    from .tables import Table


@dataclass
class ImportPlan:
    """What a protocol file holds: items, and answers already given (possibly none)."""

    items: list[ItemSpec] = field(default_factory=list)
    judgments: list[ImportedJudgment] = field(default_factory=list)


# An importer reads a whole table and returns the plan, or raises ImportErrors
# (row-level messages) / FileProblem (the file as a whole).
Importer = Callable[["Table", Study], ImportPlan]


@dataclass(frozen=True)
class StudyTemplate:
    key: str
    protocol: str  # the protocol family: humorrank, jest, oogiri, chumor, semeval2020t7
    title: str
    description: str
    task_type: str
    config: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    analyses: dict[str, Any] = field(default_factory=dict)
    importer: Importer | None = None
    # The columns the importer reads, for the import page and the docs.
    columns: str = ""
    # The built-in judge prompt (judging/prompts/builtin.py) that asks this study's question; a judge
    # without a pinned template uses it on the study. Empty: the task type's default asks it already.
    judge_template: str = ""


TEMPLATES: dict[str, StudyTemplate] = {}


def register_template(template: StudyTemplate) -> StudyTemplate:
    if template.key in TEMPLATES and TEMPLATES[template.key] is not template:
        raise ValueError(f"Study template {template.key!r} is registered twice.")
    TEMPLATES[template.key] = template
    return template


def get_template(key: str) -> StudyTemplate:
    try:
        return TEMPLATES[key]
    except KeyError:
        known = ", ".join(sorted(TEMPLATES))
        raise ValidationError(f"Unknown study template {key!r}; the templates are: {known}.") from None


def template_of(study: Study) -> StudyTemplate | None:
    return TEMPLATES.get(study.protocol)


def protocol_judge_template(protocol: str) -> str:
    """The built-in judge prompt a study made from template ``protocol`` asks by default ("" for the type's own)."""
    found = TEMPLATES.get(protocol)
    return found.judge_template if found else ""


def study_from_template(
    *,
    owner: AbstractBaseUser,
    template: str,
    name: str,
    actor: AbstractBaseUser | None = None,
    config: dict[str, Any] | None = None,
    **settings: Any,
) -> Study:
    """A new draft study with the template's settings; ``settings`` override them one by one."""
    chosen = get_template(template)
    merged_config = {**chosen.config, **(config or {})}
    return study_create(
        owner=owner,
        name=name,
        task_type=chosen.task_type,
        config=merged_config,
        actor=actor,
        **{"description": chosen.description, **chosen.settings, **settings, "protocol": chosen.key},
    )
