"""Building ItemSpecs from one spreadsheet row or one JSON/YAML object.

Two shapes describe an item. Spreadsheets (CSV, XLSX) use flat columns:
``id, prompt, text, gold, attention_check, meta.<name>, candidate.<key>,
candidate.<key>.context, candidate.<key>.<provenance field>``. Study files and
JSON Lines use nested objects: ``{id, prompt, text, metadata, gold,
attention_check, candidates: [{key, text, context, provenance}]}``. Both are
strict: an unknown column or key is an error, so a typo never passes silently.
"""

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..services.studies import CandidateSpec, ItemSpec, MediaSpec
from ..tables import TableError, cell_text
from ..task_types import TaskType
from .cells import CellProblem, attention_flag, cell_json, check_text, json_ready
from .gold import gold_from_file

FIXED_COLUMNS = ("id", "prompt", "text", "gold", "attention_check")
# Media columns (docs/media.md): a path inside the uploaded archive, and its alt text.
MEDIA_COLUMNS = {"media": "item", "media.alt": "item", "prompt_media": "prompt", "prompt_media.alt": "prompt"}
ITEM_KEYS = ("id", "prompt", "text", "metadata", "gold", "attention_check", "candidates", "media", "prompt_media")
CANDIDATE_KEYS = ("key", "text", "context", "provenance", "media")
# A study file written by Funnybone also names each file's public id, hash and original name: read, not used.
MEDIA_KEYS = ("src", "alt", "id", "sha256", "original_name")


# The file as a whole cannot be read (wrong type, bad header, bad bytes, too big): the
# table reader's own error, so a refusal from the reader and one from the importers
# are the same thing to every caller (``.messages``; ``.problems`` as data).
FileProblem = TableError


@dataclass
class RowResult:
    """One row or object as read: the item, or what is wrong with it."""

    where: str
    spec: ItemSpec | None
    errors: list[str] = field(default_factory=list)


def suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# -- flat columns ------------------------------------------------------------------


@dataclass
class CandidateColumns:
    text: int | None = None
    context: int | None = None
    media: int | None = None
    media_alt: int | None = None
    provenance: dict[str, int] = field(default_factory=dict)


@dataclass
class Columns:
    """Where each field sits in a spreadsheet row, read from its header."""

    fixed: dict[str, int]
    media: dict[str, int]
    meta: dict[str, int]
    candidates: dict[str, CandidateColumns]
    unnamed: list[int]
    width: int

    @classmethod
    def from_header(cls, header: list[Any]) -> "Columns":
        fixed: dict[str, int] = {}
        media: dict[str, int] = {}
        meta: dict[str, int] = {}
        candidates: dict[str, CandidateColumns] = {}
        unnamed: list[int] = []
        problems: list[str] = []
        seen: set[str] = set()
        for index, raw in enumerate(header):
            name = cell_text(raw)
            if not name:
                unnamed.append(index)
                continue
            if name.lower() in seen:
                problems.append(f"The column {name!r} appears twice.")
                continue
            seen.add(name.lower())
            lower = name.lower()
            if lower in FIXED_COLUMNS:
                fixed[lower] = index
            elif lower in MEDIA_COLUMNS:
                media[lower] = index
            elif lower.startswith("meta.") and len(name) > 5:
                meta[name[5:]] = index
            elif lower.startswith("candidate.") and len(name) > 10:
                key, _, part = name[10:].partition(".")
                slot = candidates.setdefault(key, CandidateColumns())
                if not key:
                    problems.append(f"The column {name!r} names no candidate key.")
                elif not part:
                    slot.text = index
                elif part.lower() == "context":
                    slot.context = index
                elif part.lower() == "media":
                    slot.media = index
                elif part.lower() == "media.alt":
                    slot.media_alt = index
                else:
                    slot.provenance[part] = index
            else:
                hint = suggest(lower, FIXED_COLUMNS)
                problems.append(
                    f"Unknown column {name!r}{hint}. Put extra data in a column named meta.<name>; "
                    "candidates go in candidate.<key> columns."
                )
        if "id" not in fixed:
            problems.insert(0, "The file has no 'id' column; every item needs an id.")
        for key, slot in candidates.items():
            if key and slot.text is None:
                problems.append(
                    f"The candidate {key!r} has extra columns but no 'candidate.{key}' column for its text."
                )
        if problems:
            raise FileProblem(problems)
        return cls(fixed=fixed, media=media, meta=meta, candidates=candidates, unnamed=unnamed, width=len(header))


