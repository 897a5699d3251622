"""A binary label for an LLM: one of the two options, by value or label, or yes / no."""

import random
import re
import statistics
from collections import Counter
from typing import Any

from annotation.models import Item
from annotation.task_types.binary import BinaryLabel

from ..prompts.builtin import FUNNY_OR_NOT
from .base import JudgingType, Labelled, StudyFacts, json_object
from .reading import Unparseable, first_key, keyed, norm, one


def _binary_label(raw: Any, config: dict[str, Any]) -> str:
    word = norm(raw)
    for option in config["options"]:
        if word in (norm(option["value"]), norm(option["label"])):
            return str(option["value"])
    raise Unparseable(f"the label {str(raw)[:40]!r} is not one of the options")


class BinaryJudging(JudgingType):
    name = BinaryLabel.name
    default_template = FUNNY_OR_NOT.name

    def output_schema(self, *, config: dict[str, Any], n_candidates: int) -> dict[str, Any] | None:
        values = [str(o["value"]) for o in config.get("options", [])]
        return json_object({"reasoning": {"type": "string"}, "label": {"type": "string", "enum": values}}, ["label"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        raw = first_key(obj, "label", "answer", "verdict", "decision", "classification")
        if raw is None:
            raise Unparseable("the JSON answer has no label")
        extras = {"reasoning": obj["reasoning"]} if isinstance(obj.get("reasoning"), str) else {}
        return {"label": _binary_label(raw, config)}, extras

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> Any:
        options = config["options"]
        word = norm(text)
        values = [str(o["value"]) for o in options]
        if word in ("yes", "no") and config.get("positive") in values:
            negative = next(v for v in values if v != config["positive"])
            return {"label": config["positive"] if word == "yes" else negative}
        found = keyed(text, r"label|answer|verdict|decision", r"[^\n\"',.}]+")
        if found:
            return {"label": one([_binary_label(k, config) for k in found], "label")}
        # Longest phrases first, blanked once counted, so "not funny" never also counts as "funny".
        haystack = f" {norm(text)} "
        phrases = sorted(
            ((norm(p), str(o["value"])) for o in options for p in (o["value"], o["label"])),
            key=lambda pair: -len(pair[0]),
        )
        hits = []
        for phrase, value in phrases:
            pattern = rf"(?<![\w]){re.escape(phrase)}(?![\w])"
            if re.search(pattern, haystack):
                hits.append(value)
                haystack = re.sub(pattern, " ", haystack)
        return {"label": one(hits, "label")}

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
