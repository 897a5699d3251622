"""Creating and configuring judges. Each judge is a Rater of kind llm or baseline."""

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import Rater
from annotation.study_changes import rater_studies, study_inputs_changed
from annotation.task_types import TASK_TYPES

from ..keys import is_grant, set_api_key, settle_key_source
from ..models import EndpointSettings, JudgeConfig, JudgeTemplate, PromptTemplate
from ..outbound import base_url_problem
from ..selectors import judge_versions
from .templates import template_pick

# A judge's settings, in the order forms and the API show them.
JUDGE_SETTINGS = (
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "structured_output",
    "sees_images",
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
# What shapes a judge's answers: changing one of them on a judge that has run makes a new version.
# ("templates", the pinned prompt versions, counts too.) The rest (timeouts, retries, concurrency,
# rate limit, prices, the key) only say how hard to push the endpoint and are changed in place.
ANSWER_SETTINGS = (
    "base_url",
    "model",
    "temperature",
    "max_tokens",
    "structured_output",
    "sees_images",
    "seed",
    "trials",
    "both_orders",
)
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


def _answer_settings(judge: JudgeConfig, picks: dict[str, PromptTemplate] | None) -> dict[str, Any]:
    """What produced the judge's answers: the answer settings and the pinned template versions."""
    pins = (
        {pin.task_type: pin.template_id for pin in judge.template_pins.all()}
        if picks is None
        else {task_type: template.pk for task_type, template in picks.items()}
    )
    return {**{key: getattr(judge, key) for key in ANSWER_SETTINGS}, "templates": pins}


def judge_has_answered(judge: JudgeConfig) -> bool:
    """Whether the judge has run or judged: from then on what produced its answers is fixed."""
    return judge.runs.exists() or judge.rater.judgments.exists()


def judge_update(
    *, judge: JudgeConfig, api_key: str | None = None, key_env_by_operator: bool = False, **changes: Any
) -> JudgeConfig:
    """Change a judge's settings. ``api_key=None`` keeps the stored key; "" removes it.

    When the judge has run and a change touches what produces its answers (``ANSWER_SETTINGS`` or the
    templates), the judge becomes a new version: the same object is returned as a new row (new pk,
    ``version`` + 1, its own rater), and the old row keeps its settings, runs and judgments. Only a
    judge's newest version can be changed. ``key_env_by_operator`` as in ``judge_create``."""
    if not judge.is_current:
        raise ValidationError(
            f"This is version {judge.version} of {judge.name!r}, kept as it was; change the newest version."
        )
    name = changes.pop("name", None)
    old_name = judge.name
    if name is not None:
        name = name.strip()
        if not name:
            raise ValidationError("A judge needs a name.")
        if JudgeConfig.objects.filter(owner=judge.owner, name=name).exclude(name=old_name).exists():
            raise ValidationError(f"You already have a judge named {name!r}.")
    before = _answer_settings(judge, None)
    picks = _apply(judge, changes)
    set_api_key(judge, api_key)
    settle_key_source(judge, by_operator=key_env_by_operator)
    new_version = _answer_settings(judge, picks) != before and judge_has_answered(judge)
    with transaction.atomic():
        if name is not None and name != old_name:
            _rename(judge, old_name=old_name, name=name)
        if new_version:
            _new_version(judge, picks)
        else:
            judge.full_clean()
            judge.save()
            _pin(judge, picks)
    return judge


def _rename(judge: JudgeConfig, *, old_name: str, name: str) -> None:
    """Rename every version of the judge (and their raters): versions share their name."""
    versions = list(JudgeConfig.objects.filter(owner_id=judge.owner_id, name=old_name))
    JudgeConfig.objects.filter(pk__in=[v.pk for v in versions]).update(name=name)
    for version in versions:
        version.name = name
        Rater.objects.filter(pk=version.rater_id).update(name=str(version))
    # Stored reports name the judge: those of the studies it judged are out of date.
    study_inputs_changed({pk for version in versions for pk in rater_studies(version.rater_id)})
    judge.name = name


def _new_version(judge: JudgeConfig, picks: dict[str, PromptTemplate] | None) -> None:
    """Turn the in-memory ``judge`` (the old row with its changes) into the next version's row.

    The old row is left as it is in the database, marked superseded; the new one copies its pins
    unless new ones were chosen, and answers as a rater of its own."""
    old_pk = judge.pk
    old_pins = {pin.task_type: pin.template for pin in JudgeTemplate.objects.filter(judge_id=old_pk)}
    JudgeConfig.objects.filter(pk=old_pk).update(superseded_at=timezone.now())
    latest = judge_versions(judge).values_list("version", flat=True).first() or judge.version
    judge.pk = judge.id = None
    judge._state.adding = True
    judge.version = latest + 1
    judge.previous_version_id = old_pk
    judge.superseded_at = None
    judge.rater = Rater.objects.create(kind=judge.rater.kind, name=str(judge))
    judge.full_clean()
    judge.save()
    getattr(judge, "_prefetched_objects_cache", {}).pop("template_pins", None)
    _pin(judge, old_pins if picks is None else picks)


def _same_pins(judge: JudgeConfig, templates: dict[str, Any]) -> bool:
    """Whether ``templates`` (as the command line gives them) would pin what the judge already has."""
    try:
        picks = _template_picks(judge.owner, templates) or {}
    except ValidationError:
        return False
    pinned = {pin.task_type: pin.template_id for pin in judge.template_pins.all()}
    return all(pinned.get(task_type) == template.pk for task_type, template in picks.items())


def ensure_baseline_judges(*, owner: AbstractBaseUser) -> list[JudgeConfig]:
    """The owner's three baseline judges, created the first time."""
    judges = []
    for kind, name in BASELINE_NAMES.items():
        judge = JudgeConfig.objects.current().filter(owner=owner, baseline=kind).order_by("pk").first()
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
        existing = JudgeConfig.objects.current().filter(owner=owner, baseline=baseline).order_by("pk").first()
        if existing:
            return existing, False
        return judge_create(owner=owner, name=BASELINE_NAMES[baseline], baseline=baseline), True
    named = settings.get("name", "")
    # A name picks the judge exactly: two prompts on one model are two judges, compared side by side.
    # Another endpoint or model under a judge's name is its next version, like any change of what answers.
    current = JudgeConfig.objects.current().filter(owner=owner)
    found = current.filter(name=named) if named else JudgeConfig.objects.none()
    if named and found.exclude(baseline="").exists():
        raise ValidationError(f"{named!r} is the name of a baseline judge; choose another name.")
    existing = (
        found.first() if named else current.filter(baseline="", base_url=base_url, model=model).order_by("pk").first()
    )
    if existing:
        settings = {**settings, "base_url": base_url, "model": model}
        settings.pop("name", None)
        changes = {k: v for k, v in settings.items() if getattr(existing, k) != v}
        if "templates" in changes and _same_pins(existing, changes["templates"]):
            del changes["templates"]
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
