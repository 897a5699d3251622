"""A rating on an ordinal scale, 0–3 funniness by default.

Value: ``{"rating": <int>}`` with the rating one of the configured points.
"""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_noop

from ..languages import platform_text
from .base import ConfigField, Level, Option, TaskType, require_dict

FUNNINESS_0_3 = {
    "points": [0, 1, 2, 3],
    "labels": [
        gettext_noop("Not funny"),
        gettext_noop("Somewhat funny"),
        gettext_noop("Funny"),
        gettext_noop("Very funny"),
    ],
}


class OrdinalScale(TaskType):
    name = "ordinal"
    title = "Rating scale"
    level = Level.ORDINAL
    template = "annotation/task_types/ordinal.html"
    default_config = FUNNINESS_0_3
    question = gettext_noop("How funny is this?")
    gold_field = "rating"
    config_fields = (
        ConfigField("points", "numbers", "Points", "The scale's values, ascending, separated by commas: 0, 1, 2, 3."),
        ConfigField("labels", "lines", "Labels", "One label per point, one per line, in the same order."),
    )

    def check_config(self, config: dict[str, Any]) -> None:
        points, labels = config.get("points"), config.get("labels")
        if not isinstance(points, list) or len(points) < 2 or not all(isinstance(p, int) for p in points):
            raise ValidationError("A scale needs at least two whole-number points.")
        if len(set(points)) != len(points) or sorted(points) != points:
            raise ValidationError("Scale points must be distinct and ascending.")
        if not isinstance(labels, list) or len(labels) != len(points):
            raise ValidationError("A scale needs one label per point.")
        if len(points) > 10:
            raise ValidationError("A scale can have at most ten points (one key each).")

    def options(self, config: dict[str, Any]) -> list[Option]:
        # Keys 0-9 type the point itself when it is a single digit, else its index.
        digit_points = all(0 <= p <= 9 for p in config["points"])
        return [
            Option(str(p), f"{p} — {platform_text(label)}", str(p) if digit_points else str(i))
            for i, (p, label) in enumerate(zip(config["points"], config["labels"], strict=True))
        ]

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        raw = data.get("rating", "")
        try:
            return {"rating": int(raw)}
        except (TypeError, ValueError):
            raise ValidationError(gettext("Please choose a rating.")) from None

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        rating = require_dict(value, "rating")["rating"]
        if isinstance(rating, bool) or not isinstance(rating, int):
            if isinstance(rating, float) and rating.is_integer():
                rating = int(rating)
            else:
                raise ValidationError(f"The rating must be a whole number, got {rating!r}.")
        if rating not in config["points"]:
            points = ", ".join(str(p) for p in config["points"])
            raise ValidationError(f"The rating {rating} is outside the scale ({points}).")
        return {"rating": rating}

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        return float(value["rating"])

    def scale(self, config: dict[str, Any], *, max_candidates: Callable[[], int]) -> list[tuple[float, str]]:
        return [(float(p), f"{p} {label}") for p, label in zip(config["points"], config["labels"], strict=True)]
