"""Helpers every answer parser shares: finding the JSON object, reading keys and numbers.

An answer parser raises ``Unparseable`` with the reason when an answer cannot
be read; ``judging.parsing`` turns that into the judgment's parse error.
"""

import json
import re
from typing import Any


class Unparseable(Exception):
    pass


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``: whole, fenced, or embedded in prose."""
    candidates = [text.strip()]
    candidates.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):  # a model can answer with anything, "[[[[..." included
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def first_key(obj: dict[str, Any], *names: str) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def norm(text: Any) -> str:
    return re.sub(r"[\s_\-]+", " ", str(text)).strip().strip(".!\"'*` ").casefold()


def keyed(text: str, keys: str, value_pattern: str) -> list[str]:
    """Values written as ``key: value`` (or key = value, key is value) anywhere in text."""
    pattern = rf"(?:{keys})\s*(?:[:=]|is)\s*[\"'*]*\s*({value_pattern})"
    return [m.group(1) for m in re.finditer(pattern, text, re.I)]


def one(found: list[Any], what: str) -> Any:
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise Unparseable(f"no {what} found in the answer")
    raise Unparseable(f"conflicting {what}s in the answer: {', '.join(map(str, distinct))}")


def integer(raw: Any) -> int:
    if isinstance(raw, bool):
        raise Unparseable(f"{raw!r} is not a number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise Unparseable(f"{str(raw)[:40]!r} is not a whole number")


def choice_number(raw: Any, shown: list[str]) -> str:
    """The candidate an option number (1 = first shown) names."""
    if isinstance(raw, str):
        match = re.fullmatch(r"\s*(?:option|response|candidate|joke|#)?\s*(\d+)\s*\.?\s*", raw, re.I)
        if not match:
            raise Unparseable(f"the choice {raw[:40]!r} is not an option number")
        raw = match.group(1)
    number = integer(raw)
    if not 1 <= number <= len(shown):
        raise Unparseable(f"the choice {number} is not between 1 and {len(shown)}")
    return shown[number - 1]


def text_field(obj: dict[str, Any], *names: str) -> str:
    raw = first_key(obj, *names)
    if not isinstance(raw, str) or not raw.strip():
        raise Unparseable(f"the JSON answer has no {names[0]}")
    return raw.strip()
