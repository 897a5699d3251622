"""Reading a judge's answer into a task type's value, as a careful person would, never guessing.

In order: the reasoning trace is set aside (``<think>…</think>``, gpt-oss's analysis channel; one
that never closes is no answer); when the answer says which statement is final ("Final answer: B",
最终答案, 最終回答) only that statement is read; then the structured answer (the whole reply is the
JSON object the schema asked for), or the JSON object the model meant, found in a code fence or
among prose and read strictly — and prose around it that states a different verdict takes it back,
so the answer is unparseable; and, only when the answer holds no JSON at all, the task type's
reading of its statements (``judging/task_types/answer_text.py``): questions and conditionals
skipped, negations read as such, two statements that disagree unparseable. Refusals, hedges,
cut-off JSON and anything else are unparseable with the reason — never silently a tie, a zero or a
default label. Every value is finally checked by the task type's own ``validate``, exactly as a
human's answer would be, and ``Parsed.method`` says truly which way it was read; the judging job
stores it in the judgment's provenance (``parse.method``).
"""

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from annotation.task_types import get_task_type

from .task_types import JudgingType, judging_type
from .task_types.answer_text import final_statement, squeeze, strip_reasoning
from .task_types.reading import Unparseable, find_json_object, first_key, read_json, refuse_unclear

#: Parse methods a judgment can record; a text pattern records ``text_pattern:<its name>``.
STRUCTURED, JSON, JSON_REPAIRED, TEXT_PATTERN = "structured", "json", "json_repaired", "text_pattern"
#: A JSON answer read through another name for the schema's key ({"winner": "A"} for "decision").
JSON_ALIAS = "json_alias"
#: Prefix of a method when only the statement after "Final answer:" was read.
FINAL_ANSWER = "final_answer"


@dataclass
class Parsed:
    value: Any = None
    method: str = ""  # [final_answer:]structured | json | json_alias | json_repaired | text_pattern:<name>
    error: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_answer(
    *,
    task_type: str,
    text: str | None,
    shown_order: list[str],
    config: dict[str, Any],
    item_text: str = "",
    structured: bool = False,
) -> Parsed:
    """Parse and validate one answer; ``Parsed.error`` says why when it fails.

    ``structured``: the answer was requested with structured output (a JSON
    schema or JSON mode), so a reply that is exactly one valid object holding
    the schema's own key is recorded as ``structured`` rather than ``json``.
    """
    if text is None or not text.strip():
        return Parsed(error="the answer is empty")
    kind = get_task_type(task_type)
    # Each task type's parser lives with its judging side (judging/task_types/).
    reader = judging_type(task_type)
    try:
        answer = strip_reasoning(text)
        final = final_statement(answer)
        if final is None:
            value, extras, method = _read(reader, answer, shown_order, config, structured=structured)
        else:
            value, extras, method = _read(reader, final, shown_order, config, structured=False)
            method = f"{FINAL_ANSWER}:{method}"
        value = kind.validate(value, candidate_keys=shown_order, config=config, item_text=item_text)
    except Unparseable as exc:
        return Parsed(error=str(exc))
    except ValidationError as exc:
        return Parsed(error="; ".join(exc.messages))
    return Parsed(value=value, method=method, extras=extras)


def _read(
    reader: JudgingType, text: str, shown: list[str], config: dict[str, Any], *, structured: bool
) -> tuple[Any, dict[str, Any], str]:
    found = read_json(text)
    # Prose answers are the value itself, kept as written; verdicts are read with spaces squeezed.
    said = text if reader.reads_prose else squeeze(text)
    if found is None:
        refuse_unclear(said, hedges=not reader.reads_prose)
        value, pattern = reader.from_text(said, shown=shown, config=config)
        return value, {}, f"{TEXT_PATTERN}:{pattern}"
    # An object that fails is not re-read word by word: the model's own structure said otherwise.
    value, extras = reader.from_json(found.obj, shown=shown, config=config)
    if not reader.reads_prose:
        _not_taken_back(reader, value, squeeze(text[: found.start] + "\n" + text[found.end :]), shown, config)
    if not all(first_key(found.obj, key) is not None for key in reader.answer_keys):
        return value, extras, JSON_ALIAS
    method = STRUCTURED if structured and found.whole and found.method == JSON else found.method
    return value, extras, method


def _not_taken_back(reader: JudgingType, value: Any, prose: str, shown: list[str], config: dict[str, Any]) -> None:
    """Unparseable when the prose around a JSON answer states another verdict ("Actually, B is funnier")."""
    if not prose.strip():
        return
    try:
        said, _ = reader.from_text(prose, shown=shown, config=config)
    except Unparseable as exc:
        if str(exc).startswith("conflicting"):
            raise Unparseable(f"the prose around the JSON answer disagrees with it ({exc})") from None
        return
    if said != value:
        raise Unparseable("the prose around the JSON answer takes it back: it states another verdict")


__all__ = ["Parsed", "Unparseable", "find_json_object", "parse_answer"]
