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
from .reading import ANSWER_KEYS, Unparseable, first_key, integer, one

_RATING_KEYS = rf"{ANSWER_KEYS}|rating|score|funniness|grade|评分|分数|得分|評価|点数|スコア"
# A scale point, optionally "out of" the scale's top ("2/3", "2 out of 3") or with a unit ("2分", "2点", "2 points").
_POINT = r"\**(-?\d+)\**(?:\s*(?:/|out\s+of)\s*(\d+))?\s*(?:分|点|points?)?\**"


def _rating(match: re.Match, config: dict[str, Any]) -> int:
    rating, top = match.group(1), match.group(2)
    if top is not None and int(top) != max(config.get("points", [0])):
        raise Unparseable(f"the rating {rating}/{top} is not on this scale (its top is {max(config['points'])})")
    return int(rating)


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

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # Only a number that is the answer: the whole reply, a labelled rating, or "2/3" on this scale.
        # A number in prose ("it has 3 puns") is a count, never read as the rating.
        whole = re.fullmatch(rf"\s*{_POINT}\s*[.。]?\s*", text, re.I)
        if whole:
            return {"rating": _rating(whole, config)}, "whole_answer"
        found = [
            _rating(m, config)
            for m in re.finditer(
                rf"(?:{_RATING_KEYS})[\s*]*(?:[:=：]|\bis\b)[\s\"'*“「]*{_POINT}(?!\w|\.\d)", text, re.I
            )
        ]
        if found:
            return {"rating": one(found, "rating")}, "labelled"
        raise Unparseable("no rating found in the answer (a number in prose is not read as one)")

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
