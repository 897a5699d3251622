"""Spread up to k votes over a prompt's many responses (OOGIRI style).

Value: ``{"votes": {<candidate key>: <count>, ...}}`` with at least one and at
most ``max_votes`` votes in all; several may go to the same response when the
study allows it. Totals stay hidden from annotators while the study is open.
"""

from typing import Any

from django.core.exceptions import ValidationError

from .base import Level, TaskType, require_dict


class VoteAllocation(TaskType):
    name = "vote_allocation"
    title = "Vote allocation"
    level = Level.COUNTS
    template = "annotation/task_types/vote_allocation.html"
    candidates = (2, None)
    shuffle_candidates = True
    default_config = {"max_votes": 3, "allow_repeat": True}

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
                raise ValidationError("Votes must be whole numbers.") from None
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
                raise ValidationError("Only one vote per response is allowed in this study.")
            if count:
                cleaned[key] = count
        total = sum(cleaned.values())
        if total < 1:
            raise ValidationError("Please cast at least one vote.")
        if total > config["max_votes"]:
            raise ValidationError(f"You can cast at most {config['max_votes']} votes; you cast {total}.")
        return {"votes": cleaned}
