"""The template engine prompts are rendered with: Django's language, without the ways out.

A prompt template is typed by any researcher on a shared server and rendered by
the workers, so it must not read files, load code or take the process down:

- no loaders and no ``include``/``extends``/``block``/``load`` (refused when the
  template is compiled, with a message saying so), nor tags that only make sense
  in a web page or that can spin (``url``, ``csrf_token``, ``debug``, ``lorem``,
  ``widthratio``, ``partial``, ``querystring``);
- every filter's result counts against a budget, and the filters that take a
  size (``ljust``, ``rjust``, ``center``, ``stringformat``, ``floatformat``,
  ``join``) check it *before* they allocate: a post-hoc length check is too late
  for ``"a"|ljust:"1000000000"``, which has built its 1 GB string by then;
- every node rendered and every loop turn counts too, so nested loops over the
  item's text end with a message instead of running for hours.

The budget lives in a context variable set by ``limited`` around one render.
"""

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.template import Library, Node, Template, TemplateSyntaxError, defaultfilters, defaulttags
from django.template.defaulttags import ForNode
from django.template.engine import Engine

register = Library()

# Node renders plus loop turns in one render: a prompt looping over a few hundred candidates
# uses a few thousand.
MAX_STEPS = 200_000
# Characters all filters and text pieces may produce in one render, as a multiple of the
# output cap (a filter's intermediate results are thrown away, but they were allocated).
WORK_FACTOR = 10
# Digits of a number a filter may format: enough for any real value, far from a bomb.
MAX_NUMBER_DIGITS = 1000


class PromptRenderError(ValueError):
    """A template that cannot be rendered within the limits; the message says why."""


def max_chars() -> int:
    return settings.FUNNYBONE_PROMPT_MAX_CHARS


@dataclass
class Budget:
    max_chars: int
    steps_left: int
    chars_left: int

    def step(self, n: int = 1) -> None:
        self.steps_left -= n
        if self.steps_left < 0:
            raise PromptRenderError(
                f"the template does too much work (more than {MAX_STEPS:,} steps and loop turns); "
                "loop over fewer things or nest fewer loops."
            )

    def produce(self, n: int) -> None:
        if n > self.max_chars:
            raise PromptRenderError(too_long(n, self.max_chars))
        self.chars_left -= n
        if self.chars_left < 0:
            raise PromptRenderError(
                f"the template builds more than {WORK_FACTOR * self.max_chars:,} characters of text while "
                "rendering; make it produce less."
            )


def too_long(n: int, limit: int) -> str:
    return f"the rendered prompt would be {n:,} characters long; the limit is {limit:,} (FUNNYBONE_PROMPT_MAX_CHARS)."


_BUDGET: ContextVar[Budget | None] = ContextVar("prompt_budget", default=None)


@contextmanager
def limited(limit: int) -> Iterator[Budget]:
    budget = Budget(max_chars=limit, steps_left=MAX_STEPS, chars_left=WORK_FACTOR * limit)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def _budget() -> Budget:
    # Outside ``limited`` (a template rendered some other way) the limits still hold, for one call.
    return _BUDGET.get() or Budget(max_chars=max_chars(), steps_left=MAX_STEPS, chars_left=WORK_FACTOR * max_chars())


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple | dict) else 0


# -- tags ------------------------------------------------------------------------------

SAFE_TAGS = (
    "autoescape",
    "comment",
    "cycle",
    "filter",
    "firstof",
    "for",
    "if",
    "ifchanged",
    "now",
    "regroup",
    "resetcycle",
    "spaceless",
    "templatetag",
    "verbatim",
    "with",
)
REFUSED_TAGS = {
    "include": "a prompt cannot read other templates or files",
    "extends": "a prompt cannot read other templates or files",
    "block": "there is nothing to extend",
    "load": "a prompt cannot load tag libraries",
    "url": "a prompt has no web addresses to build",
    "csrf_token": "a prompt is not a web form",
    "debug": "it would print the server's internals",
    "lorem": "it can make text without limit",
    "widthratio": "use the numbers directly",
    "partialdef": "write the text out instead",
    "partial": "write the text out instead",
    "querystring": "a prompt has no web request",
}

for _name in SAFE_TAGS:
    register.tag(_name, defaulttags.register.tags[_name])


def _refuse(name: str, reason: str):
    def compile_function(parser, token):
        raise TemplateSyntaxError(f"{{% {name} %}} is not available in prompt templates: {reason}.")

    return compile_function


for _name, _reason in REFUSED_TAGS.items():
    register.tag(_name, _refuse(_name, _reason))


# -- filters ---------------------------------------------------------------------------

