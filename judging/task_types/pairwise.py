"""Pairwise choice for an LLM: "A", "B" or a tie, with HumorRank's reasons and feature lists."""

import random
import re
from typing import Any

from annotation.models import Item
from annotation.task_types import TIE
from annotation.task_types.pairwise import PairwiseChoice

from ..prompts.builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS, PAIRWISE_CRITIC
from .answer_text import group, matches, negated, plain, read_statements
from .base import ChoiceBaselines, JudgingType, StudyFacts, by_length, json_object
from .reading import ANSWER_KEYS, Unparseable, first_key, norm

_FIRST = {"a", "1", "first", "joke a", "option a", "explanation 1", "response a", "candidate a"}
_SECOND = {"b", "2", "second", "joke b", "option b", "explanation 2", "response b", "candidate b"}
_TIES = {"tie", "equal", "equally good", "both", "draw", "same", "neither", "both equally"}

# -- free text: only what cannot be misread ------------------------------------------------
# "tie" in the protocols' languages (Chumor is Chinese, Oogiri Japanese); an article before it is allowed.
_TIE_WORDS = (
    r"(?:an?\s+)?(?:tie|draw|equal(?:ly(?:\s+(?:good|funny))?)?|both\s+equally|平局|平手|打平|一样好?|不相上下"
    r"|引き分け|同点|互角|同じくらい)"
)
_SIDE = r"(?:option|joke|response|candidate|explanation|选项|笑话|解释|選択肢|回答|ジョーク|説明)\s*"
# A or B only as a capital letter standing alone: the article "a" ("a tie", "A joke about…") is never option A.
_END = r"(?=[\s\"'*”」)\]]*(?:$|[.,;:!?。，！？\n(（—–-]|\s+(?:because|since|wins)\b))"
_LETTER = rf"(?:{_SIDE})?(?-i:[AB]|[12]){_END}"
# Either side as the prompts name it (Joke A / Explanation 1) or by its place ("the second one", 第一个, 前者).
_PLACE = (
    r"(?:the\s+)?(?:first|former|second|latter|1st|2nd)(?:\s+(?:one|joke|option|explanation|response|candidate))?"
    r"|第\s*[一二12]\s*(?:个|個|条|條|つ)?(?:笑话|解释|选项)?|前者|后者|後者|[一二12]\s*(?:つ目|番目)"
)
# Latin letters and digits bound a letter; CJK ones do not ("B更好笑", "Bです").
_REF = rf"{_PLACE}|{_SIDE}(?-i:[AB])(?![A-Za-z0-9'’])|{_SIDE}[12](?!\d)|(?<![A-Za-z0-9'’])(?-i:[AB])(?![A-Za-z0-9'’])"
_VALUE = rf"{_TIE_WORDS}{_END}|{_LETTER}|(?:{_PLACE}){_END}"
_BETTER = (
    r"(?:funnier|better|stronger|wittier|more\s+(?:funny|amusing|humorous|clever)"
    r"|the\s+(?:funnier|funniest|better|best|stronger)(?:\s+one)?|the\s+winner|wins|lands\s+better"
    r"|gets\s+the\s+bigger\s+laugh)"
)
_PATTERNS = (
    (
        "chosen",
        re.compile(
            rf"\bI(?:'d|’d|\s+would|\s+will|'ll)?\s+(?:choose|pick|prefer|go\s+with|vote\s+for|select|favou?r)"
            rf"\s+({_REF})|我?选(?:择)?\s*({_REF})|(?<![A-Za-z])({_REF})\s*(?:を選|にします|です|の勝ち)",
            re.I,
        ),
    ),
    (
        "comparative",
        re.compile(
            # A verb between the side and the comparison: "A better ending makes jokes land" is no verdict.
            rf"(?<![A-Za-z0-9'’])({_REF})\s+(?:is|was|'s|’s|seems|feels|looks)\s+(?:(?!not\b|n't\b)\w+\s+)?{_BETTER}\b"
            rf"|(?<![A-Za-z0-9'’])({_REF})\s+(?:wins|lands\s+better|gets\s+the\s+bigger\s+laugh)\b"
            rf"|({_REF})\s*(?:的?(?:笑点)?(?:更|比较|最)(?:好笑|有趣|搞笑|幽默|好|妙)|胜出|获胜|赢)"
            rf"|({_REF})\s*(?:の方が|のほうが|が)\s*(?:面白|おもしろ|良い|いい|上|勝)",
            re.I,
        ),
    ),
    (
        # "the joke that gets the bigger laugh … is "A"", "the funnier one is B".
        "described",
        re.compile(
            rf"\b(?:funnier|better|winning|bigger\s+laugh)\b[^.;:!?]{{0,80}}?\bis\s+[\"'“*]*({_REF})[\"'”*]*{_END}",
            re.I,
        ),
    ),
    (
        "tie",
        re.compile(
            r"\bit(?:'s|’s|\s+is)\s+a\s+(tie|draw)\b|\b(?:they|both)(?:\s+jokes|\s+explanations)?\s+are\s+(equally)\b"
            r"|\b(?:both|they)\s+(?:are\s+)?(equally|just\s+as)\s+(?:funny|good)\b|\b(neither)\s+is\s+(?:funnier|better)\b"
            r"|(?:两个|兩個|二者|两者|两条)都?(一样|差不多|不相上下)|(?:どちらも|両方とも?)(同じ|互角)",
            re.I,
        ),
    ),
)
_WINNER_KEYS = rf"{ANSWER_KEYS}|winner|choice|pick|vote|funnier(?:\s+one)?|better(?:\s+one)?|选择|胜者|勝者|選択"
_LABELLED = re.compile(rf"(?:{_WINNER_KEYS})[\s*]*(?:[:=]|\bis\b)[\s\"'*“「]*({_VALUE})", re.I)
_WHOLE = re.compile(rf"\s*(?:{_TIE_WORDS}|{_REF}|both|neither|same)\s*(?:です|だ)?\s*", re.I)


