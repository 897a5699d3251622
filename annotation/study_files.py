"""Study files: a whole study — settings, task configuration and items — in one YAML or JSON file.

``read_study_file`` parses a file into a dict; other apps own extra top-level
keys through ``register_section`` (the judging app's ``judges``); ``load_study_file`` validates everything first and
then creates (or, with ``replace``, updates) the study and its items in one
transaction. ``study_file_data`` writes a study back in the same shape. The
format is documented in docs/study-files.md.
"""

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from .importers.cells import json_ready
from .importers.files import check_size, collect
from .importers.items import FileProblem, item_from_object, suggest
from .importers.readers import detect_format, read_rows
from .json_limits import NUL, DataTooComplex, LimitPassed, has_nul, load_json, load_yaml, unstorable
from .languages import language_problem
from .media.refs import media_records
from .models import Candidate, MediaAttachment, Study
from .services.studies import ItemSpec, items_create, study_create, study_set_state, study_update
from .study_settings import SETTINGS, STUDY_SETTINGS
from .task_types import TaskType, get_task_type

STUDY_KEYS = ("name", "task_type", "config", *STUDY_SETTINGS, "state", "items", "items_file")
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}
# Config settings every task type accepts besides its own: the items' language
# (for the page's lang attribute and fonts), the question shown above them, and the
# slug of the contest study a HumorRank study links to (protocols.humorrank.SOURCE_LINK,
# set by the protocol and by tournaments; without it their downloads did not load back).
COMMON_CONFIG_KEYS = ("language", "question", "source_study")


def config_problems(kind: TaskType, config: dict[str, Any]) -> list[str]:
    """Settings a task type does not know (a typo would otherwise be silently ignored), and a language it cannot use."""
    known = [*kind.default_config, *(k for k in COMMON_CONFIG_KEYS if k not in kind.default_config)]
    problems = [
        f"unknown setting {key!r}{suggest(str(key), known)} for {kind.name}; known settings: {', '.join(known)}."
        for key in config
        if key not in known
    ]
    if language := language_problem(config.get("language")):
        problems.append(f"language: {language}")
    return problems


@dataclass(frozen=True)
class StudyFileSection:
    """A top-level key another app owns (the judging app's ``judges``).

    Apps register their sections in ``AppConfig.ready`` so this module never
    imports them: ``check(value)`` returns problems, ``load(owner=, value=,
    study=)`` writes inside the study's transaction, ``dump(study)`` returns
    the value to write back (or None to leave the key out). ``schema``, if
    given, is the section's JSON Schema for editors (annotation/study_file_schema.py).
    """

    key: str
    check: Callable[[Any], list[str]]
    load: Callable[..., Any]
    dump: Callable[[Study], Any]
    schema: dict[str, Any] | None = None


SECTIONS: dict[str, StudyFileSection] = {}


def register_section(section: StudyFileSection) -> None:
    SECTIONS[section.key] = section


def allowed_keys() -> tuple[str, ...]:
    return (*STUDY_KEYS, *SECTIONS)


