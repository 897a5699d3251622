"""A binary label for an LLM: one of the two options, by value or label, or yes / no."""

import random
import re
import statistics
from collections import Counter
from typing import Any

from annotation.models import Item
from annotation.task_types.binary import BinaryLabel

from ..prompts.builtin import FUNNY_OR_NOT
from .answer_text import attempted, negated, plain, read_statements
from .base import JudgingType, Labelled, StudyFacts, json_object
from .reading import ANSWER_KEYS, QUOTED, Unparseable, first_key, keyed, norm, one


def _binary_label(raw: Any, config: dict[str, Any]) -> str:
    word = norm(raw)
    for option in config["options"]:
        if word in (norm(option["value"]), norm(option["label"])):
            return str(option["value"])
    raise Unparseable(f"the label {str(raw)[:40]!r} is not one of the options")


_YES = {"yes", "是", "是的", "对", "はい"}
_NO = {"no", "否", "不是", "不", "いいえ"}
# Other words for the built-in funny / not funny labels, in English and in the protocols' languages
# (Chumor is Chinese, Oogiri Japanese).
_FUNNY = ("hilarious", "amusing", "好笑", "有趣", "搞笑", "幽默", "面白い", "おもしろい", "笑える")
_NOT_FUNNY = (
    "unfunny",
    "falls flat",
    "不好笑",
    "不有趣",
    "不搞笑",
    "没意思",
    "沒意思",
    "无趣",
    "無趣",
    "面白くない",
    "おもしろくない",
)
_NOT_FUNNY += ("つまらない", "笑えない", "笑えません")


def _phrases(options: list[dict[str, Any]]) -> list[tuple[str, set[str]]]:
    """Each option's value and the phrases that name it, the built-in funny labels also in other words."""
    out = []
    for option in options:
        phrases = {norm(option["value"]), norm(option["label"])}
        if phrases & {"funny"}:
            phrases |= set(_FUNNY)
        if phrases & {"not funny"}:
            phrases |= set(_NOT_FUNNY)
        out.append((str(option["value"]), phrases))
    return out


#: The most words a clause may have for a label in it to be read as the verdict.
_VERDICT_WORDS = 16
# A label is the verdict only when said of the text judged ("it isn't funny", "I find this funny",
# "这个笑话不好笑", "この回答は笑えません"), or standing alone with words of degree ("Not funny at all").
_ABOUT_THE_TEXT = re.compile(
    r"\b(?:it|its|it['’]s|this|that|the\s+(?:joke|response|answer|text|caption|explanation|headline|one|pun))\b"
    r"|这|這|它|该|該|この|これ|その|それ|本回答|笑话|笑話|解释|解釋|回答|説明",
    re.I,
)
_AFTER_LABEL = r"\b(?:at\s+all|to\s+me|enough|indeed|though)\b"
_DEGREE_ONLY = re.compile(
    r"(?:\W|\b(?:not|no|very|really|quite|so|pretty|definitely|absolutely|totally|hardly|barely|far\s+from"
    r"|without\s+(?:a\s+)?doubt|just|simply|mildly|somewhat|rather|extremely|genuinely)\b)*",
    re.I,
)


def _clause_labels(clause: str, options: list[dict[str, Any]], positive: str | None) -> list[tuple[str, str]]:
    """The labels one clause states, a negated positive label read as the other one.

    Longest phrases first, blanked once counted, so "not funny" never also counts as "funny".
    A negated negative label ("not unfunny", "不是不好笑") and an attempt ("it tries to be funny")
    are refused rather than guessed.
    """
    # Quoted words are the joke's or the prompt's ("the string "funny""), not the judge's.
    haystack = re.sub(r"[\s_\-]+", " ", QUOTED.sub(" ", clause)).casefold()
    if haystack.strip(" .!。！") in _YES | _NO and positive:
        negative = next(str(o["value"]) for o in options if str(o["value"]) != positive)
        return [("yes_no", positive if haystack.strip(" .!。！") in _YES else negative)]
    if len(haystack.split()) > _VERDICT_WORDS or (not haystack.isascii() and len(haystack) > 2 * _VERDICT_WORDS):
        # A long clause that uses a label word describes something ("comedy can mean anything that is
        # funny, which…"); a verdict is short ("I don't find it funny", "这个笑话一点也不好笑").
        return []
    phrases = sorted(((p, v) for v, ps in _phrases(options) for p in ps if p), key=lambda pair: -len(pair[0]))
    values = [str(o["value"]) for o in options]
    hits = []
    for phrase, value in phrases:
        pattern = re.compile(rf"(?<![\w]){re.escape(phrase)}(?![\w])" if phrase.isascii() else re.escape(phrase))
        for match in pattern.finditer(haystack):
            before, after = haystack[: match.start()], haystack[match.end() :][:12]
            rest = haystack[match.end() :]
            alone = (_DEGREE_ONLY.fullmatch(before) and _DEGREE_ONLY.fullmatch(re.sub(_AFTER_LABEL, "", rest))) or (
                not phrase.isascii() and len(before.strip()) <= 4
            )
            if not (alone or _ABOUT_THE_TEXT.search(before)):
                continue  # "how to explain something funny": a label word, not a verdict on the text
            if not negated(before, after):
                if attempted(before):
                    raise Unparseable(f"the answer says what the text tries to be, not what it is ({phrase!r})")
                hits.append(("negation_aware_label", value))
            elif value == positive and len(values) == 2:
                hits.append(("negation_aware_label", next(v for v in values if v != positive)))
            else:
                raise Unparseable(f"the answer negates the label {phrase!r}, which says nothing certain")
        haystack = pattern.sub(lambda m: " " * len(m.group(0)), haystack)
    return hits


class BinaryJudging(JudgingType):
    name = BinaryLabel.name
    default_template = FUNNY_OR_NOT.name
    answer_keys = ("label",)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        values = [str(o["value"]) for o in config.get("options", [])]
        return json_object({"reasoning": {"type": "string"}, "label": {"type": "string", "enum": values}}, ["label"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "label", "answer", "verdict", "decision", "classification")
        if raw is None:
            raise Unparseable("the JSON answer has no label")
        extras = {"reasoning": obj["reasoning"]} if isinstance(obj.get("reasoning"), str) else {}
        return {"label": _binary_label(raw, config)}, extras

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        options = config["options"]
        text = plain(text)
        word = norm(text)
        for value, phrases in _phrases(options):
            if word in phrases:
                return {"label": value}, "whole_answer"
        found = keyed(text, rf"{ANSWER_KEYS}|label|classification|ラベル", r"[^\n\"',.}。，、]+")
        if found:
            return {"label": one([_binary_label(k, config) for k in found], "label")}, "labelled"
        positive = config.get("positive")
        label, pattern = read_statements(text, lambda clause: _clause_labels(clause, options, positive), "label")
        return {"label": label}, pattern

    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        counts = Counter(v["label"] for v, _ in values)
        order = [str(o["value"]) for o in config["options"]]
        return {"label": max(order, key=lambda label: (counts[label], -order.index(label)))}

    def constant_without_labels(self, *, config: dict[str, Any]) -> dict[str, Any]:
        return {"label": str(config["options"][0]["value"])}

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        return {"label": str(rng.choice(config["options"])["value"])}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        lengths = facts.lengths or [len(item.text)]
        values = [str(o["value"]) for o in config["options"]]
        positive = config.get("positive", values[0])
        negative = next(v for v in values if v != positive)
        return {"label": positive if len(item.text) <= statistics.median(lengths) else negative}
