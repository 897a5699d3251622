"""The one home for hostile input: what text the database cannot store, and limits on parsed JSON and YAML.

Every door that takes what a user typed or uploaded asks here: the middleware
(address, query string, cookies), the table readers (JSON Lines; CSV and XLSX
cells through ``annotation.importers.cells``), study files (YAML and JSON),
the API's JSON bodies and JSON form fields (``annotation.api.json_input``),
the forms' JSON config, study settings, written answers (``task_types.base``)
and the login redirect. Nobody else checks for a NUL or a surrogate, or parses a
user's JSON or YAML with the bare parsers (tests/annotation/test_hostile_input_home.py
fails if someone does). The parsers alone fail badly on hostile input:

- json and PyYAML recurse once per nesting level: a few kilobytes of ``[[[[``
  end in a RecursionError (a 500, or a traceback from ``load_study``);
- ``int()`` refuses more than 4,300 digits with a ValueError that is not a
  JSON error, and PostgreSQL's integer columns stop at 19 digits anyway;
- a YAML alias is a reference, so a file of a few hundred bytes whose anchors
  list each other nine times over stands for a billion values ("billion
  laughs"): loading is quick, but every walk over the result (our checks, the
  JSON written to the database) runs for minutes;
- PostgreSQL refuses a NUL character in text and jsonb, and a lone UTF-16
  surrogate (``"\\ud800"`` in JSON) cannot even be encoded for it (a UnicodeEncodeError);
- Python's json reads ``NaN``, ``Infinity`` and ``1e999`` (not JSON; jsonb refuses
  them) and keeps the last of two equal keys, silently dropping the first.

``load_json``, ``load_yaml`` and ``check_data`` raise ``DataTooComplex`` (a
ValueError) whose ``path`` says where (``config.points[3]``) and whose
message can be shown to the user as is. ``unstorable(text)`` says why one text
cannot be stored. The limits are settings (``FUNNYBONE_JSON_MAX_*``, README).
"""

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from django.conf import settings
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


@dataclass(frozen=True)
class DataLimits:
    max_depth: int
    max_nodes: int
    max_int_digits: int
    max_string_chars: int


def data_limits() -> DataLimits:
    return DataLimits(
        max_depth=settings.FUNNYBONE_JSON_MAX_DEPTH,
        max_nodes=settings.FUNNYBONE_JSON_MAX_NODES,
        max_int_digits=settings.FUNNYBONE_JSON_MAX_INT_DIGITS,
        max_string_chars=settings.FUNNYBONE_JSON_MAX_STRING_CHARS,
    )


class DataTooComplex(ValueError):
    """Parsed data over a limit (or not storable); ``path`` is where, ``problem`` what."""

    def __init__(self, problem: str, *, path: str = "", where: str = ""):
        self.problem = problem
        self.path = path
        shown = path if len(path) <= 80 else path[:80] + "…"
        prefix = ", ".join(part for part in (where, shown) if part)
        super().__init__(f"{prefix}: {problem}" if prefix else problem[0].upper() + problem[1:])


class _Refused:
    """What the JSON parser puts where a value is refused (an overlong integer, NaN, a repeated key),
    so the check that walks the result can say where it was."""

    def __init__(self, problem: str):
        self.problem = problem


def _too_many_digits(digits: int, limits: DataLimits) -> str:
    return f"a number with {digits:,} digits; numbers may have at most {limits.max_int_digits} digits."


def _too_deep(limits: DataLimits) -> str:
    return f"nested more than {limits.max_depth} levels deep; flatten the data."


def _too_many_values(limits: DataLimits) -> str:
    return f"holds more than {limits.max_nodes:,} values (each use of a YAML alias counts); split it up."


# PostgreSQL keeps no NUL in text or jsonb, and cannot even compare one in a query.
NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_nul(text: str) -> bool:
    return NUL in text


