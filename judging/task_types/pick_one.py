"""Pick one of N for an LLM: the option's number, 1 for the first shown."""

import random
import re
from typing import Any

from annotation.models import Item
from annotation.task_types.pick_one import PickOne

from ..prompts.builtin import PICK_FUNNIEST
from .base import ChoiceBaselines, JudgingType, StudyFacts, by_length, json_object
from .reading import Unparseable, choice_number, first_key, keyed, one


class PickOneJudging(ChoiceBaselines, JudgingType):
    name = PickOne.name
    default_template = PICK_FUNNIEST.name

    def output_schema(self, *, config: dict[str, Any], n_candidates: int) -> dict[str, Any] | None:
        return json_object({"choice": {"type": "integer", "minimum": 1, "maximum": n_candidates}}, ["choice"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "choice", "answer", "pick", "winner")
        if raw is None:
            raise Unparseable("the JSON answer has no choice")
        return {"choice": choice_number(raw, shown)}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> Any:
        if re.fullmatch(r"\s*(?:option\s*)?\d+\s*\.?\s*", text, re.I):
            return {"choice": choice_number(text, shown)}
        found = keyed(text, r"choice|answer|pick|winner", r"(?:option\s*)?\d+")
        return {"choice": choice_number(one(found, "choice"), shown)}

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"choice": rng.choice(shown)}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        return {"choice": by_length(shown, texts)[0]}
