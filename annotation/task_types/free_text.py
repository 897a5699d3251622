"""Written answers: a one-word micro-edit of a headline, or an explanation.

A micro-edit item marks the replaceable token in its text as ``<token/>``
(SemEval-2020 Task 7 style). Value: ``{"replacement": <one word>}``.
An explanation's value is ``{"text": <what the rater wrote>}``.
"""

import difflib
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_noop

from .base import ConfigField, Level, Shortcut, TaskType, check_storable, require_dict

MARKED_TOKEN = re.compile(r"<([^<>/]+)/>")
ONE_WORD = re.compile(r"^[^\s<>]+$")
# One character of a replacement word in a pattern a grammar converter takes (llama.cpp's refuses
# ``\s``), without the quote and backslash a JSON string would have to escape.
WORD_CHAR = r'[^ \t\n\r<>"\\]'


def marked_token(text: str) -> str:
    found = MARKED_TOKEN.findall(text)
    if len(found) != 1:
        raise ValidationError("A micro-edit headline must mark exactly one token as <token/>.")
    return found[0]


def _char_class(chars: str, *, negated: bool) -> str:
    """A regex character class of ``chars`` (negated: of word characters other than them)."""
    body = "".join("\\" + c if c in "]\\^-" else c for c in sorted(set(chars)))
    return f'[^ \\t\\n\\r<>"\\\\{body}]' if negated else f"[{body}]"


def _forms(char: str) -> str:
    """The character in either case (a case that is two characters, as "İ".lower(), is left out)."""
    return "".join(form for form in {char, char.lower(), char.upper()} if len(form) == 1)


def one_word_pattern(*, max_length: int, original: str = "") -> str:
    """A regex, without look-arounds (grammar converters refuse them), for one replacement word.

    The rule ``MicroEdit.validate`` checks, a little narrower: one word of at most ``max_length``
    characters without spaces, angle brackets, quotes or backslashes, and (when ``original`` is given)
    not the marked word again in any case.
    Every string of the original's length that differs from it differs first at some position, so
    the exclusion is the union, over positions, of "the original up to here, then another character".
    """
    max_length = max(1, int(max_length))
    word = original.strip()
    if not word or len(word) > max_length:
        return rf"^{WORD_CHAR}{{1,{max_length}}}$"
    n = len(word)
    branches = []
    if n > 1:
        branches.append(rf"{WORD_CHAR}{{1,{n - 1}}}")
    if n < max_length:
        branches.append(rf"{WORD_CHAR}{{{n + 1},{max_length}}}")
    for i in range(n):
        rest = n - i - 1
        tail = rf"{WORD_CHAR}{{{rest}}}" if rest else ""
        same = "".join(_char_class(_forms(c), negated=False) for c in word[:i])
        branches.append(same + _char_class(_forms(word[i]), negated=True) + tail)
    return "^(" + "|".join(branches) + ")$"


def apply_edit(text: str, replacement: str) -> str:
    return MARKED_TOKEN.sub(lambda _m: replacement, text, count=1)


@dataclass(frozen=True)
class Segment:
    """A run of a text, and whether an edit changed it."""

    text: str
    changed: bool = False


# Longer texts are shown without marks: the comparison grows with the product of the lengths.
EDIT_MARK_MAX_CHARS = 2000
_WORDS = re.compile(r"(\w+)")


def edit_segments(original: str, edited: str) -> tuple[list[Segment], list[Segment]]:
    """Both texts cut into runs, the words that differ between them marked as changed.

    Empty lists when there is nothing to mark (a text missing or the two the same) or the
    texts are too long to compare; the caller then shows them as they are.
    """
    if not original or not edited or max(len(original), len(edited)) > EDIT_MARK_MAX_CHARS:
        return [], []
    before, after = _WORDS.split(original), _WORDS.split(edited)
    marked: tuple[list[Segment], list[Segment]] = ([], [])
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        for runs, pieces in ((marked[0], before[i1:i2]), (marked[1], after[j1:j2])):
            if not (text := "".join(pieces)):
                continue
            # A change of spaces or punctuation alone is not worth a mark, nor the spaces around a word.
            if tag == "equal" or not _WORDS.search(text):
                runs.append(Segment(text))
                continue
            core = text.strip()
            start = text.index(core)
            runs.extend(
                segment
                for segment in (Segment(text[:start]), Segment(core, changed=True), Segment(text[start + len(core) :]))
                if segment.text
            )
    if not any(segment.changed for segment in marked[1]):
        return [], []
    return marked


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
    question = gettext_noop("Replace the marked word to make the headline funny")
    gold_field = "replacement"
    config_fields = (ConfigField("max_length", "whole_number", "Longest replacement word (characters)"),)
    sample_text = "Mayor announces new <bridge/>"

    def check_item_text(self, text: str) -> None:
        marked_token(text)

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [Shortcut(("Enter",), gettext("Submit your word"))]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        return {"headline": split_headline(item.text), "replacement": posted.get("replacement", "")}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"replacement": (data.get("replacement") or "").strip()}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        word = str(require_dict(value, "replacement")["replacement"]).strip()
        check_storable(word)
        if not word:
            raise ValidationError(gettext("Please type a replacement word."))
        if not ONE_WORD.match(word):
            raise ValidationError(gettext("The replacement must be a single word, without spaces or angle brackets."))
        if len(word) > config.get("max_length", 40):
            raise ValidationError(gettext("The replacement word is too long."))
        if item_text and word.casefold() == marked_token(item_text).strip().casefold():
            raise ValidationError(gettext("The replacement must differ from the original word."))
        return {"replacement": word}


class WrittenExplanation(TaskType):
    name = "explanation"
    title = "Written explanation"
    level = Level.TEXT
    template = "annotation/task_types/explanation.html"
    default_config = {"min_length": 10, "max_length": 2000}
    question = gettext_noop("Explain the joke")
    gold_field = "text"
    config_fields = (
        ConfigField("min_length", "whole_number", "Shortest explanation (characters)"),
        ConfigField("max_length", "whole_number", "Longest explanation (characters)"),
    )

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [Shortcut(("Ctrl+Enter", "⌘+Enter"), gettext("Submit your explanation"))]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        return {"written": posted.get("text", "")}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"text": (data.get("text") or "").strip()}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        text = str(require_dict(value, "text")["text"]).strip()
        check_storable(text)
        if len(text) < config.get("min_length", 10):
            raise ValidationError(
                gettext("Please write at least %(count)d characters.") % {"count": config.get("min_length", 10)}
            )
        if len(text) > config.get("max_length", 2000):
            raise ValidationError(
                gettext("Please keep it under %(count)d characters.") % {"count": config.get("max_length", 2000)}
            )
        return {"text": text}
