"""Study templates of the Chumor 2.0 protocol (PROTOCOLS.md §4): explanations of jokes.

Two studies. *Explanation classification*: one item per (joke, explanation);
five annotators say whether the explanation fully explains the joke, and the
majority is the label. Item metadata keeps the explanation's ``source`` and the
joke's ``joke_types`` (a list: a joke can be both cultural and pun-based), so
the report can break judges' accuracy down by both. *Explanation preference*:
one item per joke with two candidates, a human-written and an LLM-written
explanation (``provenance.source``), shown in random order as "Explanation 1"
and "Explanation 2"; three annotators choose one or "equally good".

File formats (CSV, XLSX or JSONL, one answer per row; a row without an
annotator only declares the item):

* classification: ``joke_id, joke, explanation, source, joke_types[, annotator, label]``
* preference: ``joke_id, joke, human_explanation, llm_explanation[, joke_types, annotator, choice, shown_first]``
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..importers.items import FileProblem
from ..models import Rater, Study
from ..services.imported_judgments import ImportedJudgment
from ..services.studies import CandidateSpec, ImportErrors, ItemSpec
from ..task_types import TIE
from .base import ImportPlan, StudyTemplate, register_template
from .tables import Row, Table

EXPLANATION = "chumor-explanation"
PREFERENCE = "chumor-preference"

GOOD, BAD = "good", "bad"
HUMAN, LLM = "human", "llm"
#: The joke types the paper tags; other tags are accepted and reported as they are.
JOKE_TYPES = ("cultural", "situational", "pun-based", "homophonic", "glyph-based", "cross-lingual")

_TRUE_WORDS = {"1", "yes", "true", "y", "fully", "full", "fully explains"}
_FALSE_WORDS = {"0", "no", "false", "n", "partially", "partial", "not", "not_fully", "does not fully explain"}
_TIE_WORDS = {"tie", "equal", "equally good", "both", "3", "same"}


def _words(text: str) -> str:
    return " ".join(text.strip().lower().replace("_", " ").split())


def joke_types_of(text: str) -> list[str]:
    """``"Cultural; pun based"`` → ``["cultural", "pun-based"]`` (split on ; , or |, de-duplicated)."""
    tags = []
    for part in re.split(r"[;,|]", text):
        tag = "-".join(part.strip().lower().replace("_", " ").split())
        if tag and tag not in tags:
            tags.append(tag)
    return tags


@dataclass
class _Rows:
    """What a protocol file said so far: its items (rows of one item must agree), answers and problems."""

    answer_column: str
    problems: list[str] = field(default_factory=list)
    items: dict[str, ItemSpec] = field(default_factory=dict)
    declared: dict[str, tuple[dict[str, Any], Row]] = field(default_factory=dict)
    judgments: list[ImportedJudgment] = field(default_factory=list)

    def blank(self, row: Row, values: dict[str, str]) -> bool:
        """Name every required cell that is empty; True when there was one."""
        empty = [name for name, value in values.items() if not value]
        self.problems.extend(f"{row.where}: the {name} is empty." for name in empty)
        return bool(empty)

    def declare(self, row: Row, item: ItemSpec, fields: dict[str, Any]) -> None:
        """Keep the item the first time it is named; later rows must repeat the same fields."""
        if item.external_id not in self.declared:
            self.declared[item.external_id] = (fields, row)
            self.items[item.external_id] = item
            return
        seen, first = self.declared[item.external_id]
        self.problems.extend(
            f"{row.where}: the {name} differs from {first.where} for item {item.external_id!r}."
            for name, value in fields.items()
            if seen[name] != value
        )

    def answer(self, row: Row, table: Table) -> tuple[str, str] | None:
        """(annotator, raw answer) when the row holds an answer; None when it only declares its item."""
        if "annotator" not in table.columns:
            return None
        annotator, raw = row.text("annotator"), row.text(self.answer_column)
        if not annotator and not raw:
            return None
        if not annotator:
            self.problems.append(f"{row.where}: the {self.answer_column} {raw!r} has no annotator.")
            return None
        return annotator, raw

    def plan(self) -> ImportPlan:
        if self.problems:
            raise ImportErrors(self.problems)
        if not self.items:
            raise FileProblem("The file holds no rows.")
        return ImportPlan(items=list(self.items.values()), judgments=self.judgments)


def _read_answers_too(table: Table, column: str) -> None:
    if "annotator" in table.columns or column in table.columns:
        table.require("annotator", column)


# -- explanation classification -------------------------------------------------------------------------


def _label(raw: str, study: Study) -> str | None:
    options = {str(o["value"]): o["label"] for o in study.config.get("options", [])}
    positive = str(study.config.get("positive", GOOD))
    negative = next((v for v in options if v != positive), BAD)
    word = _words(raw)
    for value, label in options.items():
        if word in (_words(value), _words(label)):
            return value
    if word in _TRUE_WORDS or word == GOOD:
        return positive
    if word in _FALSE_WORDS or word == BAD:
        return negative
    return None


def explanation_importer(table: Table, study: Study) -> ImportPlan:
    """Rows of (joke, explanation, source, joke types) with, optionally, one annotator's label each."""
    table.require("joke_id", "joke", "explanation", "source")
    _read_answers_too(table, "label")
    rows = _Rows(answer_column="label")
    for row in table.rows:
        joke_id, joke, explanation = row.text("joke_id"), row.text("joke"), row.text("explanation")
        source = _words(row.text("source")).replace(" ", "-")
        if rows.blank(row, {"joke_id": joke_id, "joke": joke, "explanation": explanation, "source": source}):
            continue
        item_id = row.text("explanation_id") or f"{joke_id}:{source}"
        types = joke_types_of(row.text("joke_types"))
        item = ItemSpec(
            external_id=item_id,
            prompt=joke,
            text=explanation,
            metadata={"joke_id": joke_id, "source": source, "joke_types": types},
            row=row.where,
        )
        rows.declare(row, item, {"joke": joke, "explanation": explanation, "joke types": types})
        if (answer := rows.answer(row, table)) is None:
            continue
        annotator, raw = answer
        label = _label(raw, study)
        if label is None:
            known = ", ".join(str(o["value"]) for o in study.config.get("options", []))
            rows.problems.append(f"{row.where}: {raw or 'an empty label'!r} is not a label; use one of {known}.")
            continue
        rows.judgments.append(
            ImportedJudgment(
                rater=annotator, item=item_id, value={"label": label}, kind=Rater.Kind.CROWD, row=row.where
            )
        )
    return rows.plan()


