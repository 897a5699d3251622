"""Turning a template and an item into chat messages, and the answer's JSON schema.

Templates are rendered by Django's template engine with autoescaping off (the
output is plain text for a model, not HTML) and with only plain strings, numbers
and lists in the context, so a template can read the item but call nothing.

Variables every template may use:
    prompt, text        the item's prompt (setup, headline) and text
    candidates          the options in the order shown: number, label, text, context
    n                   how many candidates
    a, b                the first and second candidate shown (pairwise)
    scale               ordinal points: point, label;  points: "0, 1, 2, 3"
    labels              binary options: value, label;  label_values: "funny, not_funny"
    question            the study's question (pick one)
    max_votes           vote allocation
    headline, token     micro-edit headline with the token marked, and the token
    mechanisms, delivery, failures   HumorRank's closed vocabularies, comma-separated
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.core.exceptions import ValidationError
from django.template import Context, Template, TemplateSyntaxError

from annotation.models import Item

# The package, not its names: judging.task_types imports the built-in templates beside this module.
from .. import task_types
from .builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS
from .sandbox import PromptEngine, PromptRenderError, limited, max_chars, too_long

_ENGINE = PromptEngine()
_MISSING = "\x00missing:%s\x00"
_CHECKING_ENGINE = PromptEngine(string_if_invalid=_MISSING)

VARIABLES = (
    "prompt",
    "text",
    "candidates",
    "n",
    "a",
    "b",
    "a_context",
    "b_context",
    "scale",
    "points",
    "labels",
    "label_values",
    "question",
    "max_votes",
    "headline",
    "token",
    "mechanisms",
    "delivery",
    "failures",
)
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class CandidateView:
    key: str
    text: str
    context: str


def build_context(
    *, item: Item, candidates: list[CandidateView], config: dict[str, Any], task_type: str
) -> dict[str, Any]:
    """The variables a template sees for one item, with candidates in the order shown."""
    shown = [
        {
            "number": i + 1,
            "label": LETTERS[i] if i < len(LETTERS) else str(i + 1),
            "text": c.text,
            "context": c.context,
        }
        for i, c in enumerate(candidates)
    ]
    scale = [
        {"point": p, "label": label}
        for p, label in zip(config.get("points", []), config.get("labels", []), strict=False)
    ]
    options = [{"value": str(o["value"]), "label": o["label"]} for o in config.get("options", [])]
    return {
        "prompt": item.prompt,
        "text": item.text,
        "candidates": shown,
        "n": len(shown),
        "a": shown[0]["text"] if shown else "",
        "b": shown[1]["text"] if len(shown) > 1 else "",
        "a_context": shown[0]["context"] if shown else "",
        "b_context": shown[1]["context"] if len(shown) > 1 else "",
        "scale": scale,
        "points": ", ".join(str(p["point"]) for p in scale),
        "labels": options,
        "label_values": ", ".join(o["value"] for o in options),
        "question": config.get("question", ""),
        "max_votes": config.get("max_votes", ""),
        "mechanisms": ", ".join(HUMOR_MECHANISMS),
        "delivery": ", ".join(DELIVERY_FEATURES),
        "failures": ", ".join(FAILURE_FEATURES),
        # Variables whose value depends on the task type (headline, token), from its judging side.
        **task_types.judging_type(task_type).prompt_variables(item=item, config=config),
    }


@lru_cache(maxsize=64)
def _compiled(source: str, checking: bool = False) -> Template:
    # Judge runs render the same few templates for every item; compile each once per process.
    return (_CHECKING_ENGINE if checking else _ENGINE).compile(source)


def _render(source: str, context: dict[str, Any], *, checking: bool = False) -> str:
    """Render within the limits (see ``sandbox``); PromptRenderError says what went wrong."""
    limit = max_chars()
    if len(source) > limit:
        raise PromptRenderError(f"the template is {len(source):,} characters long; the limit is {limit:,}.")
    try:
        template = _compiled(source, checking)
        with limited(limit):
            out = template.render(Context(context, autoescape=False))
    except PromptRenderError:
        raise
    except TemplateSyntaxError as exc:
        raise PromptRenderError(f"the template does not compile: {exc}") from None
    except RecursionError:
        raise PromptRenderError("the template nests too deeply to render.") from None
    except Exception as exc:  # noqa: BLE001 - a filter fed the wrong kind of value; say which error
        raise PromptRenderError(f"the template could not be rendered: {type(exc).__name__}: {exc}") from None
    if len(out) > limit:
        raise PromptRenderError(too_long(len(out), limit))
    return out


def render(source: str, context: dict[str, Any]) -> str:
    return _render(source, context).strip()


def render_messages(*, system: str, user: str, context: dict[str, Any]) -> list[dict[str, str]]:
    messages = []
    if system.strip():
        messages.append({"role": "system", "content": render(system, context)})
    messages.append({"role": "user", "content": render(user, context)})
    return messages


def sample_context(task_type: str) -> dict[str, Any]:
    """A filled-in context for checking that a template renders."""
    item = Item(prompt="A headline", text="A <joke/> to judge")
    candidates = [CandidateView("x", "First option", ""), CandidateView("y", "Second option", "")]
    config = {
        "points": [0, 1, 2, 3],
        "labels": ["Not funny", "Somewhat funny", "Funny", "Very funny"],
        "options": [{"value": "funny", "label": "Funny"}, {"value": "not_funny", "label": "Not funny"}],
        "question": "Which one is the funniest?",
        "max_votes": 3,
    }
    return build_context(item=item, candidates=candidates, config=config, task_type=task_type)


def check_template(*, system: str, user: str, task_type: str | None) -> None:
    """Render both parts with sample variables, as a run would; ValidationError naming the field when one
    does not compile, names an unknown variable, or breaks the limits (size, work, refused tags).

    ``task_type`` None checks a generator's prompt, which sees only ``prompt`` and ``text``.
    """
    if not user.strip():
        raise ValidationError({"user_text": "The user message template is empty."})
    if task_type is None:
        context: dict[str, Any] = {"prompt": "A headline", "text": "A headline"}
        known = ("prompt", "text")
    else:
        context, known = sample_context(task_type), VARIABLES
    for part, field, source in (("system", "system_text", system), ("user", "user_text", user)):
        try:
            out = _render(source, context, checking=True)
        except PromptRenderError as exc:
            raise ValidationError({field: f"The {part} template cannot be used: {exc}"}) from None
        if "\x00missing:" in out:
            raise ValidationError(
                {
                    field: f"The {part} template uses a variable that does not exist. "
                    f"Known variables: {', '.join(known)}."
                }
            )


def default_schema(
    *, task_type: str, config: dict[str, Any], n_candidates: int, item_text: str = ""
) -> dict[str, Any] | None:
    """The JSON schema an answer of this task type must follow about one item (None: free text)."""
    return task_types.judging_type(task_type).output_schema(
        config=config, n_candidates=n_candidates, item_text=item_text
    )
