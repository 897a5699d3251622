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
from django.utils.translation import gettext, gettext_noop

from ..languages import platform_text
from .base import PICK_BEST, PICK_WORST, ConfigField, Level, Shortcut, TaskType, require_dict

BEST, WORST = PICK_BEST, PICK_WORST


def _posted_position(data: Any, field: str, shown_order: list[str], label: str) -> str:
    raw = data.get(field, "")
    try:
        index = int(raw)
    except (TypeError, ValueError):
        index = -1
    if not 0 <= index < len(shown_order):
        raise ValidationError(gettext("Please mark one joke “%(label)s”.") % {"label": platform_text(label)})
    return shown_order[index]


class BestWorst(TaskType):
    name = "best_worst"
    title = "Best–worst scaling"
    level = Level.BEST_WORST
    template = "annotation/task_types/best_worst.html"
    candidates = (4, 4)
    shuffle_candidates = True
    default_config = {"best_label": gettext_noop("Funniest"), "worst_label": gettext_noop("Least funny")}
    question = gettext_noop("Which joke is the funniest, and which the least funny?")
    config_fields = (
        ConfigField("best_label", "text", "Label of the best pick", "Such as “Funniest”."),
        ConfigField("worst_label", "text", "Label of the worst pick", "Such as “Least funny”."),
    )

    def check_config(self, config: dict[str, Any]) -> None:
        for field in ("best_label", "worst_label"):
            if not isinstance(config.get(field), str) or not config[field].strip():
                raise ValidationError(f"{field} must be a short text, such as “Funniest”.")

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        mark = gettext("Mark the joke with that number “%(label)s”")
        return [
            Shortcut(("1", "4"), mark % {"label": platform_text(config["best_label"])}, joiner="to"),
            Shortcut(("Shift+1", "Shift+4"), mark % {"label": platform_text(config["worst_label"])}, joiner="to"),
            Shortcut(("Enter",), gettext("Submit your choice")),
        ]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        # A form sent back with an error keeps what the rater had marked.
        best, worst = str(posted.get(BEST, "")), str(posted.get(WORST, ""))
        return {
            "best_worst_rows": [(c, str(c.position) == best, str(c.position) == worst) for c in item.candidates],
            "best_label": platform_text(config["best_label"]),
            "worst_label": platform_text(config["worst_label"]),
        }

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        best = _posted_position(data, BEST, shown_order, config["best_label"])
        worst = _posted_position(data, WORST, shown_order, config["worst_label"])
        return {BEST: best, WORST: worst}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        picked = require_dict(value, BEST, WORST)
        best, worst = picked[BEST], picked[WORST]
        for key in (best, worst):
            if key not in candidate_keys:
                raise ValidationError(f"Unknown candidate {key!r}.")
        if best == worst:
            raise ValidationError(
                gettext("“%(best)s” and “%(worst)s” must be different jokes.")
                % {"best": platform_text(config["best_label"]), "worst": platform_text(config["worst_label"])}
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
