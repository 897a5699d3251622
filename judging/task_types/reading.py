"""Helpers every answer parser shares: reading the JSON the model meant, keys, numbers, refusals.

An answer parser raises ``Unparseable`` with the reason when an answer cannot
be read; ``judging.parsing`` turns that into the judgment's parse error.

The JSON reader is strict about what the model meant and tolerant only of how
chat models mangle it in transit: a literal newline or tab inside a string, a
code fence, prose before or after, one trailing comma. It never completes a
cut-off object or picks between two different ones.
"""

import json
import re
from dataclasses import dataclass
from typing import Any


class Unparseable(Exception):
    pass


@dataclass(frozen=True)
class FoundJson:
    obj: dict[str, Any]
    #: "json": valid as written; "json_repaired": valid once raw control characters or a trailing comma were fixed.
    method: str
    #: The object is the whole answer (what structured output returns), not found inside prose or a fence.
    whole: bool
    #: Where the object stands in the answer, so the prose around it can be read too.
    start: int = 0
    end: int = 0


# An opening brace that starts a JSON object the model meant ({"key" ...), as opposed to braces in prose.
_MEANT_OBJECT = re.compile(r"\{\s*(?:\"|'|\}|$)")


def _objects(text: str) -> tuple[list[tuple[int, int]], int | None]:
    """Spans of the top-level {...} runs in ``text`` (string-aware), and where one that never closes starts."""
    spans, depth, start, in_string, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and depth:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans, start if depth else None


_BEFORE_CLOSER = re.compile(r"\s*[}\]]")


def _without_trailing_commas(text: str) -> str:
    """Drop a comma directly before a closing brace or bracket, outside strings."""
    out, in_string, escaped = [], False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "," and _BEFORE_CLOSER.match(text, i + 1):
            continue
        out.append(ch)
    return "".join(out)


def _load(candidate: str) -> tuple[Any, str] | None:
    try:
        return json.loads(candidate), "json"
    except (ValueError, RecursionError):  # a model can answer with anything, "[[[[..." included
        pass
    try:
        # strict=False lets raw newlines and tabs stand inside strings, as models often write them.
        return json.loads(_without_trailing_commas(candidate), strict=False), "json_repaired"
    except (ValueError, RecursionError):
        return None


def read_json(text: str) -> FoundJson | None:
    """The JSON object the answer holds, or None when it holds none; Unparseable when it is broken or several."""
    stripped = text.strip()
    spans, open_start = _objects(text)
    first: FoundJson | None = None
    for start, end in spans:
        loaded = _load(text[start:end])
        if loaded is None or not isinstance(loaded[0], dict):
            continue
        if first is None:
            first = FoundJson(loaded[0], loaded[1], text[start:end].strip() == stripped, start, end)
        elif loaded[0] != first.obj:
            raise Unparseable("the answer holds 2 different JSON objects; which one is meant is a guess")
    if first is not None:
        if open_start is not None and open_start > first.end and _MEANT_OBJECT.match(text, open_start):
            raise Unparseable(
                "the JSON answer is followed by another one that is cut off; which one is meant is a guess"
            )
        return first
    if open_start is not None and _MEANT_OBJECT.match(text, open_start):
        raise Unparseable("the JSON answer is cut off before its end")
    if any(text[start:end].lstrip("{").lstrip().startswith(('"', "'")) for start, end in spans):
        raise Unparseable("the JSON answer is not valid JSON")
    return None


