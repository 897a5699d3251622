"""Creating and configuring judges. Each judge is a Rater of kind llm or baseline."""

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Rater
from annotation.task_types import TASK_TYPES

from ..keys import is_grant, set_api_key, settle_key_source
from ..models import EndpointSettings, JudgeConfig, JudgeTemplate, PromptTemplate
from ..outbound import base_url_problem
from .templates import template_pick

# A judge's settings, in the order forms and the API show them.
JUDGE_SETTINGS = (
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "structured_output",
    "timeout_seconds",
    "max_retries",
    "backoff_seconds",
    "concurrency",
    "rate_limit_per_minute",
    "input_cost_per_million",
    "output_cost_per_million",
    "templates",
    "trials",
    "both_orders",
    "seed",
)
SETTINGS = frozenset(JUDGE_SETTINGS)
BASELINE_NAMES = {
    JudgeConfig.Baseline.RANDOM: "baseline: random",
    JudgeConfig.Baseline.CONSTANT: "baseline: constant",
    JudgeConfig.Baseline.LENGTH: "baseline: length (shorter is funnier)",
}


def _check_base_url(url: str) -> None:
    if url:
        problem = base_url_problem(url)
        if problem:
            raise ValidationError({"base_url": problem})


def _template_picks(owner: AbstractBaseUser, templates: Any) -> dict[str, PromptTemplate] | None:
    """The template versions to pin, per task type; None when the judge's templates are not being set.

    An empty value for a task type means its built-in default (nothing pinned).
    """
    if templates is None:
        return None
    if not isinstance(templates, dict):
        raise ValidationError("Templates must map task types to template names.")
    picks = {}
    for task_type, spec in templates.items():
        if task_type not in TASK_TYPES:
            raise ValidationError(f"Templates: {task_type!r} is not a task type.")
        if spec not in (None, ""):
            picks[task_type] = template_pick(owner=owner, task_type=task_type, spec=spec)
    return picks


def _pin(judge: JudgeConfig, picks: dict[str, PromptTemplate] | None) -> None:
    """Make the judge's pins exactly ``picks`` (None leaves them as they are)."""
    if picks is None:
        return
    judge.template_pins.exclude(task_type__in=list(picks)).delete()
    for task_type, template in picks.items():
        JudgeTemplate.objects.update_or_create(judge=judge, task_type=task_type, defaults={"template": template})
    # A prefetched list of pins (the API's) would otherwise still show the old ones.
    getattr(judge, "_prefetched_objects_cache", {}).pop("template_pins", None)


def set_endpoint_settings(config: EndpointSettings, changes: dict[str, Any], *, known, kind: str) -> None:
    """Set a judge's or generator's settings; naming the key's environment variable drops a stored key.

    An operator's grant stays until ``settle_key_source`` sees whether it still holds."""
    unknown = set(changes) - set(known)
    if unknown:
        raise ValidationError(f"Unknown {kind} setting(s): {', '.join(sorted(unknown))}.")
    for key, value in changes.items():
        setattr(config, key, value)
    if config.api_key_env and not is_grant(config.api_key_encrypted):
        config.api_key_encrypted = ""


def _apply(judge: JudgeConfig, changes: dict[str, Any]) -> dict[str, PromptTemplate] | None:
    """Set the changed settings on the judge; the templates to pin once it is saved."""
    changes = dict(changes)
    picks = _template_picks(judge.owner, changes.pop("templates", None))
    set_endpoint_settings(judge, changes, known=SETTINGS, kind="judge")
    _check_base_url(judge.base_url)
    if not judge.baseline and not (judge.base_url and judge.model):
        raise ValidationError("An LLM judge needs a base URL and a model name.")
    return picks