# -- explanation preference ------------------------------------------------------------------------------


def _choice(raw: str, shown_first: str) -> tuple[str | None, str]:
    """The chosen candidate key (or "tie") and a problem, if any."""
    word = _words(raw)
    if word in _TIE_WORDS:
        return TIE, ""
    if word in (HUMAN, LLM):
        return word, ""
    position = {"1": 0, "explanation 1": 0, "2": 1, "explanation 2": 1}.get(word)
    if position is None:
        return None, f"{raw or 'an empty choice'!r} is not a choice; use human, llm, equal, or 1 / 2 with shown_first."
    if shown_first not in (HUMAN, LLM):
        return None, f"the choice {raw!r} names a position, so shown_first must say human or llm."
    order = [HUMAN, LLM] if shown_first == HUMAN else [LLM, HUMAN]
    return order[position], ""


def preference_importer(table: Table, study: Study) -> ImportPlan:
    """Rows of (joke, human explanation, LLM explanation) with, optionally, one annotator's choice each."""
    table.require("joke_id", "joke", "human_explanation", "llm_explanation")
    _read_answers_too(table, "choice")
    rows = _Rows(answer_column="choice")
    for row in table.rows:
        fields = {name: row.text(name) for name in ("joke_id", "joke", "human_explanation", "llm_explanation")}
        if rows.blank(row, fields):
            continue
        joke_id, human, llm = fields.pop("joke_id"), fields["human_explanation"], fields["llm_explanation"]
        item = ItemSpec(
            external_id=joke_id,
            prompt=fields["joke"],
            candidates=[
                CandidateSpec(key=HUMAN, text=human, provenance={"source": HUMAN}),
                CandidateSpec(key=LLM, text=llm, provenance={"source": LLM}),
            ],
            metadata={"joke_types": joke_types_of(row.text("joke_types"))},
            row=row.where,
        )
        rows.declare(row, item, fields)
        if (answer := rows.answer(row, table)) is None:
            continue
        annotator, raw = answer
        shown_first = _words(row.text("shown_first"))
        if shown_first and shown_first not in (HUMAN, LLM):
            rows.problems.append(f"{row.where}: shown_first must be human or llm, not {row.text('shown_first')!r}.")
            continue
        choice, problem = _choice(raw, shown_first)
        if problem:
            rows.problems.append(f"{row.where}: {problem}")
            continue
        order = [] if not shown_first else ([HUMAN, LLM] if shown_first == HUMAN else [LLM, HUMAN])
        rows.judgments.append(
            ImportedJudgment(
                rater=annotator,
                item=joke_id,
                value={"choice": choice},
                kind=Rater.Kind.CROWD,
                shown_order=order,
                row=row.where,
            )
        )
    return rows.plan()


