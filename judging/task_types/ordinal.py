"""A rating on a scale for an LLM: the point as a number, in JSON or as a lone digit."""

import bisect
import random
import re
import statistics
from functools import partial
from typing import Any

from annotation.models import Item
from annotation.task_types.ordinal import OrdinalScale

from ..prompts.builtin import FUNNINESS_DIGIT
from .answer_text import NUMBER, VERDICT_END, clause_verdicts, number, plain, read_statements, statements
from .base import JudgingType, Labelled, StudyFacts, json_object
from .reading import ANSWER_KEYS, Unparseable, first_key, integer, norm

_RATING_KEYS = rf"{ANSWER_KEYS}|rating|score|funniness|grade|评分|分数|得分|評価|点数|スコア"
# A scale point as written ("2", "Two", "二", "２"), optionally "out of" the scale's top ("2/3", "2 out of 3",
# "3分中2") or with a unit ("2分", "2点", "2 points").
_POINT = rf"\**({NUMBER})\**(?:\s*(?:/|out\s+of)\s*(\d+|{NUMBER}))?\s*(?:分|点|points?)?\**"
# "3 - Very funny", and "1 = Somewhat funny" as the prompt lists the scale: the label must be that point's.
_WHOLE = re.compile(rf"\s*(?:a\s+)?{_POINT}\s*(?:[-–—:=(]\s*(\D{{1,80}}?)\)?)?\s*(?:です|だ)?\s*[.。!]?\s*", re.I)
_STATED = (
    (
        "labelled",
        re.compile(rf"(?:{_RATING_KEYS})[\s*]*(?:[:=]|\bis\b|は|为|是)[\s\"'*“「]*{_POINT}{VERDICT_END}", re.I),
    ),
    (
        "stated",
        re.compile(
            rf"\b(?:I(?:'d|’d|\s+would)?\s+(?:say|give\s+(?:it|this)|rate\s+(?:it|this))|(?:it|this)\s+(?:gets|deserves"
            rf"|earns|is\s+worth)|(?:it'?s|that'?s|this\s+is)|rated?)\s+(?:a\s+|an\s+)?{_POINT}{VERDICT_END}"
            rf"|\bthe\s+answer(?:\s+to\s+(?:this|the|your)\s+question)?\s+is\s+[\"'“]?{_POINT}{VERDICT_END}"
            rf"|给(?:它|这个笑话|这个)?\s*(?:打)?\s*{_POINT}|打\s*{_POINT}",
            re.I,
        ),
    ),
    ("out_of", re.compile(rf"(?<![\w.])\**({NUMBER})\**\s*(?:/|out\s+of)\s*(\d+|{NUMBER})(?!\w|\.\d)", re.I)),
)


def _rating(match: re.Match, config: dict[str, Any]) -> int:
    # Each alternative of a pattern captures (point, top of the scale); the one that matched has the point.
    groups = match.groups()
    first = next(i for i, g in enumerate(groups) if g is not None)
    rating, top = number(groups[first]), groups[first + 1] if first + 1 < len(groups) else None
    if top is not None and number(top) != max(config.get("points", [0])):
        raise Unparseable(f"the rating {rating}/{top} is not on this scale (its top is {max(config['points'])})")
    return rating


def _by_label(text: str, config: dict[str, Any]) -> int | None:
    """The point a label names ("Very funny" on the funniness scale), to check "3 - Very funny" agrees.

    A label alone is not read as a rating: "funny" may mean the text is funny, not the scale's "Funny".
    """
    for point, label in zip(config.get("points", []), config.get("labels", []), strict=False):
        if norm(text) == norm(label):
            return point
    return None


def _checked(match: re.Match, config: dict[str, Any]) -> int:
    """The rating a match states; a label given with it ("3 - Very funny") must be that point's on the scale."""
    rating = _rating(match, config)
    if match.re is _WHOLE and match.group(3) and _by_label(match.group(3), config) != rating:
        raise Unparseable(f"the rating {rating} and the label {match.group(3).strip()!r} disagree")
    return rating


def _clause_ratings(clause: str, config: dict[str, Any]) -> list[tuple[str, int]]:
    read = partial(_checked, config=config)
    return clause_verdicts(clause, whole=_WHOLE, patterns=_STATED, read=read, what="rating")


class OrdinalJudging(JudgingType):
    name = OrdinalScale.name
    default_template = FUNNINESS_DIGIT.name
    answer_keys = ("rating",)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        return json_object({"rating": {"type": "integer", "enum": list(config.get("points", []))}}, ["rating"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "rating", "score", "answer", "funniness", "grade")
        if raw is None:
            raise Unparseable("the JSON answer has no rating")
        return {"rating": integer(raw)}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # Only a number that is the answer: the whole reply, a stated or labelled rating, or "2/3" on this
        # scale. A number in prose ("it has 3 puns") is a count, never read as the rating.
        text = plain(text)
        whole = _WHOLE.fullmatch(text)
        if whole:
            return {"rating": _checked(whole, config)}, "whole_answer"
        try:
            rating, pattern = read_statements(text, lambda clause: _clause_ratings(clause, config), "rating")
        except Unparseable as exc:
            if str(exc).startswith("no rating"):
                raise Unparseable("no rating found in the answer (a number in prose is not read as one)") from None
            raise
        # "Not funny. 1 = Somewhat funny": a scale label standing alone that names another point disagrees.
        named = {_by_label(clause, config) for clause in statements(text)} - {None, rating}
        if named:
            raise Unparseable(f"conflicting ratings in the answer: {rating} and the label of {min(named)}")
        return {"rating": rating}, pattern

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