FLAGS = ("is_safe", "needs_autoescape", "expects_localtime")
# Filters a prompt has no use for: they turn text into HTML links, with a history of slow regexes.
LEFT_OUT_FILTERS = {"urlize", "urlizetrunc"}


def _counted(func):
    @functools.wraps(func)
    def filter_(value, *args, **kwargs):
        result = func(value, *args, **kwargs)
        _budget().produce(_size(result))
        return result

    return filter_


def _register(name: str, func, original) -> None:
    flags = {flag: getattr(original, flag) for flag in FLAGS if hasattr(original, flag)}
    register.filter(name, _counted(func), **flags)


def _width(name: str, arg: Any) -> int:
    try:
        width = int(arg)
    except (TypeError, ValueError):
        raise PromptRenderError(f"{name} needs a whole number of characters, not {str(arg)[:40]!r}.") from None
    limit = _budget().max_chars
    if width > limit:
        raise PromptRenderError(f"{name}:{width} asks for {width:,} characters; a prompt may have at most {limit:,}.")
    return width


def _padding(name: str):
    original = defaultfilters.register.filters[name]

    @functools.wraps(original)
    def padded(value, arg):
        _width(name, arg)
        return original(value, arg)

    return padded


_DIGIT_RUNS = re.compile(r"\d+")


def _stringformat(value, arg):
    # "%0999999999d" or "%.999999999f": every width and precision in the format is a size.
    for run in _DIGIT_RUNS.findall(str(arg)):
        _width("stringformat", run.lstrip("0") or "0")
    return defaultfilters.stringformat(value, arg)


def _floatformat(text, arg=-1):
    # Django turns the value into a Decimal and rounds it to the digits asked for: "1e999999999"
    # or a precision of 999999999 would build a number of that many digits.
    for run in _DIGIT_RUNS.findall(str(arg)):
        if len(run) > 4 or int(run) > MAX_NUMBER_DIGITS:
            raise PromptRenderError(f"floatformat:{arg} asks for more than {MAX_NUMBER_DIGITS} digits.")
    try:
        number = Decimal(str(text))
    except (InvalidOperation, ValueError):
        number = None
    if number is not None and number.is_finite() and abs(number.adjusted()) > MAX_NUMBER_DIGITS:
        raise PromptRenderError(f"floatformat: the number has more than {MAX_NUMBER_DIGITS} digits.")
    return defaultfilters.floatformat(text, arg)


def _join(value, arg, autoescape=True):
    if isinstance(value, list | tuple):
        budget = _budget()
        needed = len(str(arg)) * max(len(value) - 1, 0)
        if needed > budget.max_chars:
            raise PromptRenderError(too_long(needed, budget.max_chars))
    return defaultfilters.join(value, arg, autoescape=autoescape)


REPLACED = {
    "ljust": _padding("ljust"),
    "rjust": _padding("rjust"),
    "center": _padding("center"),
    "stringformat": _stringformat,
    "floatformat": _floatformat,
    "join": _join,
}

for _name, _func in defaultfilters.register.filters.items():
    if _name not in LEFT_OUT_FILTERS:
        _register(_name, REPLACED.get(_name, _func), _func)


# -- the engine ------------------------------------------------------------------------


class _CountedSequence:
    """A ``for`` loop's sequence that counts its length as loop turns before the loop starts."""

    def __init__(self, sequence):
        self.sequence = sequence

    def resolve(self, context, ignore_failures=False):
        values = self.sequence.resolve(context, ignore_failures=ignore_failures)
        if values is not None and not hasattr(values, "__len__"):
            values = list(values)
        _budget().step(len(values) if values is not None else 0)
        return values

    def __str__(self) -> str:
        return str(self.sequence)


def _count(node: Node, *, leaf: bool) -> None:
    render_annotated = node.render_annotated

    def counted(context):
        budget = _budget()
        budget.step()
        out = render_annotated(context)
        if leaf:
            # Only leaves make new text: a parent's output is its children's, already counted.
            budget.produce(len(out))
        return out

    node.render_annotated = counted


class PromptEngine(Engine):
    default_builtins: list[str] = []

    def __init__(self, *, string_if_invalid: str = "") -> None:
        super().__init__(
            loaders=[],
            autoescape=False,
            debug=False,
            string_if_invalid=string_if_invalid,
            builtins=["judging.prompts.sandbox"],
        )

    def compile(self, source: str) -> Template:
        """The template with every node and loop counted against the render's budget."""
        try:
            template = self.from_string(source)
        except RecursionError:
            raise TemplateSyntaxError("the template nests its tags too deeply.") from None
        for node in template.nodelist.get_nodes_by_type(Node):
            children = [getattr(node, name, None) for name in node.child_nodelists]
            _count(node, leaf=not any(children))
            if isinstance(node, ForNode):
                node.sequence = _CountedSequence(node.sequence)
        return template
