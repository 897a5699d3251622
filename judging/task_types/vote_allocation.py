"""Vote allocation for an LLM: the numbers of the responses it votes for, repeated for extra votes."""

import random
import re
from collections import Counter
from typing import Any

from annotation.models import Item
from annotation.task_types.vote_allocation import VoteAllocation

from ..prompts.builtin import VOTE_ALLOCATION
from .answer_text import plain, statements
from .base import JudgingType, Labelled, StudyFacts, by_length, by_position, json_object
from .reading import ANSWER_KEYS, Unparseable, choice_number, first_key, integer, keyed, one


class VoteAllocationJudging(JudgingType):
    name = VoteAllocation.name
    default_template = VOTE_ALLOCATION.name
    answer_keys = ("votes",)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        votes = {
            "type": "array",
            "items": {"type": "integer", "minimum": 1, "maximum": n_candidates},
            "minItems": 1,
            "maxItems": int(config.get("max_votes", 3)),
        }
        return json_object({"votes": votes}, ["votes"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "votes", "vote", "answer")
        counts: dict[str, int] = {}
        if isinstance(raw, list):
            for entry in raw:
                key = choice_number(entry, shown)
                counts[key] = counts.get(key, 0) + 1
        elif isinstance(raw, dict):
            for number, count in raw.items():
                counts[choice_number(number, shown)] = integer(count)
        else:
            raise Unparseable("the JSON answer has no list of votes")
        return {"votes": counts}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # Only a labelled list ("Votes: 1, 3, 3"): loose numbers in prose are counts, never votes.
        lists = [
            re.findall(r"\d+", found)
            for clause in statements(plain(text))
            for found in keyed(
                clause, rf"{ANSWER_KEYS}|votes?|投票|票", r"\d+(?:\s*(?:,|、|and|和|と)\s*\d+)*(?!\w|\.\d)"
            )
        ]
        if not lists:
            raise Unparseable("no labelled list of votes found in the answer")
        votes = one([tuple(found) for found in lists], "list of vote")
        return self.from_json({"votes": list(votes)}, shown=shown, config=config)[0], "labelled"

    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        positions = Counter()
        for v, keys in values:
            for key, count in v["votes"].items():
                if key in keys:
                    positions[keys.index(key)] += count
        return {"position": min(positions, key=lambda p: (-positions[p], p))} if positions else None

    def constant_answer(
        self, constant: dict[str, Any], *, shown: list[str], keys: list[str], config: dict[str, Any]
    ) -> dict[str, Any]:
        return {"votes": {by_position(constant["position"], shown, keys): 1}}

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        k = int(config.get("max_votes", 3))
        picks = (
            [rng.choice(shown) for _ in range(k)]
            if config.get("allow_repeat", True)
            else rng.sample(shown, min(k, len(shown)))
        )
        return {"votes": dict(Counter(picks))}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        return {"votes": dict.fromkeys(by_length(shown, texts)[: int(config.get("max_votes", 3))], 1)}
