"""Reading a judge's answer into a task type's value.

First the structured answer: a JSON object (as the schema asked for), found
even inside code fences or surrounding chatter. Second, a tolerant fallback
that accepts only unambiguous plain-text answers ("B", "Rating: 2", a lone
label). Anything else is unparseable, with the reason — never silently a tie,
a zero or a default label. Every value is finally checked by the task type's
own ``validate``, exactly as a human's answer would be.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from annotation.task_types import TIE, get_task_type

from .prompts.builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS


@dataclass
class Parsed:
    value: Any = None
    method: str = ""  # "json" or "fallback" when parsed
    error: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


class Unparseable(Exception):
    pass


# -- finding JSON -------------------------------------------------------------

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


def _first_key(obj: dict[str, Any], *names: str) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def _norm(text: Any) -> str:
    return re.sub(r"[\s_\-]+", " ", str(text)).strip().strip(".!\"'*` ").casefold()


def _keyed(text: str, keys: str, value_pattern: str) -> list[str]:
    """Values written as ``key: value`` (or key = value, key is value) anywhere in text."""
    pattern = rf"(?:{keys})\s*(?:[:=]|is)\s*[\"'*]*\s*({value_pattern})"
    return [m.group(1) for m in re.finditer(pattern, text, re.I)]


def _one(found: list[Any], what: str) -> Any:
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise Unparseable(f"no {what} found in the answer")
    raise Unparseable(f"conflicting {what}s in the answer: {', '.join(map(str, distinct))}")


# -- per task type --------------------------------------------------------------

_FIRST = {"a", "1", "first", "joke a", "option a", "explanation 1", "response a", "candidate a"}
_SECOND = {"b", "2", "second", "joke b", "option b", "explanation 2", "response b", "candidate b"}
_TIES = {"tie", "equal", "equally good", "both", "draw", "same", "neither"}


def _pairwise_position(raw: Any) -> int | str:
    word = _norm(raw)
    if word in _FIRST:
        return 0
    if word in _SECOND:
        return 1
    if word in _TIES:
        return TIE
    raise Unparseable(f"the decision {str(raw)[:40]!r} is not A, B or a tie")


def _pairwise_from_json(obj: dict[str, Any], shown: list[str]) -> tuple[Any, dict[str, Any]]:
    raw = _first_key(obj, "decision", "winner", "answer", "choice", "verdict", "funnier")
    if raw is None:
        raise Unparseable("the JSON answer has no decision")
    position = _pairwise_position(raw)
    extras: dict[str, Any] = {}
    reasoning = _first_key(obj, "reasoning", "reason", "explanation", "rationale")
    if isinstance(reasoning, str):
        extras["reasoning"] = reasoning
    features, dropped = {}, []
    for name, aliases, vocabulary in (
        ("humor_mechanisms", ("humor_mechanisms", "mechanisms", "humour_mechanisms"), HUMOR_MECHANISMS),
        ("delivery_features", ("delivery_features", "delivery"), DELIVERY_FEATURES),
        ("failure_features", ("failure_features", "loser_features", "failure_modes", "failures"), FAILURE_FEATURES),
    ):
        listed = _first_key(obj, *aliases)
        if isinstance(listed, str):
            listed = [listed]
        kept = []
        for entry in listed if isinstance(listed, list) else []:
            word = _norm(entry).replace(" ", "_")
            word = "cliché" if word in ("cliche", "cliches", "clichés") else word
            (kept if word in vocabulary and word not in kept else dropped).append(word)
        features[name] = kept[:3]
    extras["features"] = features
    if dropped:
        extras["features_dropped"] = dropped[:12]
    return _pairwise_value(position, shown), extras


def _pairwise_value(position: int | str, shown: list[str]) -> dict[str, Any]:
    return {"choice": TIE if position == TIE else shown[position]}


def _pairwise_fallback(text: str, shown: list[str]) -> Any:
    stripped = _norm(text)
    if stripped in _FIRST | _SECOND | _TIES:
        return _pairwise_value(_pairwise_position(stripped), shown)
    found = _keyed(text, r"decision|winner|answer|verdict", r"tie|equal|[AB12]\b")
    return _pairwise_value(_one([_pairwise_position(f) for f in found], "decision"), shown)


def _integer(raw: Any) -> int:
    if isinstance(raw, bool):
        raise Unparseable(f"{raw!r} is not a number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise Unparseable(f"{str(raw)[:40]!r} is not a whole number")


def _ordinal_from_json(obj: dict[str, Any]) -> Any:
    raw = _first_key(obj, "rating", "score", "answer", "funniness", "grade")
    if raw is None:
        raise Unparseable("the JSON answer has no rating")
    return {"rating": _integer(raw)}


def _ordinal_fallback(text: str) -> Any:
    if re.fullmatch(r"\s*-?\d+\s*\.?\s*", text):
        return {"rating": int(text.strip().rstrip("."))}
    keyed = _keyed(text, r"rating|score|answer|funniness|grade", r"-?\d+")
    if keyed:
        return {"rating": int(_one(keyed, "rating"))}
    numbers = re.findall(r"(?<![\w.])-?\d+(?![\w.])", text)
    if len(numbers) == 1:
        return {"rating": int(numbers[0])}
    raise Unparseable("no single rating found in the answer" if not numbers else "several numbers in the answer")


def _binary_label(raw: Any, config: dict[str, Any]) -> str:
    word = _norm(raw)
    for option in config["options"]:
        if word in (_norm(option["value"]), _norm(option["label"])):
            return str(option["value"])
    raise Unparseable(f"the label {str(raw)[:40]!r} is not one of the options")


def _binary_fallback(text: str, config: dict[str, Any]) -> Any:
    options = config["options"]
    word = _norm(text)
    values = [str(o["value"]) for o in options]
    if word in ("yes", "no") and config.get("positive") in values:
        negative = next(v for v in values if v != config["positive"])
        return {"label": config["positive"] if word == "yes" else negative}
    keyed = _keyed(text, r"label|answer|verdict|decision", r"[^\n\"',.}]+")
    if keyed:
        return {"label": _one([_binary_label(k, config) for k in keyed], "label")}
    # Longest phrases first, blanked once counted, so "not funny" never also counts as "funny".
    haystack = f" {_norm(text)} "
    phrases = sorted(
        ((_norm(p), str(o["value"])) for o in options for p in (o["value"], o["label"])),
        key=lambda pair: -len(pair[0]),
    )
    found = []
    for phrase, value in phrases:
        pattern = rf"(?<![\w]){re.escape(phrase)}(?![\w])"
        if re.search(pattern, haystack):
            found.append(value)
            haystack = re.sub(pattern, " ", haystack)
    return {"label": _one(found, "label")}


def _choice_number(raw: Any, shown: list[str]) -> str:
    if isinstance(raw, str):
        match = re.fullmatch(r"\s*(?:option|response|candidate|joke|#)?\s*(\d+)\s*\.?\s*", raw, re.I)
        if not match:
            raise Unparseable(f"the choice {raw[:40]!r} is not an option number")
        raw = match.group(1)
    number = _integer(raw)
    if not 1 <= number <= len(shown):
        raise Unparseable(f"the choice {number} is not between 1 and {len(shown)}")
    return shown[number - 1]


def _pick_fallback(text: str, shown: list[str]) -> Any:
    if re.fullmatch(r"\s*(?:option\s*)?\d+\s*\.?\s*", text, re.I):
        return {"choice": _choice_number(text, shown)}
    keyed = _keyed(text, r"choice|answer|pick|winner", r"(?:option\s*)?\d+")
    return {"choice": _choice_number(_one(keyed, "choice"), shown)}


def _votes_from_json(obj: dict[str, Any], shown: list[str]) -> Any:
    raw = _first_key(obj, "votes", "vote", "answer")
    counts: dict[str, int] = {}
    if isinstance(raw, list):
        for entry in raw:
            key = _choice_number(entry, shown)
            counts[key] = counts.get(key, 0) + 1
    elif isinstance(raw, dict):
        for number, count in raw.items():
            counts[_choice_number(number, shown)] = _integer(count)
    else:
        raise Unparseable("the JSON answer has no list of votes")
    return {"votes": counts}


def _text_field(obj: dict[str, Any], *names: str) -> str:
    raw = _first_key(obj, *names)
    if not isinstance(raw, str) or not raw.strip():
        raise Unparseable(f"the JSON answer has no {names[0]}")
    return raw.strip()


def _from_json(task_type: str, obj: dict[str, Any], shown: list[str], config: dict[str, Any]):
    if task_type == "pairwise":
        return _pairwise_from_json(obj, shown)
    if task_type == "ordinal":
        return _ordinal_from_json(obj), {}
    if task_type == "binary":
        raw = _first_key(obj, "label", "answer", "verdict", "decision", "classification")
        if raw is None:
            raise Unparseable("the JSON answer has no label")
        extras = {"reasoning": obj["reasoning"]} if isinstance(obj.get("reasoning"), str) else {}
        return {"label": _binary_label(raw, config)}, extras
    if task_type == "pick_one":
        raw = _first_key(obj, "choice", "answer", "pick", "winner")
        if raw is None:
            raise Unparseable("the JSON answer has no choice")
        return {"choice": _choice_number(raw, shown)}, {}
    if task_type == "vote_allocation":
        return _votes_from_json(obj, shown), {}
    if task_type == "micro_edit":
        return {"replacement": _text_field(obj, "replacement", "word", "answer").strip("\"'")}, {}
    if task_type == "explanation":
        return {"text": _text_field(obj, "text", "explanation", "answer")}, {}
    raise Unparseable(f"no parser for task type {task_type!r}")


def _fallback(task_type: str, text: str, shown: list[str], config: dict[str, Any]) -> Any:
    if task_type == "pairwise":
        return _pairwise_fallback(text, shown)
    if task_type == "ordinal":
        return _ordinal_fallback(text)
    if task_type == "binary":
        return _binary_fallback(text, config)
    if task_type == "pick_one":
        return _pick_fallback(text, shown)
    if task_type == "micro_edit" and re.fullmatch(r"\s*[\"']?[^\s<>\"']+[\"']?\s*\.?\s*", text):
        return {"replacement": text.strip().strip(".\"'")}
    if task_type == "explanation" and text.strip() and find_json_object(text) is None:
        return {"text": text.strip()}
    raise Unparseable("the answer is not the JSON object that was asked for")


def parse_answer(
    *, task_type: str, text: str | None, shown_order: list[str], config: dict[str, Any], item_text: str = ""
) -> Parsed:
    """Parse and validate one answer; ``Parsed.error`` says why when it fails."""
    if text is None or not text.strip():
        return Parsed(error="the answer is empty")
    kind = get_task_type(task_type)
    obj = find_json_object(text)
    errors = []
    attempts = [("json", lambda: _from_json(task_type, obj, shown_order, config))] if obj is not None else []
    # The fallback only reads plain text: an object that failed is not re-read word by word.
    if obj is None:
        attempts.append(("fallback", lambda: (_fallback(task_type, text, shown_order, config), {})))
    for method, attempt in attempts:
        try:
            value, extras = attempt()
            value = kind.validate(value, candidate_keys=shown_order, config=config, item_text=item_text)
        except Unparseable as exc:
            errors.append(str(exc))
            continue
        except ValidationError as exc:
            errors.append("; ".join(exc.messages))
            continue
        return Parsed(value=value, method=method, extras=extras)
    return Parsed(error=errors[-1] if errors else "nothing to parse")
