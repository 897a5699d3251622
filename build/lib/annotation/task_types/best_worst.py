"""Best–worst scaling: of four jokes, the rater marks the funniest and the least funny.

Value: ``{"best": <candidate key>, "worst": <candidate key>}``, two different
candidates of the item. The four are shown in a random order per rater (like
pick one), and the form posts display positions. Best–worst scaling gives
more ranking information per judgment than a single pick and avoids the
scale-use differences of a rating (Louviere et al. 2015; Kiritchenko and
Mohammad 2017 used it for sentiment and for humour-adjacent lexicons).

There is no single number per judgment: the statistics family counts each
candidate's best and worst picks (``ratings``), and agreement is measured on
the best pick and the worst pick separately, each a nominal choice among the
listed candidates (``picks``).
"""

from typing import Any

from django.core.exceptions import ValidationError

from .base import PICK_BEST, PICK_WORST, Level, Shortcut, TaskType, require_dict

BEST, WORST = PICK_BEST, PICK_WORST


def _posted_position(data: Any, field: str, shown_order: list[str], what: str) -> str:
    raw = data.get(field, "")
    try:
        index = int(raw)
    except (TypeError, ValueError):
        raise ValidationError(f"Please mark the {what} joke.") from None
    if not 0 <= index < len(shown_order):
        raise ValidationError(f"Please mark the {what} joke.")
    return shown_order[index]


class BestWorst(TaskType):
    name = "best_worst"
    title = "Best–worst scaling"
    level = Level.BEST_WORST
    template = "annotation/task_types/best_worst.html"
    candidates = (4, 4)
    shuffle_candidates = True
    default_config = {"best_label": "Funniest", "worst_label": "Least funny"}
    question = "Which joke is the funniest, and which the least funny?"

    def check_config(self, config: dict[str, Any]) -> None:
        for field in ("best_label", "worst_label"):
            if not isinstance(config.get(field), str) or not config[field].strip():
                raise ValidationError(f"{field} must be a short text, such as “Funniest”.")

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [
            Shortcut(("1", "4"), f"Mark the joke with that number “{config['best_label']}”", joiner="to"),
            Shortcut(("Shift+1", "Shift+4"), f"Mark the joke with that number “{config['worst_label']}”", joiner="to"),
            Shortcut(("Enter",), "Submit your choice"),
        ]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        # A form sent back with an error keeps what the rater had marked.
        best, worst = str(posted.get(BEST, "")), str(posted.get(WORST, ""))
        return {"best_worst_rows": [(c, str(c.position) == best, str(c.position) == worst) for c in item.candidates]}

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        best = _posted_position(data, BEST, shown_order, config["best_label"].lower())
        worst = _posted_position(data, WORST, shown_order, config["worst_label"].lower())
        return {BEST: best, WORST: worst}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        picked = require_dict(value, BEST, WORST)
        best, worst = picked[BEST], picked[WORST]
        for key in (best, worst):
            if key not in candidate_keys:
                raise ValidationError(f"Unknown candidate {key!r}.")
        if best == worst:
            raise ValidationError(
                f"The {config['best_label'].lower()} and the {config['worst_label'].lower()} must be different jokes."
            )
        return {BEST: best, WORST: worst}

    def picks(self, value: Any) -> dict[str, str]:
        return {BEST: value[BEST], WORST: value[WORST]}

    def value_label(self, value: Any) -> Any:
        if isinstance(value, dict) and BEST in value and WORST in value:
            return f"best {value[BEST]}, worst {value[WORST]}"
        return super().value_label(value)

    def chosen_keys(self, value: Any) -> list[str]:
        if isinstance(value, dict) and BEST in value and WORST in value:
            return [str(value[BEST]), str(value[WORST])]
        return []
