"""A rating on a scale for an LLM: the point as a number, in JSON or as a lone digit."""

import bisect
import random
import re
import statistics
from typing import Any

from annotation.models import Item
from annotation.task_types.ordinal import OrdinalScale

from ..prompts.builtin import FUNNINESS_DIGIT
from .base import JudgingType, Labelled, StudyFacts, json_object
from .reading import Unparseable, first_key, integer, keyed, one


class OrdinalJudging(JudgingType):
    name = OrdinalScale.name
    default_template = FUNNINESS_DIGIT.name

    def output_schema(self, *, config: dict[str, Any], n_candidates: int) -> dict[str, Any] | None:
        return json_object({"rating": {"type": "integer", "enum": list(config.get("points", []))}}, ["rating"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "rating", "score", "answer", "funniness", "grade")
        if raw is None:
            raise Unparseable("the JSON answer has no rating")
        return {"rating": integer(raw)}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> Any:
        if re.fullmatch(r"\s*-?\d+\s*\.?\s*", text):
            return {"rating": int(text.strip().rstrip("."))}
        found = keyed(text, r"rating|score|answer|funniness|grade", r"-?\d+")
        if found:
            return {"rating": int(one(found, "rating"))}
        numbers = re.findall(r"(?<![\w.])-?\d+(?![\w.])", text)
        if len(numbers) == 1:
            return {"rating": int(numbers[0])}
        raise Unparseable("no single rating found in the answer" if not numbers else "several numbers in the answer")

    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        mean = statistics.fmean(v["rating"] for v, _ in values)
        return {"rating": min(config["points"], key=lambda p: (abs(p - mean), p))}

    def constant_without_labels(self, *, config: dict[str, Any]) -> dict[str, Any]:
        points = config["points"]
        return {"rating": points[(len(points) - 1) // 2]}

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"rating": rng.choice(config["points"])}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        lengths = facts.lengths or [len(item.text)]
        # Share of the study's texts strictly shorter than this one: 0 for the shortest.
        rank = bisect.bisect_left(lengths, len(item.text)) / len(lengths)
        points = config["points"]
        return {"rating": points[len(points) - 1 - min(len(points) - 1, int(rank * len(points)))]}
