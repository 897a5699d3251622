"""Pick one of N for an LLM: the option's number, 1 for the first shown."""

import random
import re
from functools import partial
from typing import Any

from annotation.models import Item
from annotation.task_types.pick_one import PickOne

from ..prompts.builtin import PICK_FUNNIEST
from .answer_text import NUMBER, ORDINAL, VERDICT_END, clause_verdicts, group, number, plain, read_statements
from .base import ChoiceBaselines, JudgingType, StudyFacts, by_length, json_object
from .reading import ANSWER_KEYS, Unparseable, choice_number, first_key

_CHOICE_KEYS = rf"{ANSWER_KEYS}|choice|pick|winner|选择|選択"
# An option as the prompt numbers it ("Option 2", "#2", "2番"), or by its place ("the third one", 第三个).
_OPTION = rf"(?:option|answer|response|joke|#|选项|選択肢)?\s*({NUMBER})\s*(?:番|号|個目)?"
_PLACE = rf"(?:the\s+)?({ORDINAL}|last)(?:\s+(?:one|option|answer|response|joke))?\s*(?:个|個|条|條)?"
_ONE = rf"(?:{_PLACE}|{_OPTION})"
_WHOLE = re.compile(rf"\s*\**{_ONE}\**\s*(?:です|だ)?\s*[.。!]?\s*", re.I)
_STATED = (
    ("labelled", re.compile(rf"(?:{_CHOICE_KEYS})[\s*]*(?:[:=]|\bis\b|は|是)[\s\"'*“「]*{_ONE}{VERDICT_END}", re.I)),
    (
        "chosen",
        re.compile(
            rf"\bI(?:'d|’d|\s+would|\s+will|'ll)?\s+(?:choose|pick|go\s+with|vote\s+for|select|prefer)\s+{_ONE}{VERDICT_END}"
            rf"|我?选(?:择)?\s*{_ONE}",
            re.I,
        ),
    ),
    (
        "best",
        re.compile(
            rf"(?<![\w.]){_ONE}\s+(?:is|was|'s)\s+(?:(?!not\b)\w+\s+)?(?:the\s+)?(?:funniest|best|winner)\b"
            rf"|(?<![\w.]){_ONE}\s+wins\b"
            rf"|{_ONE}\s*(?:が|は)?\s*(?:一番|最も|いちばん)\s*(?:面白|おもしろ|良)|{_ONE}\s*(?:最好笑|最有趣|最搞笑|最好)",
            re.I,
        ),
    ),
)


def _option(match: re.Match, shown: list[str]) -> str:
    word = group(match)
    position = len(shown) if word.casefold() == "last" else number(word)
    return choice_number(position, shown)


def _clause_choices(clause: str, shown: list[str]) -> list[tuple[str, str]]:
    read = partial(_option, shown=shown)
    return clause_verdicts(clause, whole=_WHOLE, patterns=_STATED, read=read, what="choice")


class PickOneJudging(ChoiceBaselines, JudgingType):
    name = PickOne.name
    default_template = PICK_FUNNIEST.name
    answer_keys = ("choice",)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        return json_object({"choice": {"type": "integer", "minimum": 1, "maximum": n_candidates}}, ["choice"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "choice", "answer", "pick", "winner")
        if raw is None:
            raise Unparseable("the JSON answer has no choice")
        return {"choice": choice_number(raw, shown)}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # An option only when it is the answer: the whole reply, labelled, chosen or called the funniest.
        # A number in prose ("all 3 answers are puns") is never read as the choice.
        text = plain(text)
        whole = _WHOLE.fullmatch(text)
        if whole:
            return {"choice": _option(whole, shown)}, "whole_answer"
        choice, pattern = read_statements(text, lambda clause: _clause_choices(clause, shown), "choice")
        return {"choice": choice}, pattern

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"choice": rng.choice(shown)}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        return {"choice": by_length(shown, texts)[0]}
