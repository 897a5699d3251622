"""Creating and configuring studies and their items."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils.text import slugify

from ..audit import audit_record, diff
from ..models import AuditEntry, Candidate, Item, Study
from ..study_settings import STUDY_SETTINGS, study_settings_problems
from ..task_types import get_task_type

STUDY_FIELDS = frozenset(STUDY_SETTINGS)


def _check_settings(values: dict[str, Any]) -> None:
    """Refuse bad settings with the messages every other way in gives (annotation/study_settings.py)."""
    problems = study_settings_problems(values)
    if problems:
        raise ValidationError(problems)


@dataclass
class CandidateSpec:
    key: str
    text: str
    context: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass
class MediaSpec:
    """A media file an item file names: a path inside the uploaded archive, with its alt text and place."""

    source: str
    alt: str = ""
    role: str = "item"  # MediaAttachment.Role: item, prompt or candidate
    candidate_key: str | None = None
    position: int = 0


@dataclass
class ItemSpec:
    """One item as an importer read it; ``row`` names where it came from for messages."""

    external_id: str
    prompt: str = ""
    text: str = ""
    candidates: list[CandidateSpec] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    gold: Any = None
    is_attention_check: bool = False
    row: str = ""
    media: list[MediaSpec] = field(default_factory=list)


class ImportErrors(ValidationError):
    """Row-level problems; nothing was written."""

    def __init__(self, errors: list[str]):
        self.errors_by_row = errors
        super().__init__(errors)


def _unique_slug(name: str) -> str:
    base = slugify(name)[:60] or "study"
    slug, n = base, 2
    while Study.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def study_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    task_type: str,
    config: dict[str, Any] | None = None,
    actor: AbstractBaseUser | None = None,
    **options: Any,
) -> Study:
    unknown = set(options) - STUDY_FIELDS
    if unknown:
        raise ValidationError(f"Unknown study setting(s): {', '.join(sorted(unknown))}.")
    if not name.strip():
        raise ValidationError("A study needs a name.")
    _check_settings(options)
    kind = get_task_type(task_type)
    study = Study(owner=owner, name=name.strip(), task_type=task_type, config=kind.config(config), **options)
    study.slug = _unique_slug(name)
    study.full_clean()
    with transaction.atomic():
        study.save()
        created = {"name": study.name, "task_type": study.task_type, **{k: getattr(study, k) for k in options}}
        audit_record(study=study, action=AuditEntry.Action.CREATED, actor=actor, changes=diff({}, created))
    return study


def study_update(*, study: Study, actor: AbstractBaseUser | None = None, **changes: Any) -> Study:
    unknown = set(changes) - STUDY_FIELDS - {"name", "config"}
    if unknown:
        raise ValidationError(f"Unknown study setting(s): {', '.join(sorted(unknown))}.")
    if "config" in changes and study.judgments.exists():
        raise ValidationError("The task configuration cannot change once judgments exist.")
    _check_settings(changes)
    # Read from the database: a ModelForm has already put the new values on ``study``.
    before = Study.objects.filter(pk=study.pk).values(*changes).first() or {}
    for key, value in changes.items():
        setattr(study, key, value)
    if "config" in changes:
        study.config = get_task_type(study.task_type).config(changes["config"])
    study.full_clean()
    with transaction.atomic():
        # Only the fields named: a stored report is out of date when one it reads changes (annotation.study_changes).
        study.save(update_fields=[*changes, "updated_at"])
        changed = diff(before, {key: getattr(study, key) for key in changes})
        if changed:
            audit_record(study=study, action=AuditEntry.Action.UPDATED, actor=actor, changes=changed)
    return study


STATE_ACTIONS = {
    Study.State.OPEN: AuditEntry.Action.OPENED,
    Study.State.CLOSED: AuditEntry.Action.CLOSED,
    Study.State.DRAFT: AuditEntry.Action.REDRAFTED,
}


def study_set_state(*, study: Study, state: str, actor: AbstractBaseUser | None = None) -> Study:
    if state not in Study.State.values:
        raise ValidationError(f"Unknown state {state!r}.")
    if state == Study.State.OPEN and not study.items.filter(is_attention_check=False).exists():
        raise ValidationError("Add items before opening the study.")
    old = study.state
    study.state = state
    with transaction.atomic():
        study.save(update_fields=["state", "updated_at"])
        if old != state:
            audit_record(study=study, action=STATE_ACTIONS[state], actor=actor, changes={"state": [old, state]})
    return study


# Column limits of Item.external_id and Candidate.key: longer values fail on PostgreSQL.
MAX_ITEM_ID_LENGTH = 200
MAX_CANDIDATE_KEY_LENGTH = 100


def item_problems(*, study: Study, spec: ItemSpec, seen: dict[str, str]) -> list[str]:
    """What is wrong with one item, each message naming where it came from.

    ``seen`` maps the ids met so far to where they were met ("" for items
    already in the study); the spec's id is added to it. The spec's gold is
    replaced by its cleaned value.
    """
    where = spec.row or spec.external_id
    problems: list[str] = []
    if not spec.external_id:
        problems.append(f"{where}: missing item id.")
    elif len(spec.external_id) > MAX_ITEM_ID_LENGTH:
        problems.append(f"{where}: the item id is longer than {MAX_ITEM_ID_LENGTH} characters.")
    elif spec.external_id in seen:
        first = seen[spec.external_id]
        if first:
            problems.append(f"{where}: duplicate item id {spec.external_id!r}; {first} already uses it.")
        else:
            problems.append(f"{where}: the item id {spec.external_id!r} is already in this study.")
    else:
        seen[spec.external_id] = spec.row or spec.external_id
    for candidate in spec.candidates:
        if len(candidate.key) > MAX_CANDIDATE_KEY_LENGTH:
            problems.append(
                f"{where}: the candidate key {candidate.key[:20]!r}... is longer than {MAX_CANDIDATE_KEY_LENGTH} characters."
            )
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys = [c.key for c in spec.candidates]
    if not (spec.text or spec.prompt or spec.candidates):
        problems.append(f"{where}: the item has no text.")
    try:
        task_type.check_candidates(keys)
    except ValidationError as exc:
        problems.extend(f"{where}: {m}" for m in exc.messages)
    try:
        task_type.check_item_text(spec.text)
    except ValidationError as exc:
        problems.extend(f"{where}: {m}" for m in exc.messages)
    if spec.is_attention_check and spec.gold is None:
        problems.append(f"{where}: an attention check needs a gold answer.")
    if spec.gold is not None:
        try:
            spec.gold = task_type.validate(spec.gold, candidate_keys=keys, config=config, item_text=spec.text)
        except ValidationError as exc:
            problems.extend(f"{where}: gold answer: {m}" for m in exc.messages)
    return problems


# After an import this big, PostgreSQL's statistics of the item table are refreshed at once.
ANALYZE_AFTER_ITEMS = 1000


def _refresh_item_statistics() -> None:
    """Let the planner know about the new items now rather than at autovacuum's next round.

    With statistics from before a big import, the planner takes the new study
    for a few rows and reads all of its items for queries that need a handful
    (the next item, the progress bar): seconds on a study of 100,000 items.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Item._meta.db_table}")


