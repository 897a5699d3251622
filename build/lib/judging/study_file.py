"""The ``judges:`` section of a study file (see docs/judging.md).

Each entry is either ``{baseline: random|constant|length}`` or an LLM judge's
settings (``name``, ``base_url``, ``model``, ``api_key_env``, ``temperature``,
``max_tokens``, ``trials``, ``both_orders``, ``templates`` ...). ``templates`` maps a task
type to a template name (its newest version, among the owner's own templates and then the
built-ins) or to ``{name, version}``; the judge is pinned to that version. A literal
``api_key`` is refused: files get shared, so keys come from the environment.
Loading is idempotent: a judge with the same name is updated, not duplicated.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.access import owned_by

from .models import JudgeConfig
from .services.judges import BASELINE_NAMES, SETTINGS, judge_create, judge_update

EXPORTED = sorted(SETTINGS - {"seed"})


def judge_entry_problems(entries: Any) -> list[str]:
    """Problems with a ``judges:`` list, phrased for the file's author; empty when it is fine."""
    if entries in (None, []):
        return []
    if not isinstance(entries, list):
        return ["judges: must be a list."]
    problems = []
    for n, entry in enumerate(entries, start=1):
        where = f"judges[{n}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a mapping of settings.")
            continue
        if "api_key" in entry:
            problems.append(f"{where}: do not put an API key in a study file; name its variable in api_key_env.")
        unknown = set(entry) - SETTINGS - {"name", "baseline", "api_key"}
        if unknown:
            problems.append(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}.")
        baseline = entry.get("baseline", "")
        if baseline and baseline not in BASELINE_NAMES:
            problems.append(f"{where}: baseline must be random, constant or length.")
        if not baseline and not (entry.get("base_url") and entry.get("model")):
            problems.append(f"{where}: an LLM judge needs base_url and model (or give baseline:).")
    return problems


def judges_load(*, owner: AbstractBaseUser, entries: list[dict[str, Any]]) -> list[JudgeConfig]:
    """Create or update the owner's judges from a study file's entries, all or nothing."""
    problems = judge_entry_problems(entries)
    if problems:
        raise ValidationError(problems)
    judges = []
    with transaction.atomic():
        for n, entry in enumerate(entries or [], start=1):
            try:
                judges.append(_judge_load(owner=owner, entry=entry))
            except ValidationError as exc:
                raise ValidationError([f"judges[{n}]: {message}" for message in exc.messages]) from None
    return judges


def _judge_load(*, owner: AbstractBaseUser, entry: dict[str, Any]) -> JudgeConfig:
    # Template names resolve among the owner's own templates, then the built-ins (judging.services.templates).
    settings = {k: v for k, v in entry.items() if k in SETTINGS}
    baseline = entry.get("baseline", "")
    name = entry.get("name") or BASELINE_NAMES.get(baseline, "") or f"{entry['model']} judge"
    existing = owned_by(JudgeConfig, user=owner).filter(name=name).first()
    if existing is None:
        return judge_create(owner=owner, name=name, baseline=baseline, **settings)
    if existing.baseline != baseline:
        raise ValidationError(f"A judge named {name!r} exists with another kind; rename one of them.")
    return judge_update(judge=existing, **settings)


def judges_dump(judges: list[JudgeConfig]) -> list[dict[str, Any]]:
    """Judges as study-file entries: settings only, never a key (a stored key is simply left out)."""
    entries = []
    for judge in judges:
        if judge.is_baseline:
            entries.append({"name": judge.name, "baseline": judge.baseline})
            continue
        entry: dict[str, Any] = {"name": judge.name}
        entry.update({k: getattr(judge, k) for k in EXPORTED if getattr(judge, k) not in ("", None, {})})
        entries.append(entry)
    return entries


def study_judges(study) -> list[dict[str, Any]]:
    """The judges that have run on a study, as study-file entries."""
    # Only the study owner's judges: an operator may have run someone else's judge on it from manage.py.
    judges = owned_by(JudgeConfig, user=study.owner).filter(runs__study=study).distinct().order_by("name")
    return judges_dump(list(judges.prefetch_related("template_pins__template")))


def register() -> None:
    """Make ``judges:`` a section of annotation's study files."""
    from annotation.study_files import StudyFileSection, register_section

    register_section(
        StudyFileSection(
            key="judges",
            check=judge_entry_problems,
            load=lambda *, owner, value, study: judges_load(owner=owner, entries=value),
            dump=study_judges,
        )
    )