# -- the templates ----------------------------------------------------------------------------------------

register_template(
    StudyTemplate(
        key=EXPLANATION,
        protocol="chumor",
        title="Chumor 2.0 — does the explanation fully explain the joke?",
        description=(
            "Each item is a joke with one explanation (from a person or a model). Five annotators say whether "
            "the explanation fully explains the joke; the majority is the label. Judges answer the same "
            "question directly or step by step and are scored against that label by source and joke type."
        ),
        task_type="binary",
        config={
            "options": [
                {"value": GOOD, "label": "Fully explains"},
                {"value": BAD, "label": "Does not fully explain"},
            ],
            "positive": GOOD,
        },
        settings={
            "quota_per_item": 5,
            "item_order": Study.ItemOrder.RANDOM_PER_RATER,
            "attention_check_rate": 0.0,
            "attention_check_policy": Study.AttentionPolicy.FLAG,
            "attention_check_max_failures": 0,
            "consent_text": (
                "You will read short jokes, each followed by an explanation, and say whether the explanation "
                "gets the joke. Some jokes play on culture, sounds or the shapes of characters. No personal "
                "information is collected beyond your answers, and you may stop at any time."
            ),
            "instructions_text": (
                'Read the joke first, then the explanation. Choose "Fully explains" only if the explanation '
                "says what actually makes the joke funny — the double meaning, the sound-alike, the cultural "
                "reference or the twist — and says it correctly. If it gets the point only in part, gets it "
                'wrong, or merely retells the joke, choose "Does not fully explain". Keys 1 and 2.'
            ),
        },
        analyses={"reference": "passers", "breakdowns": ["source", "joke_types"], "joke_types": list(JOKE_TYPES)},
        importer=explanation_importer,
        judge_template="explanation-quality",
        columns="joke_id, joke, explanation, source, joke_types[, annotator, label][, explanation_id]",
    )
)

register_template(
    StudyTemplate(
        key=PREFERENCE,
        protocol="chumor",
        title="Chumor 2.0 — which of two explanations is better?",
        description=(
            "Each item is a joke with two explanations, one written by a person and one by a model, shown in "
            'random order. Three annotators choose the better one or "equally good"; the per-joke majority '
            "gives human wins, model wins, ties and undecided jokes."
        ),
        task_type="pairwise",
        config={"labels": ["Explanation 1", "Explanation 2", "Equally good"], "allow_tie": True, "side_by_side": False},
        settings={
            "quota_per_item": 3,
            "item_order": Study.ItemOrder.RANDOM_PER_RATER,
            "attention_check_rate": 0.0,
            "attention_check_policy": Study.AttentionPolicy.FLAG,
            "attention_check_max_failures": 0,
            "consent_text": (
                "You will read short jokes, each with two explanations, and say which explanation is better. "
                "No personal information is collected beyond your answers, and you may stop at any time."
            ),
            "instructions_text": (
                "Read the joke and both explanations. Pick the one that makes clearer, and more correctly, why "
                'the joke is funny. If neither is better, choose "Equally good". The two explanations appear '
                "in a different random order for every person. Keys 1, 2 and 3."
            ),
        },
        analyses={"majority": "undecided when all three differ", "sources": [HUMAN, LLM]},
        importer=preference_importer,
        judge_template="explanation-preference",
        columns="joke_id, joke, human_explanation, llm_explanation[, joke_types, annotator, choice, shown_first]",
    )
)
