"""Written answers for an LLM: a one-word micro-edit of a headline, or an explanation. No baselines."""

import re
from typing import Any

from django.core.exceptions import ValidationError

from annotation.models import Item
from annotation.task_types.free_text import (
    MicroEdit,
    WrittenExplanation,
    marked_token,
    one_word_pattern,
    split_headline,
)

from ..prompts.builtin import EXPLAIN_JOKE, MICRO_EDIT
from .base import JudgingType, json_object
from .reading import Unparseable, text_field

NO_TEXT_BASELINE = "Baselines do not write text; use an LLM judge for this study."


class MicroEditJudging(JudgingType):
    name = MicroEdit.name
    default_template = MICRO_EDIT.name
    answer_keys = ("replacement",)
    no_baseline = NO_TEXT_BASELINE

    def prompt_variables(self, *, item: Item, config: dict[str, Any]) -> dict[str, Any]:
        before, token, after = split_headline(item.text)
        return {"headline": f"{before}[{token}]{after}" if token else item.text, "token": token}

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        # The pattern holds a small model to the rule the answer is checked against (one word, not too
        # long, not the marked word again): unconstrained, SmolLM2 wrote phrases or echoed the word.
        try:
            original = marked_token(item_text) if item_text else ""
        except ValidationError:
            original = ""
        pattern = one_word_pattern(max_length=config.get("max_length", 40), original=original)
        return json_object({"replacement": {"type": "string", "pattern": pattern}}, ["replacement"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        return {"replacement": text_field(obj, "replacement", "word", "answer").strip("\"'")}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        if re.fullmatch(r"\s*[\"']?[^\s<>\"']+[\"']?\s*\.?\s*", text):
            return {"replacement": text.strip().strip(".\"'")}, "whole_answer"
        raise Unparseable("the answer is not the JSON object that was asked for")


class ExplanationJudging(JudgingType):
    name = WrittenExplanation.name
    default_template = EXPLAIN_JOKE.name
    answer_keys = ("text",)
    no_baseline = NO_TEXT_BASELINE
    reads_prose = True

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        return json_object({"text": {"type": "string"}}, ["text"])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        return {"text": text_field(obj, "text", "explanation", "answer")}, {}

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        # Only reached when the answer holds no JSON object: the prose is the explanation.
        return {"text": text.strip()}, "whole_answer"