def has_surrogate(text: str) -> bool:
    """An unpaired UTF-16 surrogate: only a JSON escape such as \\ud800 makes one, and it cannot be encoded."""
    return _SURROGATE.search(text) is not None


def unstorable(text: str, *, nul: bool = True) -> str | None:
    """Why the database cannot store ``text`` (a NUL, a lone surrogate), phrased to follow "holds"; else None.

    ``nul=False`` leaves NUL characters to a caller that names each field holding one."""
    if nul and has_nul(text):
        return f"a NUL character (0x00) at position {text.index(NUL) + 1}; remove it."
    found = _SURROGATE.search(text)
    if found:
        return f"an unpaired UTF-16 surrogate (U+{ord(found.group()):04X}) at position {found.start() + 1}; remove it."
    return None


def _text_problem(text: str, limits: DataLimits, nul: bool = True) -> str | None:
    if len(text) > limits.max_string_chars:
        return f"a text of {len(text):,} characters; the limit is {limits.max_string_chars:,}."
    return unstorable(text, nul=nul)


def _child(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _too_long(number: int, limits: DataLimits) -> bool:
    # bit_length is cheap; str() of a huge number is not (and refused past 4,300 digits), so it
    # only runs on numbers near the limit (which is far below 4,300 digits).
    return number.bit_length() > 3.32 * limits.max_int_digits and len(str(abs(number))) > limits.max_int_digits


def check_data(
    value: Any, *, path: str = "", where: str = "", limits: DataLimits | None = None, nul: bool = True
) -> None:
    """Raise DataTooComplex when parsed data is over a limit or holds text the database refuses.

    ``nul=False`` leaves NUL characters to the caller (study files name each field that has one).

    Walks without recursion, and stops as soon as a limit is passed, so even a
    self-referencing YAML structure or an alias bomb costs at most ``max_nodes`` steps.
    """
    limits = limits or data_limits()
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    seen = 0
    while stack:
        current, here, depth = stack.pop()
        seen += 1
        if seen > limits.max_nodes:
            raise DataTooComplex(_too_many_values(limits), path=path, where=where)
        if depth > limits.max_depth:
            raise DataTooComplex(_too_deep(limits), path=here, where=where)
        if isinstance(current, dict):
            for key, inner in current.items():
                if isinstance(key, str) and (problem := _text_problem(key, limits, nul)):
                    raise DataTooComplex(f"a key holds {problem}", path=here, where=where)
                stack.append((inner, _child(here, key if isinstance(key, str) else str(key)), depth + 1))
        elif isinstance(current, list | tuple):
            stack.extend((inner, _child(here, i), depth + 1) for i, inner in enumerate(current))
        elif isinstance(current, str):
            if problem := _text_problem(current, limits, nul):
                raise DataTooComplex(problem, path=here, where=where)
        elif isinstance(current, _Refused):
            raise DataTooComplex(current.problem, path=here, where=where)
        elif isinstance(current, int) and not isinstance(current, bool) and _too_long(current, limits):
            raise DataTooComplex(_too_many_digits(len(str(abs(current))), limits), path=here, where=where)


def _not_a_number(word: str) -> _Refused:
    return _Refused(f"{word} is not a number JSON allows; write a number or null.")


def _float(text: str) -> float | _Refused:
    number = float(text)
    if math.isfinite(number):
        return number
    return _Refused(f"the number {text[:40]} is too large to store; write a smaller one.")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            repeated = key
            break
        seen.add(key)
    # Python keeps the last of the two and drops the first without a word; the author meant one of them.
    return _Refused(f"the key {repeated[:80]!r} appears twice in one object; keep one.")


def load_json(text: str, *, where: str = "", limits: DataLimits | None = None, nul: bool = True, **options: Any) -> Any:
    """``json.loads`` within the limits. A syntax error stays a json.JSONDecodeError (line and column);
    anything over a limit, NaN or Infinity, and a key written twice in one object are a DataTooComplex
    naming the place. ``options`` go to json.loads (``parse_constant`` replaces the NaN refusal)."""
    limits = limits or data_limits()

    def integer(digits: str) -> int | _Refused:
        count = len(digits.lstrip("-"))
        return _Refused(_too_many_digits(count, limits)) if count > limits.max_int_digits else int(digits)

    options = {"parse_constant": _not_a_number, "parse_float": _float, "object_pairs_hook": _object, **options}
    try:
        value = json.loads(text, parse_int=integer, **options)
    except RecursionError:
        raise DataTooComplex(_too_deep(limits), path=_top_level_key_too_deep(text, limits), where=where) from None
    check_data(value, where=where, limits=limits, nul=nul)
    return value


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]')