def judge_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    baseline: str = "",
    api_key: str | None = None,
    key_env_by_operator: bool = False,
    **settings: Any,
) -> JudgeConfig:
    """A new judge and its rater. ``api_key`` is stored encrypted and never shown again.

    ``api_key_env`` must name a variable declared for judge keys, unless ``key_env_by_operator`` (a
    manage.py command, never a web request) vouches for it: see ``judging.keys``."""
    if baseline not in JudgeConfig.Baseline.values:
        raise ValidationError(f"Unknown baseline {baseline!r}; choose random, constant or length.")
    name = (name or "").strip() or BASELINE_NAMES.get(baseline, "")
    if not name:
        raise ValidationError("A judge needs a name.")
    if JudgeConfig.objects.filter(owner=owner, name=name).exists():
        raise ValidationError(f"You already have a judge named {name!r}.")
    judge = JudgeConfig(owner=owner, name=name, baseline=baseline)
    picks = _apply(judge, settings)
    set_api_key(judge, api_key)
    settle_key_source(judge, by_operator=key_env_by_operator)
    with transaction.atomic():
        judge.rater = Rater.objects.create(kind=Rater.Kind.BASELINE if baseline else Rater.Kind.LLM, name=name)
        judge.full_clean()
        judge.save()
        _pin(judge, picks)
    return judge


def judge_update(
    *, judge: JudgeConfig, api_key: str | None = None, key_env_by_operator: bool = False, **changes: Any
) -> JudgeConfig:
    """Change a judge's settings. ``api_key=None`` keeps the stored key; "" removes it.

    ``key_env_by_operator`` as in ``judge_create``."""
    name = changes.pop("name", None)
    if name is not None:
        name = name.strip()
        if not name:
            raise ValidationError("A judge needs a name.")
        if JudgeConfig.objects.filter(owner=judge.owner, name=name).exclude(pk=judge.pk).exists():
            raise ValidationError(f"You already have a judge named {name!r}.")
        judge.name = name
    picks = _apply(judge, changes)
    set_api_key(judge, api_key)
    settle_key_source(judge, by_operator=key_env_by_operator)
    with transaction.atomic():
        judge.full_clean()
        judge.save()
        _pin(judge, picks)
        if name is not None:
            Rater.objects.filter(pk=judge.rater_id).update(name=name)
    return judge


def ensure_baseline_judges(*, owner: AbstractBaseUser) -> list[JudgeConfig]:
    """The owner's three baseline judges, created the first time."""
    judges = []
    for kind, name in BASELINE_NAMES.items():
        judge = JudgeConfig.objects.filter(owner=owner, baseline=kind).order_by("pk").first()
        judges.append(judge or judge_create(owner=owner, name=name, baseline=kind, concurrency=1))
    return judges


def judge_find_or_create(
    *,
    owner: AbstractBaseUser,
    baseline: str = "",
    base_url: str = "",
    model: str = "",
    key_env_by_operator: bool = False,
    **settings: Any,
) -> tuple[JudgeConfig, bool]:
    """The owner's judge with this endpoint and model (or this baseline), made if missing; settings updated.

    ``key_env_by_operator`` as in ``judge_create``."""
    if baseline:
        existing = JudgeConfig.objects.filter(owner=owner, baseline=baseline).order_by("pk").first()
        if existing:
            return existing, False
        return judge_create(owner=owner, name=BASELINE_NAMES[baseline], baseline=baseline), True
    named = settings.get("name", "")
    # A name picks the judge exactly: two prompts on one model are two judges, compared side by side.
    found = JudgeConfig.objects.filter(owner=owner, name=named) if named else JudgeConfig.objects.none()
    if named and found.filter(baseline="").exclude(base_url=base_url, model=model).exists():
        raise ValidationError(f"The judge {named!r} uses another endpoint or model; choose another name.")
    if named and found.exclude(baseline="").exists():
        raise ValidationError(f"{named!r} is the name of a baseline judge; choose another name.")
    existing = (
        found.first()
        if named
        else JudgeConfig.objects.filter(owner=owner, baseline="", base_url=base_url, model=model).order_by("pk").first()
    )
    if existing:
        changes = {k: v for k, v in settings.items() if getattr(existing, k) != v}
        if key_env_by_operator and settings.get("api_key_env"):
            changes["api_key_env"] = settings["api_key_env"]  # the operator vouches for it now
        if not changes:
            return existing, False
        return judge_update(judge=existing, key_env_by_operator=key_env_by_operator, **changes), False
    base = settings.pop("name", "") or f"{model} @ {urlsplit(base_url).netloc}"
    name, n = base, 2
    while JudgeConfig.objects.filter(owner=owner, name=name).exists():
        name, n = f"{base} ({n})", n + 1
    return judge_create(
        owner=owner, name=name, base_url=base_url, model=model, key_env_by_operator=key_env_by_operator, **settings
    ), True