def media_needs_archive(specs: list[ItemSpec]) -> list[str]:
    """Items naming media where no archive carries the files: one message per item."""
    return [
        f"{spec.row or spec.external_id}: names the media file {spec.media[0].source!r}; "
        "upload a .zip holding the item file and its media."
        for spec in specs
        if spec.media
    ]


def items_create(
    *,
    study: Study,
    items: Iterable[ItemSpec],
    replace: bool = False,
    actor: AbstractBaseUser | None = None,
    with_media: bool = False,
) -> int:
    """Add items atomically: every row is checked first, and one bad row writes nothing.

    Items that name media files are refused unless the caller attaches them
    (``with_media``: the archive import, annotation.importers.archive).
    """
    specs = list(items)
    existing = set() if replace else set(study.items.values_list("external_id", flat=True))
    seen = dict.fromkeys(existing, "")
    problems: list[str] = [] if with_media else media_needs_archive(specs)
    for spec in specs:
        problems.extend(item_problems(study=study, spec=spec, seen=seen))
    if problems:
        raise ImportErrors(problems)
    if not specs:
        raise ImportErrors(["The file holds no items."])
    with transaction.atomic():
        count_before = study.items.count()
        if replace:
            if study.judgments.exists():
                raise ImportErrors(["Items cannot be replaced once judgments exist."])
            study.items.all().delete()
        start = (
            (study.items.order_by("-position").values_list("position", flat=True).first() or 0) + 1 if existing else 0
        )
        created = Item.objects.bulk_create(
            Item(
                study=study,
                external_id=spec.external_id,
                position=start + i,
                prompt=spec.prompt,
                text=spec.text,
                metadata=spec.metadata,
                gold=spec.gold,
                is_attention_check=spec.is_attention_check,
            )
            for i, spec in enumerate(specs)
        )
        Candidate.objects.bulk_create(
            Candidate(item=item, key=c.key, position=j, text=c.text, context=c.context, provenance=c.provenance)
            for item, spec in zip(created, specs, strict=True)
            for j, c in enumerate(spec.candidates)
        )
        if len(specs) >= ANALYZE_AFTER_ITEMS:
            transaction.on_commit(_refresh_item_statistics)
        audit_record(
            study=study,
            action=AuditEntry.Action.ITEMS_REPLACED if replace else AuditEntry.Action.ITEMS_IMPORTED,
            actor=actor,
            changes={"items": [count_before, study.items.count()]},
        )
    return len(specs)