def _top_level_key_too_deep(text: str, limits: DataLimits) -> str:
    """The top-level key under which JSON nests too deep (json.loads gave up before any check could say)."""
    depth, key = 0, ""
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limits.max_depth:
                return key
        elif token in ("]", "}"):
            depth -= 1
        elif depth == 1 and token.endswith(":"):
            key = json.loads(token[:-1].rstrip())
    return ""


# -- YAML ------------------------------------------------------------------------------


class LimitPassed(ConstructorError):
    """Valid YAML over a limit; ``problem`` says which, ``problem_mark`` where."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting as it composes: nesting depth, values (an alias counts as
    everything it stands for), and digits of integers. Over a limit: a ConstructorError with the line."""

    def __init__(self, stream: str, limits: DataLimits):
        super().__init__(stream)
        self.limits = limits
        self._depth = 0
        self._values = 0
        self._open: set[str] = set()  # anchors of collections still being composed
        self._expanded: dict[int, int] = {}

    def _refuse(self, problem: str, mark) -> None:
        raise LimitPassed(None, None, problem, mark)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                self._refuse(f"the alias *{event.anchor} is inside the value it names.", event.start_mark)
            node = self.anchors.get(event.anchor)
            if node is not None:
                self._count(self._size(node), event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.limits.max_depth:
            self._refuse(_too_deep(self.limits), event.start_mark)
        self._count(1, event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)  # PyYAML refuses a second anchor of the same name
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)

    def _count(self, n: int, mark) -> None:
        self._values += n
        if self._values > self.limits.max_nodes:
            self._refuse(_too_many_values(self.limits), mark)

    def _size(self, node: Node) -> int:
        """How many values a finished node stands for with every alias in it expanded (memoised, no recursion)."""
        stack: list[tuple[Node, bool]] = [(node, False)]
        while stack:
            current, children_done = stack.pop()
            if id(current) in self._expanded:
                continue
            children = _children(current)
            if children_done or not children:
                total = 1 + sum(self._expanded[id(child)] for child in children)
                self._expanded[id(current)] = min(total, self.limits.max_nodes + 1)
                continue
            stack.append((current, True))
            stack.extend((child, False) for child in children if id(child) not in self._expanded)
        return self._expanded[id(node)]

    def construct_yaml_int(self, node):
        digits = len(re.sub(r"[^0-9a-fA-F]", "", str(node.value)))
        if digits > self.limits.max_int_digits:
            self._refuse(_too_many_digits(digits, self.limits), node.start_mark)
        return super().construct_yaml_int(node)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    assert isinstance(node, ScalarNode)
    return []


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def load_yaml(text: str, *, where: str = "", limits: DataLimits | None = None, nul: bool = True) -> Any:
    """``yaml.safe_load`` within the limits. Syntax errors stay yaml.YAMLError (with their line);
    a limit passed while loading is a LimitPassed (a YAMLError) with the line, one passed by what
    aliases built (depth, say) a DataTooComplex naming the place."""
    limits = limits or data_limits()
    loader = _BoundedLoader(text, limits)
    try:
        value = loader.get_single_data()
    except RecursionError:
        raise DataTooComplex(_too_deep(limits), where=where) from None
    finally:
        loader.dispose()
    check_data(value, where=where, limits=limits, nul=nul)
    return value
