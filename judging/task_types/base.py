"""The judging side of a task type: how an LLM is asked, how its answer is read, its baselines.

Registered in ``judging.task_types`` under the annotation task type's name;
the prompt renderer, the answer parser and the baseline judges look the type
up there instead of comparing names.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from annotation.models import Item
from annotation.task_types import TIE

from .reading import Unparseable


class NoBaseline(Exception):
    pass


@dataclass
class StudyFacts:
    """What the constant and length baselines need to know about the whole study, read once per run."""

    constant: dict[str, Any] = field(default_factory=dict)
    constant_source: str = ""
    lengths: list[int] = field(default_factory=list)


#: A study's labelled values for the constant baseline: (value, the item's candidate keys in listed order).
Labelled = list[tuple[Any, list[str]]]


def json_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def by_position(position: Any, shown: list[str], keys: list[str]) -> str:
    """The candidate at a listed position (a tie stays a tie; a position past the end: the first shown)."""
    if position == TIE:
        return TIE
    return keys[position] if position < len(keys) else shown[0]


def by_length(shown: list[str], texts: dict[str, str]) -> list[str]:
    """Candidate keys from the shortest text to the longest; equal lengths keep the shown order."""
    return sorted(shown, key=lambda key: (len(texts[key]), shown.index(key)))


class JudgingType:
    """Defaults fit a type with no structured answer and no baseline; each type overrides what it has."""

    #: The annotation task type's name (``annotation.task_types``).
    name: ClassVar[str]
    #: The built-in prompt template (``judging.prompts.builtin``) a judge uses unless it names another.
    default_template: ClassVar[str]
    #: Why no baseline answers this type ("" when the baselines below do).
    no_baseline: ClassVar[str] = ""
    #: The keys the output schema names for the answer itself; read through another name, the method says so.
    answer_keys: ClassVar[tuple[str, ...]] = ()
    #: The answer is prose by nature (an explanation): hedging words are content, not a hedge between answers.
    reads_prose: ClassVar[bool] = False

    # -- asking -------------------------------------------------------------
    def prompt_variables(self, *, item: Item, config: dict[str, Any]) -> dict[str, Any]:
        """Template variables whose value depends on this type (the shared ones are in ``judging.prompts.render``)."""
        return {"headline": item.text, "token": ""}

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        """The JSON schema an answer must follow (None: free text)."""
        return None

    # -- reading the answer ---------------------------------------------------
    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        """(raw value, provenance extras) from the answer's JSON object; raise Unparseable."""
        raise Unparseable(f"no parser for task type {self.name!r}")

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        """(raw value, name of the pattern that read it) from an unambiguous plain-text answer; raise Unparseable.

        Called for answers holding no JSON, after refusals and hedges were refused, and on the prose
        around a JSON answer to check that it does not take the JSON back. Build on
        ``answer_text.read_statements`` so that questions, conditionals and contradictions are read alike.
        """
        raise Unparseable("the answer is not the JSON object that was asked for")

    # -- baselines --------------------------------------------------------------
    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        """The constant baseline's study-wide answer from labelled values (non-empty); None if they give none."""
        raise NoBaseline(f"No baseline answers {self.name} items.")

    def constant_without_labels(self, *, config: dict[str, Any]) -> dict[str, Any]:
        """The constant when the study has neither human labels nor gold answers."""
        return {"position": 0}

    def constant_answer(
        self, constant: dict[str, Any], *, shown: list[str], keys: list[str], config: dict[str, Any]
    ) -> dict[str, Any]:
        """The constant baseline's value on one item."""
        return constant

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        raise NoBaseline(f"No baseline answers {self.name} items.")

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        """The length baseline's value: shorter is funnier."""
        raise NoBaseline(f"No baseline answers {self.name} items.")


class ChoiceBaselines:
    """The constant answer of a type whose value is ``{"choice": key}`` (pairwise, pick one)."""

    def constant_answer(
        self, constant: dict[str, Any], *, shown: list[str], keys: list[str], config: dict[str, Any]
    ) -> dict[str, Any]:
        if "position" not in constant:
            return constant
        choice = by_position(constant["position"], shown, keys)
        if choice == TIE and not config.get("allow_tie", True):
            choice = shown[0]
        return {"choice": choice}

    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        positions = Counter(
            TIE if v["choice"] == TIE else keys.index(v["choice"]) for v, keys in values if v["choice"] in [*keys, TIE]
        )
        if not positions:
            return None
        # Most frequent; equal counts go to the earlier position, then to the tie.
        return {"position": min(positions, key=lambda p: (-positions[p], str(p)))}
