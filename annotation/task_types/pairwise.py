"""Pairwise choice between two candidates, with an optional tie.

Value: ``{"choice": <candidate key>}`` or ``{"choice": "tie"}``. Coded for
statistics as 1.0 when the item's first candidate wins, 0.0 when the second
does and 0.5 for a tie.
"""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop

from ..languages import platform_text
from .base import TIE, ConfigField, Level, Option, TaskType, posted_position, require_dict

# Keys a-b-t press the first, second and tie buttons as well as 1-2-3.
LETTERS = {"0": "a", "1": "b", TIE: "t"}


class PairwiseChoice(TaskType):
    name = "pairwise"
    title = "Pairwise choice"
    level = Level.PAIRWISE
    template = "annotation/task_types/pairwise.html"
    candidates = (2, 2)
    shuffle_candidates = True
    # Labels and question are translated when shown (languages.platform_text); "A" and "B" read the same everywhere.
    default_config = {"labels": ["A", "B", gettext_noop("Tie")], "allow_tie": True, "side_by_side": True}
    question = gettext_noop("Which one is funnier?")
    gold_field = "choice"
    config_fields = (
        ConfigField("labels", "lines", "Button labels", "Three lines: the first, the second and the tie.", count=3),
        ConfigField("allow_tie", "boolean", "Allow a tie"),
        ConfigField("side_by_side", "boolean", "Show the two side by side on wide screens"),
    )

    def check_config(self, config: dict[str, Any]) -> None:
        labels = config.get("labels")
        if not isinstance(labels, list) or len(labels) != 3 or not all(isinstance(x, str) and x for x in labels):
            raise ValidationError("Pairwise labels must be three names: first, second and tie.")

    def options(self, config: dict[str, Any]) -> list[Option]:
        first, second, tie = config["labels"]
        options = [Option("0", first, "1", LETTERS["0"]), Option("1", second, "2", LETTERS["1"])]
        if config.get("allow_tie", True):
            options.append(Option(TIE, tie, "3", LETTERS[TIE]))
        return options

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        first, second, _tie = config["labels"]
        return {"sides": list(zip((platform_text(first), platform_text(second)), item.candidates, strict=False))}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        if data.get("choice") == TIE:
            return {"choice": TIE}
        return {"choice": posted_position(data, "choice", shown_order)}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        choice = require_dict(value, "choice")["choice"]
        if choice == TIE:
            if not config.get("allow_tie", True):
                raise ValidationError("This study does not allow a tie.")
            return {"choice": TIE}
        if choice not in candidate_keys:
            raise ValidationError(f"Unknown candidate {choice!r}.")
        return {"choice": choice}

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        """The answer's outcome for the item's first candidate; None when it names neither candidate nor a tie.

        This is the one reading of a pairwise answer: rankings, agreement, position
        consistency and exports all ask it (through ``ratings.pairwise``).
        """
        choice = value.get("choice") if isinstance(value, dict) else None
        if choice == TIE:
            return 0.5
        if len(candidate_keys) != 2 or choice not in candidate_keys:
            return None
        return 1.0 if choice == candidate_keys[0] else 0.0

    def scale(self, config: dict[str, Any], *, max_candidates: Callable[[], int]) -> list[tuple[float, str]]:
        return [(0.0, "second wins"), (0.5, "tie"), (1.0, "first wins")]

    def coding_note(self, config: dict[str, Any]) -> str:
        return "Coding: 1 = the item's first candidate chosen, 0 = the second, 0.5 = a tie."