def _column_label(name: str) -> str:
    return f"column {name!r}"


def item_from_cells(cells: list[Any], *, columns: Columns, where: str, task_type: TaskType) -> RowResult:
    """One spreadsheet row (header excluded) as an item, with every problem it has."""
    errors: list[str] = []
    if len(cells) > columns.width and any(cell_text(c) for c in cells[columns.width :]):
        errors.append(f"{where}: has {len(cells)} cells but the header names {columns.width} columns.")
    cells = list(cells) + [None] * (columns.width - len(cells))
    for index in columns.unnamed:
        if cell_text(cells[index]):
            errors.append(f"{where}: column {index + 1} has a value but no name in the header.")

    def text(index: int | None, label: str) -> str:
        if index is None:
            return ""
        value = cell_text(cells[index])
        try:
            check_text(value, field=label)
        except CellProblem as exc:
            errors.append(f"{where}: {exc}")
        return value

    spec = ItemSpec(
        external_id=text(columns.fixed.get("id"), "the id"),
        prompt=text(columns.fixed.get("prompt"), _column_label("prompt")),
        text=text(columns.fixed.get("text"), _column_label("text")),
        row=where,
    )
    for name, index in columns.meta.items():
        value = cells[index]
        if cell_text(value):
            try:
                check_text(cell_text(value), field=_column_label(f"meta.{name}"))
            except CellProblem as exc:
                errors.append(f"{where}: {exc}")
            spec.metadata[name] = cell_json(value)
    for key, slot in columns.candidates.items():
        candidate_text = text(slot.text, _column_label(f"candidate.{key}"))
        context = text(slot.context, _column_label(f"candidate.{key}.context"))
        provenance = {}
        for part, index in slot.provenance.items():
            if cell_text(cells[index]):
                try:
                    check_text(cell_text(cells[index]), field=_column_label(f"candidate.{key}.{part}"))
                except CellProblem as exc:
                    errors.append(f"{where}: {exc}")
                provenance[part] = cell_json(cells[index])
        media_path = text(slot.media, _column_label(f"candidate.{key}.media"))
        media_alt = text(slot.media_alt, _column_label(f"candidate.{key}.media.alt"))
        if candidate_text and media_path:
            spec.media.append(MediaSpec(source=media_path, alt=media_alt, role="candidate", candidate_key=key))
        elif media_alt and not media_path:
            errors.append(f"{where}: column 'candidate.{key}.media.alt' has alt text but no media path beside it.")
        if candidate_text:
            spec.candidates.append(CandidateSpec(key=key, text=candidate_text, context=context, provenance=provenance))
        elif context or provenance or media_path:
            errors.append(f"{where}: candidate {key!r} has details but no text.")
    for column in ("media", "prompt_media"):
        media_path = text(columns.media.get(column), _column_label(column))
        media_alt = text(columns.media.get(f"{column}.alt"), _column_label(f"{column}.alt"))
        if media_path:
            spec.media.append(MediaSpec(source=media_path, alt=media_alt, role=MEDIA_COLUMNS[column]))
        elif media_alt:
            errors.append(f"{where}: column '{column}.alt' has alt text but no media path beside it.")
    if "attention_check" in columns.fixed:
        try:
            spec.is_attention_check = attention_flag(cells[columns.fixed["attention_check"]])
        except CellProblem as exc:
            errors.append(f"{where}: {exc}")
    if "gold" in columns.fixed:
        # The cell's text, as every reader sees it: TRUE or 3.0 in a workbook reads as in its CSV.
        gold_text = cell_text(cells[columns.fixed["gold"]])
        try:
            check_text(gold_text, field=_column_label("gold"))
            spec.gold = gold_from_file(task_type, gold_text)
        except CellProblem as exc:
            errors.append(f"{where}: gold answer: {exc}")
    return RowResult(where=where, spec=spec, errors=errors)


# -- nested objects ------------------------------------------------------------------


