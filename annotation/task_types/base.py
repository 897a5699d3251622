"""The contract every task type fulfils.

A task type knows the shape of the value it accepts, how its form posts
(by displayed position, so candidate keys never reach the page), how its value
becomes a number for the statistics, and whether candidates are shuffled.
Adding a task type means adding one module and registering it; nothing else
changes.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from django.core.exceptions import ValidationError


class Level:
    NOMINAL = "nominal"
    ORDINAL = "ordinal"
    INTERVAL = "interval"
    PAIRWISE = "pairwise"
    COUNTS = "counts"
    TEXT = "text"


@dataclass(frozen=True)
class Option:
    """A button on the annotator's form: what it posts, what it says, its key."""

    value: str
    label: str
    shortcut: str


class TaskType(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    level: ClassVar[str]
    template: ClassVar[str]
    # How many candidates an item needs: (min, max); (0, 0) for none.
    candidates: ClassVar[tuple[int, int | None]] = (0, 0)
    shuffle_candidates: ClassVar[bool] = False
    default_config: ClassVar[dict[str, Any]] = {}

    def config(self, study_config: dict[str, Any] | None) -> dict[str, Any]:
        """The study's config merged over this type's defaults, validated."""
        merged = {**self.default_config, **(study_config or {})}
        self.check_config(merged)
        return merged

    def check_config(self, config: dict[str, Any]) -> None:
        """Raise ValidationError when a study config makes no sense (nothing to check by default)."""
        return

    # -- candidates ---------------------------------------------------------
    def check_candidates(self, keys: list[str]) -> None:
        low, high = self.candidates
        if len(keys) < low or (high is not None and len(keys) > high):
            wanted = f"{low}" if low == high else f"{low} to {high if high is not None else 'many'}"
            raise ValidationError(f"{self.title} items need {wanted} candidates, got {len(keys)}.")
        if len(set(keys)) != len(keys):
            raise ValidationError("Candidate keys must be unique within an item.")

    def display_order(self, keys: list[str], rng: random.Random) -> list[str]:
        order = list(keys)
        if self.shuffle_candidates:
            rng.shuffle(order)
        return order

    # -- values -------------------------------------------------------------
    def options(self, config: dict[str, Any]) -> list[Option]:
        """Fixed answer buttons (empty for task types whose form is bespoke)."""
        return []

    @abstractmethod
    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        """Turn posted form data into a raw value (candidate keys, not positions)."""

    @abstractmethod
    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        """Return the cleaned value or raise ValidationError."""

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        """The value coded for statistics; None when the type has no numeric coding."""
        return None

    def matches_gold(self, value: Any, gold: Any, *, config: dict[str, Any]) -> bool:
        return value == gold


def require_dict(value: Any, *keys: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError("The answer must be an object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValidationError(f"The answer is missing {', '.join(missing)}.")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_storable(text: str) -> None:
    """Refuse written text the database cannot store: PostgreSQL keeps no NUL character (0x00) in
    text or jsonb, and no unpaired UTF-16 surrogate (which only a JSON escape such as \\ud800 makes)."""
    if "\x00" in text:
        raise ValidationError("Your answer contains a NUL character (0x00); please remove it.")
    if _SURROGATE.search(text):
        raise ValidationError("Your answer contains an unpaired surrogate character; please remove it.")


def posted_position(data: Any, field: str, shown_order: list[str]) -> str:
    """Map a posted display position ("0", "1", ...) back to a candidate key."""
    raw = data.get(field, "")
    try:
        index = int(raw)
    except (TypeError, ValueError):
        raise ValidationError("Please choose one of the options.") from None
    if not 0 <= index < len(shown_order):
        raise ValidationError("Please choose one of the options.")
    return shown_order[index]
