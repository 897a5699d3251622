"""Spread up to k votes over a prompt's many responses (OOGIRI style).

Value: ``{"votes": {<candidate key>: <count>, ...}}`` with at least one and at
most ``max_votes`` votes in all; several may go to the same response when the
study allows it. Totals stay hidden from annotators while the study is open.
"""

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_noop

from .base import ConfigField, Level, Shortcut, TaskType, require_dict


def _posted_count(posted: Any, field: str) -> int:
    """A vote count the rater posted, kept when the form comes back with an error."""
    try:
        return max(0, int(posted.get(field, 0) or 0))
    except (TypeError, ValueError):
        return 0


class VoteAllocation(TaskType):
    name = "vote_allocation"
    title = "Vote allocation"
    level = Level.COUNTS
    template = "annotation/task_types/vote_allocation.html"
    candidates = (2, None)
    shuffle_candidates = True
    default_config = {"max_votes": 3, "allow_repeat": True}
    question = gettext_noop("Give your votes to the funniest responses")
    public_leaderboard = True
    gold_field = "votes"
    config_fields = (
        ConfigField(
            "max_votes",
            "whole_number",
            "Votes per item",
            "How many votes a rater spreads over an item's responses (1 to 20).",
        ),
        ConfigField("allow_repeat", "boolean", "Several votes may go to one response"),
    )

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [
            Shortcut(("1", "9"), gettext("Give a vote to the response with that number"), joiner="to"),
            Shortcut(("Shift+1", "Shift+9"), gettext("Take a vote back from that response"), joiner="to"),
            Shortcut(("Enter",), gettext("Submit your votes")),
        ]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        rows = [(c, _posted_count(posted, f"votes_{c.position}")) for c in item.candidates]
        return {"vote_rows": rows, "votes_left": max(0, config["max_votes"] - sum(n for _c, n in rows))}

    def check_config(self, config: dict[str, Any]) -> None:
        k = config.get("max_votes")
        if not isinstance(k, int) or not 1 <= k <= 20:
            raise ValidationError("max_votes must be a whole number from 1 to 20.")

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        votes: dict[str, int] = {}
        for index, key in enumerate(shown_order):
            raw = data.get(f"votes_{index}", "0") or "0"
            try:
                count = int(raw)
            except ValueError:
                raise ValidationError(gettext("Votes must be whole numbers.")) from None
            if count:
                votes[key] = count
        return {"votes": votes}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        votes = require_dict(value, "votes")["votes"]
        if not isinstance(votes, dict):
            raise ValidationError("Votes must map responses to counts.")
        cleaned: dict[str, int] = {}
        for key, count in votes.items():
            if key not in candidate_keys:
                raise ValidationError(f"Unknown response {key!r}.")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValidationError("Each vote count must be a whole number of at least 0.")
            if count > 1 and not config.get("allow_repeat", True):
                raise ValidationError(gettext("Only one vote per response is allowed in this study."))
            if count:
                cleaned[key] = count
        total = sum(cleaned.values())
        if total < 1:
            raise ValidationError(gettext("Please cast at least one vote."))
        if total > config["max_votes"]:
            raise ValidationError(
                gettext("You can cast at most %(most)d votes; you cast %(cast)d.")
                % {"most": config["max_votes"], "cast": total}
            )
        return {"votes": cleaned}