def _text_field(obj: dict[str, Any], key: str, *, where: str, errors: list[str], required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            errors.append(f"{where}: {key!r} is missing.")
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        errors.append(f"{where}: {key!r} must be text, not {type(value).__name__}.")
        return ""
    text = cell_text(value)
    try:
        check_text(text, field=repr(key))
    except CellProblem as exc:
        errors.append(f"{where}: {exc}")
    if required and not text:
        errors.append(f"{where}: {key!r} is empty.")
    return text


def _object_field(obj: dict[str, Any], key: str, *, where: str, errors: list[str]) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(f"{where}: {key!r} must be an object of name: value pairs.")
        return {}
    try:
        check_text(value, field=repr(key))
        return json_ready(value, field=repr(key))
    except CellProblem as exc:
        errors.append(f"{where}: {exc}")
        return {}


def _unknown_keys(obj: dict[str, Any], known: tuple[str, ...], *, where: str) -> list[str]:
    return [
        f"{where}: unknown key {str(key)!r}{suggest(str(key), known)}; allowed keys: {', '.join(known)}."
        for key in obj
        if key not in known
    ]


def _media_field(
    obj: dict[str, Any], key: str, *, where: str, errors: list[str], role: str, candidate_key: str | None = None
) -> list[MediaSpec]:
    """A ``media`` list: each entry a path, or an object with ``src`` and ``alt``."""
    value = obj.get(key)
    if value is None:
        return []
    entries = value if isinstance(value, list) else [value]
    found: list[MediaSpec] = []
    for number, entry in enumerate(entries, start=1):
        at = f"{where}, {key} {number}"
        if isinstance(entry, str):
            entry = {"src": entry}
        if not isinstance(entry, dict):
            errors.append(f"{at}: a media entry must be a path or an object with 'src' and 'alt'.")
            continue
        errors.extend(_unknown_keys(entry, MEDIA_KEYS, where=at))
        source = _text_field(entry, "src", where=at, errors=errors, required=True)
        alt = _text_field(entry, "alt", where=at, errors=errors)
        if source:
            found.append(MediaSpec(source=source, alt=alt, role=role, candidate_key=candidate_key, position=number - 1))
    return found


def item_from_object(obj: Any, *, where: str, task_type: TaskType) -> RowResult:
    """One item written as an object (study file or JSON Lines), with every problem it has."""
    if not isinstance(obj, dict):
        return RowResult(where=where, spec=None, errors=[f"{where}: an item must be an object with an 'id'."])
    errors = _unknown_keys(obj, ITEM_KEYS, where=where)
    external_id = _text_field(obj, "id", where=where, errors=errors, required=True)
    where_id = f"{where} (id {external_id!r})" if external_id else where
    spec = ItemSpec(
        external_id=external_id,
        prompt=_text_field(obj, "prompt", where=where_id, errors=errors),
        text=_text_field(obj, "text", where=where_id, errors=errors),
        metadata=_object_field(obj, "metadata", where=where_id, errors=errors),
        row=where_id,
    )
    spec.media.extend(_media_field(obj, "media", where=where_id, errors=errors, role="item"))
    spec.media.extend(_media_field(obj, "prompt_media", where=where_id, errors=errors, role="prompt"))
    raw_candidates = obj.get("candidates") or []
    if not isinstance(raw_candidates, list):
        errors.append(f"{where_id}: 'candidates' must be a list.")
        raw_candidates = []
    for number, raw in enumerate(raw_candidates, start=1):
        at = f"{where_id}, candidate {number}"
        if not isinstance(raw, dict):
            errors.append(f"{at}: a candidate must be an object with a key and a text.")
            continue
        errors.extend(_unknown_keys(raw, CANDIDATE_KEYS, where=at))
        key = _text_field(raw, "key", where=at, errors=errors, required=True)
        spec.media.extend(_media_field(raw, "media", where=at, errors=errors, role="candidate", candidate_key=key))
        spec.candidates.append(
            CandidateSpec(
                key=key,
                text=_text_field(raw, "text", where=at, errors=errors, required=True),
                context=_text_field(raw, "context", where=at, errors=errors),
                provenance=_object_field(raw, "provenance", where=at, errors=errors),
            )
        )
    try:
        spec.is_attention_check = attention_flag(obj.get("attention_check"))
    except CellProblem as exc:
        errors.append(f"{where_id}: {exc}")
    try:
        check_text(obj.get("gold"), field="the gold answer")
        spec.gold = gold_from_file(task_type, obj.get("gold"))
        if spec.gold is not None:
            spec.gold = json_ready(spec.gold, field="the gold answer")
    except CellProblem as exc:
        errors.append(f"{where_id}: gold answer: {exc}")
    return RowResult(where=where, spec=spec, errors=errors)