class StudyFileError(ValidationError):
    """Everything wrong with a study file; nothing was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(problems)


@dataclass
class StudyPlan:
    """A checked study file, ready to be written."""

    name: str
    task_type: str
    config: dict[str, Any]
    options: dict[str, Any]
    state: str | None
    items: list[ItemSpec] | None
    sections: dict[str, Any] = field(default_factory=dict)


def read_study_file(path: str | Path) -> dict[str, Any]:
    """The study file parsed into a dict, unchecked (YAML or JSON, chosen by the file's suffix)."""
    path = Path(path)
    study_file_kind(path.name)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise StudyFileError([f"{path}: no such file."]) from None
    except UnicodeDecodeError as exc:
        raise StudyFileError(
            [f"{path.name}: byte offset {exc.start} is not valid UTF-8; save the file as UTF-8."]
        ) from None
    return parse_study_text(text, name=path.name)


def study_file_kind(name: str) -> str:
    """The kind of study file ("yaml" or "json") its name's suffix says; StudyFileError for any other."""
    kind = SUFFIXES.get(Path(name).suffix.lower())
    if kind is None:
        raise StudyFileError([f"{name}: a study file ends in .yaml, .yml or .json."])
    return kind


def parse_study_text(text: str, *, name: str) -> dict[str, Any]:
    """A study file's text (named ``name``, whose suffix says YAML or JSON) parsed into a dict, unchecked."""
    kind = study_file_kind(name)
    try:
        # NUL characters are reported field by field by the checks below.
        load = load_json if kind == "json" else load_yaml
        data = load(text, where=name, nul=False)
    except json.JSONDecodeError as exc:
        raise StudyFileError([f"{name}, line {exc.lineno}: not valid JSON ({exc.msg})."]) from None
    except DataTooComplex as exc:
        raise StudyFileError([str(exc)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, LimitPassed):  # valid YAML, just too big or too deep
            raise StudyFileError([f"{name}{where}: {problem}"]) from None
        raise StudyFileError([f"{name}{where}: not valid YAML ({problem})."]) from None
    if not isinstance(data, dict):
        raise StudyFileError([f"{name}: the file must hold one study, written as name: value pairs."])
    return data


def _check_settings(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The file's study settings, checked by their declarations (annotation/study_settings.py)."""
    options: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.name not in data:
            continue
        value = data[setting.name]
        if value is None and setting.kind in ("text", "url") and not setting.nullable:
            continue  # YAML reads `key:` with nothing after it as null: the key is left as it is
        found = setting.problems(value)
        if found:
            problems.extend(f"{setting.name}: {message}" for message in found)
        else:
            options[setting.name] = setting.clean(value)
    return options


def _task_type(data: dict[str, Any], problems: list[str]) -> tuple[TaskType | None, dict[str, Any]]:
    name = data.get("task_type")
    if not isinstance(name, str) or not name:
        problems.append("task_type: missing; name the kind of judgment (e.g. ordinal, pairwise, binary).")
        return None, {}
    try:
        kind = get_task_type(name)
    except ValidationError as exc:
        problems.extend(f"task_type: {m}" for m in exc.messages)
        return None, {}
    config = data.get("config") or {}
    if not isinstance(config, dict):
        problems.append("config: must be name: value pairs (the task type's settings).")
        return kind, {}
    unknown = config_problems(kind, config)
    if unknown:
        problems.extend(f"config: {m}" for m in unknown)
        return kind, {}
    try:
        return kind, kind.config(json_ready(config, field="config"))
    except (ValidationError, ValueError) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
        problems.extend(f"config: {m}" for m in messages)
        return kind, {}


def _items(data: dict[str, Any], *, kind: TaskType, study: Study, base_dir: Path, problems: list[str]) -> list | None:
    if "items" in data and "items_file" in data:
        problems.append("Give either items or items_file, not both.")
        return None
    if "items_file" in data:
        name = data["items_file"]
        if not isinstance(name, str) or not name:
            problems.append("items_file: must be the path of a CSV, XLSX or JSON Lines file.")
            return None
        path = (base_dir / name).resolve()
        try:
            fmt = detect_format(path.name)
            check_size(path.stat().st_size)
            with path.open("rb") as stream:
                rows = read_rows(stream, fmt=fmt, task_type=kind)
                specs, errors = collect(rows, study=study, replace=True)
        except FileNotFoundError:
            problems.append(f"items_file: {name} not found (paths are relative to the study file).")
            return None
        except FileProblem as exc:
            problems.extend(f"items_file {name}: {m}" for m in exc.messages)
            return None
        problems.extend(f"items_file {name}: {m}" for m in errors)
        return specs
    if "items" not in data:
        return None
    if not isinstance(data["items"], list):
        problems.append("items: must be a list of items.")
        return None
    rows = (item_from_object(obj, where=f"Item {n}", task_type=kind) for n, obj in enumerate(data["items"], start=1))
    specs, errors = collect(rows, study=study, replace=True)
    problems.extend(errors)
    return specs


def check_study_data(
    data: dict[str, Any], *, owner: AbstractBaseUser, base_dir: Path, existing: Study | None = None
) -> StudyPlan:
    """Validate a parsed study file completely; raise StudyFileError listing every problem."""
    keys = allowed_keys()
    problems: list[str] = [
        f"Unknown key {str(key)!r}{suggest(str(key), keys)}; allowed keys: {', '.join(keys)}."
        for key in data
        if key not in keys
    ]
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append("name: missing; every study needs a name.")
        name = ""
    elif problem := unstorable(name):
        problems.append(f"name: holds {problem}")
        name = name.replace(NUL, "")  # the rest is still checked, without the database refusing the NUL
    options = _check_settings(data, problems)
    kind, config = _task_type(data, problems)
    state = data.get("state")
    if state is not None and state not in Study.State.values:
        problems.append(f"state: must be one of {', '.join(Study.State.values)}, not {state!r}.")
    sections = {key: data[key] for key in SECTIONS if data.get(key) not in (None, [], {})}
    for key, value in sections.items():
        problems.extend(SECTIONS[key].check(value))
    if existing is not None and kind is not None and existing.task_type != kind.name:
        problems.append(
            f"task_type: the existing study is {existing.task_type}; a study's task type cannot change. "
            "Give the study a new name instead."
        )
    items = None
    if kind is not None and not any(m.startswith("config:") for m in problems):
        # An unsaved study stands in for checking items against the task type and its config.
        draft = Study(owner=owner, name=name.strip(), task_type=kind.name, config=config, **options)
        try:
            draft.full_clean(exclude=["slug", "entry_token", "seed", "completion_code"])
        except ValidationError as exc:
            for field_name, messages in exc.message_dict.items():
                problems.extend(f"{field_name}: {m}" for m in messages)
        items = _items(data, kind=kind, study=draft, base_dir=base_dir, problems=problems)
        has_items = bool(items) or (items is None and existing is not None and existing.items.exists())
        if state == Study.State.OPEN and not has_items:
            problems.append("state: a study needs items before it can be open.")
    if problems:
        raise StudyFileError(problems)
    return StudyPlan(
        name=name.strip(),
        task_type=kind.name,
        config=config,
        options=options,
        state=state,
        items=items,
        sections=sections,
    )


def _existing_study(*, owner: AbstractBaseUser, name: Any, replace: bool) -> Study | None:
    if not isinstance(name, str) or not name.strip() or has_nul(name):
        return None  # check_study_data reports the name; PostgreSQL refuses a NUL even in a query
    matches = list(Study.objects.filter(owner=owner, name=name.strip())[:2])
    if not matches:
        return None
    if len(matches) > 1:
        raise StudyFileError([f"name: {owner} has several studies named {name!r}; rename one first."])
    if not replace:
        raise StudyFileError([f"name: {owner} already has a study named {name!r}; use --replace to update it."])
    if matches[0].judgments.exists():
        raise StudyFileError([f"name: the study {name!r} already has judgments; it cannot be replaced."])
    return matches[0]


def load_study_data(
    data: dict[str, Any], *, owner: AbstractBaseUser, base_dir: Path, replace: bool = False, check_only: bool = False
) -> Study | None:
    """Create (or replace) the study a parsed study file describes; None when only checking."""
    existing = _existing_study(owner=owner, name=data.get("name"), replace=replace)
    plan = check_study_data(data, owner=owner, base_dir=base_dir, existing=existing)
    if check_only:
        return None
    try:
        with transaction.atomic():
            if existing is None:
                study = study_create(
                    owner=owner, name=plan.name, task_type=plan.task_type, config=plan.config, **plan.options
                )
            else:
                study = study_update(study=existing, name=plan.name, config=plan.config, **plan.options)
            if plan.items:
                items_create(study=study, items=plan.items, replace=existing is not None)
            if plan.state is not None and plan.state != study.state:
                study_set_state(study=study, state=plan.state)
            for key, value in plan.sections.items():
                SECTIONS[key].load(owner=owner, value=value, study=study)
    except ValidationError as exc:
        # What only writing finds out (a judge naming a key variable its owner may not use) is a problem
        # with the file like any other, not a traceback from load_study; the transaction wrote nothing.
        raise StudyFileError(exc.messages) from None
    return study


def load_study_file(path: str | Path, owner: AbstractBaseUser, replace: bool = False) -> Study:
    """Validate a study file and write it, all or nothing. Raises StudyFileError."""
    path = Path(path)
    study = load_study_data(read_study_file(path), owner=owner, base_dir=path.resolve().parent, replace=replace)
    assert study is not None
    return study


# Items are read and written this many at a time, so a study of any size streams in bounded memory.
ITEM_CHUNK = 500


def study_file_settings(study: Study) -> dict[str, Any]:
    """Everything of the study file before its items: name, task type, config and settings."""
    data: dict[str, Any] = {"name": study.name, "task_type": study.task_type, "config": study.config}
    for setting in SETTINGS:
        value = getattr(study, setting.name)
        # Plain strings: a study not reloaded since it was created holds enum members, which YAML cannot write.
        data[setting.name] = str(value) if setting.kind == "choice" else value
    data["state"] = str(study.state)
    return data


MEDIA_ENTRY_KEYS = ("src", "alt", "id", "sha256", "original_name")


def _media_entries(entry: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """An item entry's media lists (its own, its prompt's, each candidate's), as the importers read them."""
    by_candidate = {c["key"]: c for c in entry.get("candidates", [])}
    for record in records:
        written = {key: record[key] for key in MEDIA_ENTRY_KEYS}
        if record["role"] == "candidate":
            holder, key = by_candidate.get(record["candidate_key"]), "media"
            if holder is None:
                continue
        else:
            holder, key = entry, "prompt_media" if record["role"] == "prompt" else "media"
        holder.setdefault(key, []).append(written)


def _item_entries(rows: list[tuple], *, with_candidates: bool = True, with_media: bool = True) -> list[dict[str, Any]]:
    """Study-file entries of a batch of item rows, with their candidates read in one query (if any can exist)."""
    candidates: dict[int, list[dict[str, Any]]] = defaultdict(list)
    candidate_rows = (
        Candidate.objects.filter(item_id__in=[row[0] for row in rows])
        .order_by("position", "id")
        .values_list("item_id", "key", "text", "context", "provenance")
        if with_candidates
        else ()
    )
    for item_id, key, text, context, provenance in candidate_rows:
        c: dict[str, Any] = {"key": key, "text": text}
        if context:
            c["context"] = context
        if provenance:
            c["provenance"] = provenance
        candidates[item_id].append(c)
    media = media_records(row[0] for row in rows) if with_media else {}
    entries = []
    for pk, external_id, prompt, text, metadata, gold, is_attention_check in rows:
        entry: dict[str, Any] = {"id": external_id}
        if prompt:
            entry["prompt"] = prompt
        if text:
            entry["text"] = text
        if metadata:
            entry["metadata"] = metadata
        if gold is not None:
            entry["gold"] = gold
        if is_attention_check:
            entry["attention_check"] = True
        if candidates.get(pk):
            entry["candidates"] = candidates[pk]
        if pk in media:
            _media_entries(entry, media[pk])
        entries.append(entry)
    return entries


def study_file_item_batches(study: Study) -> Iterator[list[dict[str, Any]]]:
    """The study's items as study-file entries, in listed order, ITEM_CHUNK at a time (never all at once).

    Plain rows rather than model instances: building a million models costs
    more than writing the file. A study whose items have no candidates (a
    rating study) is asked once, not once per batch: the 2,000 candidate
    queries of a million-item study took a third of its download.
    """
    with_candidates = Candidate.objects.filter(item__study=study).exists()
    with_media = MediaAttachment.objects.filter(item__study=study).exists()
    rows = study.items.order_by("position", "id").values_list(
        "pk", "external_id", "prompt", "text", "metadata", "gold", "is_attention_check"
    )
    batch: list[tuple] = []
    for row in rows.iterator(chunk_size=ITEM_CHUNK):
        batch.append(row)
        if len(batch) == ITEM_CHUNK:
            yield _item_entries(batch, with_candidates=with_candidates, with_media=with_media)
            batch = []
    if batch:
        yield _item_entries(batch, with_candidates=with_candidates, with_media=with_media)


def study_file_sections(study: Study) -> dict[str, Any]:
    """The other apps' keys (judges, ...) that have something to say about this study."""
    data: dict[str, Any] = {}
    for key, section in SECTIONS.items():
        value = section.dump(study)
        if value:
            data[key] = value
    return data


def study_file_data(study: Study) -> dict[str, Any]:
    """The study written back as a study file (gold answers in their full value shape), all in memory.

    For a download use ``study_file_yaml_chunks`` / ``study_file_json_chunks``, which stream.
    """
    items = [entry for batch in study_file_item_batches(study) for entry in batch]
    return {**study_file_settings(study), "items": items, **study_file_sections(study)}


# libyaml's emitter when PyYAML was built with it: the same safe subset, about three times faster.
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=YAML_DUMPER, allow_unicode=True, sort_keys=False, width=1000)


def study_file_yaml_chunks(study: Study) -> Iterator[str]:
    """The study file as YAML, piece by piece: the same text as dumping ``study_file_data(...)`` in one go.

    A block sequence under a key may start at the key's own indentation, so
    each batch of items dumped as a list continues the ``items:`` list.
    """
    yield _yaml(study_file_settings(study))
    empty = True
    for batch in study_file_item_batches(study):
        if empty:
            yield "items:\n"
            empty = False
        yield _yaml(batch)
    if empty:
        yield "items: []\n"
    sections = study_file_sections(study)
    if sections:
        yield _yaml(sections)


def study_file_yaml(study: Study) -> str:
    return "".join(study_file_yaml_chunks(study))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def study_file_json_chunks(study: Study) -> Iterator[str]:
    """The study file as one JSON object, piece by piece (items streamed in batches)."""
    head = ", ".join(f"{_json(key)}: {_json(value)}" for key, value in study_file_settings(study).items())
    yield "{" + head + ', "items": ['
    first = True
    for batch in study_file_item_batches(study):
        yield ("" if first else ",\n") + ",\n".join(_json(entry) for entry in batch)
        first = False
    yield "]"
    for key, value in study_file_sections(study).items():
        yield f", {_json(key)}: {_json(value)}"
    yield "}\n"