def find_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text`` (whole, fenced, or embedded in prose), None when there is none or it is unreadable."""
    try:
        found = read_json(text)
    except Unparseable:
        return None
    return found.obj if found else None


# -- free text -------------------------------------------------------------------------------

# A refusal to judge, in the languages of the protocols (English, Chinese for Chumor, Japanese for Oogiri).
_REFUSALS = re.compile(
    r"\bI(?:\s+am|'m|’m)\s+(?:unable|not able)\b|\bI\s+(?:can(?:no|'|’)t|won(?:'|’)t|will\s+not|would\s+rather\s+not"
    r"|(?:do\s+not|don(?:'|’)t)\s+feel\s+comfortable)\b|\bas\s+an?\s+(?:AI|language\s+model)\b|\bI(?:'m|’m|\s+am)\s+sorry\b"
    r"|作为(?:一个)?(?:AI|人工智能|语言模型|AI助手)|我(?:无法|不能|没法|不便)|抱歉|"
    r"AIとして|(?:判断|評価|回答|お答え)(?:でき|いたし)(?:ません|かねます)|申し訳",
    re.I,
)
# Words that make an answer a guess between options rather than a verdict.
_HEDGES = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|either|not\s+sure|unsure|hard\s+to\s+say|difficult\s+to\s+say"
    r"|can(?:no|'|’)t\s+decide|could\s+go\s+either)\b|\b\w+\s*,?\s+or\s+(?:possibly|maybe|perhaps)\b"
    r"|(?<![\w*])(?:[AB]|\d+)\s*,?\s*or\s+(?:[AB]|\d+)(?![\w*])"
    r"|(?<![A-Za-z0-9])(?:[AB]|\d+)\s*(?:或者?|还是|か)\s*(?:[AB]|\d+)(?![A-Za-z0-9])"
    r"|也许|或许|说不准|不确定|难以判断|难说|かもしれ|たぶん|多分|どちらとも|分からない|わからない",
    re.I,
)


# Quoted words are the joke's, not the judge's: "I can't even" in a quoted punchline is no refusal.
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|‘[^’\n]*’")


def refuse_unclear(text: str, *, hedges: bool = True) -> None:
    """Raise Unparseable when a free-text answer refuses to judge or hedges between answers.

    With ``hedges=False`` (prose answers such as explanations) only the opening of the answer is
    checked for a refusal, since an explanation may well say "I can't" about the joke's speaker.
    """
    own = QUOTED.sub(" ", text)
    refusal = _REFUSALS.search(own if hedges else own[:120])
    if refusal:
        raise Unparseable(f"the answer refuses to judge ({refusal.group(0).strip()!r})")
    hedge = _HEDGES.search(own) if hedges else None
    if hedge:
        raise Unparseable(f"the answer hedges ({hedge.group(0).strip()!r}) instead of giving one verdict")


#: Words that introduce the answer itself ("Answer: 2", "评分：2", "評価：2").
ANSWER_KEYS = r"final\s+answer|answer|verdict|decision|答案|回答|结论|結論|判定|答え"


def keyed(text: str, keys: str, value_pattern: str) -> list[str]:
    """Values written as ``key: value`` (or key = value, key is value) anywhere in text.

    Markdown bold or quotes around the key or the value are allowed ("**Answer:** A").
    """
    pattern = rf"(?:{keys})[\s*]*(?:[:=：]|\bis\b)[\s\"'*“「]*({value_pattern})"
    return [m.group(1) for m in re.finditer(pattern, text, re.I)]


def first_key(obj: dict[str, Any], *names: str) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def norm(text: Any) -> str:
    return re.sub(r"[\s_\-]+", " ", str(text)).strip().strip(".!\"'*` 。！「」“”").casefold()


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
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d{1,6}\s*", raw):
        return int(raw)
    raise Unparseable(f"{str(raw)[:40]!r} is not a whole number")


def choice_number(raw: Any, shown: list[str]) -> str:
    """The candidate an option number (1 = first shown) names."""
    if isinstance(raw, str):
        match = re.fullmatch(
            r"\s*(?:option|response|candidate|joke|#|选项|選択肢)?\s*(\d+)\s*(?:番|号)?\s*\.?\s*", raw, re.I
        )
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
    if re.fullmatch(r"\s*<[^<>]*>\s*", raw):
        raise Unparseable(f"the answer repeats the prompt's placeholder {raw.strip()[:40]!r} instead of a {names[0]}")
    return raw.strip()
