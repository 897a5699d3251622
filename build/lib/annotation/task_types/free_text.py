"""Written answers: a one-word micro-edit of a headline, or an explanation.

A micro-edit item marks the replaceable token in its text as ``<token/>``
(SemEval-2020 Task 7 style). Value: ``{"replacement": <one word>}``.
An explanation's value is ``{"text": <what the rater wrote>}``.
"""

import re
from typing import Any

from django.core.exceptions import ValidationError

from .base import Level, Shortcut, TaskType, check_storable, require_dict

MARKED_TOKEN = re.compile(r"<([^<>/]+)/>")
ONE_WORD = re.compile(r"^[^\s<>]+$")


def marked_token(text: str) -> str:
    found = MARKED_TOKEN.findall(text)
    if len(found) != 1:
        raise ValidationError("A micro-edit headline must mark exactly one token as <token/>.")
    return found[0]


def apply_edit(text: str, replacement: str) -> str:
    return MARKED_TOKEN.sub(lambda _m: replacement, text, count=1)


def split_headline(text: str) -> tuple[str, str, str]:
    """(before, marked token, after) for rendering the headline with its mark."""
    match = MARKED_TOKEN.search(text)
    if not match:
        return text, "", ""
    return text[: match.start()], match.group(1), text[match.end() :]


class MicroEdit(TaskType):
    name = "micro_edit"
    title = "Micro-edit"
    level = Level.TEXT
    template = "annotation/task_types/micro_edit.html"
    default_config = {"max_length": 40}
    question = "Replace the marked word to make the headline funny"
    gold_field = "replacement"

    def check_item_text(self, text: str) -> None:
        marked_token(text)

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [Shortcut(("Enter",), "Submit your word")]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        return {"headline": split_headline(item.text), "replacement": posted.get("replacement", "")}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"replacement": (data.get("replacement") or "").strip()}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        word = str(require_dict(value, "replacement")["replacement"]).strip()
        check_storable(word)
        if not word:
            raise ValidationError("Please type a replacement word.")
        if not ONE_WORD.match(word):
            raise ValidationError("The replacement must be a single word, without spaces or angle brackets.")
        if len(word) > config.get("max_length", 40):
            raise ValidationError("The replacement word is too long.")
        if item_text and word.casefold() == marked_token(item_text).strip().casefold():
            raise ValidationError("The replacement must differ from the original word.")
        return {"replacement": word}


class WrittenExplanation(TaskType):
    name = "explanation"
    title = "Written explanation"
    level = Level.TEXT
    template = "annotation/task_types/explanation.html"
    default_config = {"min_length": 10, "max_length": 2000}
    question = "Explain the joke"
    gold_field = "text"

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [Shortcut(("Ctrl+Enter", "⌘+Enter"), "Submit your explanation")]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        return {"written": posted.get("text", "")}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"text": (data.get("text") or "").strip()}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        text = str(require_dict(value, "text")["text"]).strip()
        check_storable(text)
        if len(text) < config.get("min_length", 10):
            raise ValidationError(f"Please write at least {config.get('min_length', 10)} characters.")
        if len(text) > config.get("max_length", 2000):
            raise ValidationError(f"Please keep it under {config.get('max_length', 2000)} characters.")
        return {"text": text}