def _text_position(raw: str) -> int | str:
    word = re.sub(r"\s*(?:です|だ)$", "", norm(raw))
    if re.fullmatch(_TIE_WORDS, word, re.I) or word in _TIES or re.search(r"equal|一样|同じ|互角|差不多|相上下", word):
        return TIE
    word = re.sub(rf"^(?:the\s+)?{_SIDE}", "", word, flags=re.I)
    if re.search(r"^(?:a|1)$|first|former|1st|第\s*[一1]|前者|^[一1]\s*(?:つ目|番目)", word):
        return 0
    if re.search(r"^(?:b|2)$|second|latter|2nd|第\s*[二2]|[后後]者|^[二2]\s*(?:つ目|番目)", word):
        return 1
    raise Unparseable(f"the decision {str(raw)[:40]!r} is not A, B or a tie")


def _clause_positions(clause: str) -> list[tuple[str, int | str]]:
    """The verdicts one clause states; a verdict under a negation is unclear, so unparseable."""
    # A clause that is nothing but a verdict ("**B**" on its own line after the reasoning) is one.
    whole = clause.strip(".!\"'*` 。！「」“”")
    if _WHOLE.fullmatch(whole):
        return [("whole_answer", _text_position(whole))]
    hits = [("labelled", _text_position(m.group(1))) for m in _LABELLED.finditer(clause)]
    for name, match in matches(clause, _PATTERNS):
        if name != "tie" and negated(clause[: match.start()]):
            raise Unparseable(f"the answer negates its verdict ({clause.strip()[:60]!r})")
        hits.append((name, _text_position(group(match))))
    return hits


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
    answer_keys = ("decision",)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
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
        text = plain(text)
        whole = text.strip(".!\"'*` 。！「」“”")
        if _WHOLE.fullmatch(whole):
            return _pairwise_value(_text_position(whole), shown), "whole_answer"
        position, pattern = read_statements(text, _clause_positions, "decision")
        return _pairwise_value(position, shown), pattern

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"choice": rng.choice([*shown, TIE] if config.get("allow_tie", True) else shown)}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        first, second = (len(texts[k]) for k in shown)
        if first == second and config.get("allow_tie", True):
            return {"choice": TIE}
        return {"choice": by_length(shown, texts)[0]}
