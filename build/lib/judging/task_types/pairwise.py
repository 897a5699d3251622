"""Pairwise choice for an LLM: "A", "B" or a tie, with HumorRank's reasons and feature lists."""

import random
import re
from typing import Any

from annotation.models import Item
from annotation.task_types import TIE
from annotation.task_types.pairwise import PairwiseChoice

from ..prompts.builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS, PAIRWISE_CRITIC
from .base import ChoiceBaselines, JudgingType, StudyFacts, by_length, json_object
from .reading import ANSWER_KEYS, Unparseable, first_key, keyed, norm, one

_FIRST = {"a", "1", "first", "joke a", "option a", "explanation 1", "response a", "candidate a"}
_SECOND = {"b", "2", "second", "joke b", "option b", "explanation 2", "response b", "candidate b"}
_TIES = {"tie", "equal", "equally good", "both", "draw", "same", "neither"}

# -- free text: only what cannot be misread ------------------------------------------------
# "tie" in the protocols' languages (Chumor is Chinese, Oogiri Japanese); an article before it is allowed.
_TIE_WORDS = r"(?:an?\s+)?(?:tie|draw|equal(?:ly(?:\s+(?:good|funny))?)?|平局|平手|打平|一样好?|不相上下|引き分け|同点|互角|同じくらい)"
_SIDE = r"(?:option|joke|response|candidate|explanation|选项|笑话|解释|選択肢|回答)\s*"
# A or B only as a capital letter standing alone: the article "a" ("a tie", "A joke about…") is never option A.
_END = r"(?=[\s\"'*”」)\]]*(?:$|[.,;:!?。，！？\n(（—–-]|\s+(?:because|since|wins)\b))"
_LETTER = rf"(?:{_SIDE})?(?-i:[AB]|[12]){_END}"
_VALUE = rf"{_TIE_WORDS}{_END}|{_LETTER}"
_PATTERNS = (
    ("labelled", None),
    ("bold", re.compile(rf"\*\*\s*({_TIE_WORDS}|{_SIDE}?(?-i:[AB])|{_SIDE}?[12])\s*[.!]?\s*\*\*", re.I)),
    (
        "chosen",
        re.compile(
            rf"\bI(?:'d|’d|\s+would)?\s+(?:choose|pick|prefer|go\s+with|vote\s+for)\s+({_LETTER})"
            rf"|我?选(?:择)?\s*({_LETTER})|(?<![A-Za-z])((?-i:[AB]))\s*(?:を選|の方が面白|が面白|の勝ち)",
            re.I,
        ),
    ),
    ("tie", re.compile(r"\bit(?:'s|’s|\s+is)\s+a\s+(tie|draw)\b|\b(?:they\s+are|both\s+are)\s+(equally)\b", re.I)),
)
_WINNER_KEYS = rf"{ANSWER_KEYS}|winner|choice|funnier(?:\s+one)?|better(?:\s+one)?|选择|胜者|勝者|選択"


def _text_position(raw: str) -> int | str:
    word = re.sub(rf"^{_SIDE}", "", norm(raw), flags=re.I)
    if re.fullmatch(_TIE_WORDS, word, re.I):
        return TIE
    if word in ("a", "1"):
        return 0
    if word in ("b", "2"):
        return 1
    raise Unparseable(f"the decision {str(raw)[:40]!r} is not A, B or a tie")


def _features(vocabulary: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "enum": list(vocabulary)}, "minItems": 1, "maxItems": 3}


def _pairwise_position(raw: Any) -> int | str:
    word = norm(raw)
    if word in _FIRST:
        return 0
    if word in _SECOND:
        return 1
    if word in _TIES:
        return TIE
    raise Unparseable(f"the decision {str(raw)[:40]!r} is not A, B or a tie")


def _pairwise_value(position: int | str, shown: list[str]) -> dict[str, Any]:
    return {"choice": TIE if position == TIE else shown[position]}


class PairwiseJudging(ChoiceBaselines, JudgingType):
    name = PairwiseChoice.name
    default_template = PAIRWISE_CRITIC.name

    def output_schema(self, *, config: dict[str, Any], n_candidates: int) -> dict[str, Any] | None:
        decisions = ["A", "B", "TIE"] if config.get("allow_tie", True) else ["A", "B"]
        return json_object(
            {
                "reasoning": {"type": "string"},
                "decision": {"type": "string", "enum": decisions},
                "humor_mechanisms": _features(HUMOR_MECHANISMS),
                "delivery_features": _features(DELIVERY_FEATURES),
                "failure_features": _features(FAILURE_FEATURES),
            },
            ["reasoning", "decision", "humor_mechanisms", "delivery_features", "failure_features"],
        )

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "decision", "winner", "answer", "choice", "verdict", "funnier")
        if raw is None:
            raise Unparseable("the JSON answer has no decision")
        position = _pairwise_position(raw)
        extras: dict[str, Any] = {}
        reasoning = first_key(obj, "reasoning", "reason", "explanation", "rationale")
        if isinstance(reasoning, str):
            extras["reasoning"] = reasoning
        features, dropped = {}, []
        for name, aliases, vocabulary in (
            ("humor_mechanisms", ("humor_mechanisms", "mechanisms", "humour_mechanisms"), HUMOR_MECHANISMS),
            ("delivery_features", ("delivery_features", "delivery"), DELIVERY_FEATURES),
            (
                "failure_features",
                ("failure_features", "loser_features", "failure_modes", "failures"),
                FAILURE_FEATURES,
            ),
        ):
            listed = first_key(obj, *aliases)
            if isinstance(listed, str):
                listed = [listed]
            kept = []
            for entry in listed if isinstance(listed, list) else []:
                word = norm(entry).replace(" ", "_")
                word = "cliché" if word in ("cliche", "cliches", "clichés") else word
                (kept if word in vocabulary and word not in kept else dropped).append(word)
            features[name] = kept[:3]
        extras["features"] = features
        if dropped:
            extras["features_dropped"] = dropped[:12]
        return _pairwise_value(position, shown), extras

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        stripped = norm(text)
        if stripped in _FIRST | _SECOND | _TIES or re.fullmatch(_TIE_WORDS, stripped, re.I):
            position = TIE if stripped not in _FIRST | _SECOND | _TIES else _pairwise_position(stripped)
            return _pairwise_value(position, shown), "whole_answer"
        hits: list[tuple[str, int | str]] = []
        for name, pattern in _PATTERNS:
            found = (
                keyed(text, _WINNER_KEYS, _VALUE)
                if pattern is None
                else [next(g for g in m.groups() if g) for m in pattern.finditer(text)]
            )
            hits.extend((name, _text_position(raw)) for raw in found)
        letters = {0: "A", 1: "B", TIE: TIE}
        decision = one([letters[p] for _, p in hits], "decision")
        return _pairwise_value({"A": 0, "B": 1}.get(decision, TIE), shown), hits[0][0]

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"choice": rng.choice([*shown, TIE] if config.get("allow_tie", True) else shown)}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        first, second = (len(texts[k]) for k in shown)
        if first == second and config.get("allow_tie", True):
            return {"choice": TIE}
        return {"choice": by_length(shown, texts)[0]}
