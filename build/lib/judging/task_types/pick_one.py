"""Pick one of N for an LLM: the option's number, 1 for the first shown."""

import random
import re
from typing import Any

from annotation.models import Item
from annotation.task_types.pick_one import PickOne

from ..prompts.builtin import PICK_FUNNIEST
from .base import ChoiceBaselines, JudgingType, StudyFacts, by_length, json_object
from .reading import ANSWER_KEYS, Unparseable, choice_number, first_key, keyed, one

_CHOICE_KEYS = rf"{ANSWER_KEYS}|choice|pick|winner|选择|選択"
_OPTION = r"(?:option|answer|response|#|选项|選択肢)?\s*(\d+)\s*(?:番|号)?"


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

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # An option number only when it is the answer: the whole reply, labelled, or "I choose option 2".
        # A number in prose ("all 3 answers are puns") is never read as the choice.
        whole = re.fullmatch(rf"\s*\**{_OPTION}\**\s*[.。]?\s*", text, re.I)
        if whole:
            return {"choice": choice_number(whole.group(1), shown)}, "whole_answer"
        found = keyed(text, _CHOICE_KEYS, rf"{_OPTION}(?!\w|\.\d)")
        if found:
            return {"choice": choice_number(one(found, "choice"), shown)}, "labelled"
        chosen = re.findall(rf"\bI(?:'d|’d|\s+would)?\s+(?:choose|pick|go\s+with|vote\s+for)\s+{_OPTION}\b", text, re.I)
        return {"choice": choice_number(one(chosen, "choice"), shown)}, "chosen"

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"choice": rng.choice(shown)}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        return {"choice": by_length(shown, texts)[0]}
