# SPDX-License-Identifier: GPL-3.0-or-later
"""The workbook's sheets about LLM judges and pairwise rankings."""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

from annotation.models import Judgment, counted_raters, trial_as_set
from annotation.task_types import Level
from ratings.leaderboards import judge_verdicts, study_leaderboard
from ratings.pairwise import contestant_of, study_judge_comparisons
from ratings.stats.leaderboard import PRINTED_COLUMNS, Leaderboard, MatchVerdict, position_summary, printed_row

from .safe_cells import scrub_provenance
from .study_data import HUMAN_KINDS, StudyData, stream

RAW_KEYS = ("raw_response", "raw", "response_text", "response")
INPUT_TOKEN_KEYS = ("prompt_tokens", "input_tokens", "tokens_in")
OUTPUT_TOKEN_KEYS = ("completion_tokens", "output_tokens", "tokens_out")
LATENCY_KEYS = ("latency_ms", "latency")


def _note(sheet, text: str) -> None:
    sheet.append([text])


def _figure(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 4)


# -- LLM judgments -------------------------------------------------------------


def _first(mapping: dict[str, Any], keys: tuple[str, ...], *, total_attempts: bool = False) -> Any:
    """The first of ``keys`` found at the top level or under "usage"; else, from the retry attempts."""
    for source in (mapping, mapping.get("usage") if isinstance(mapping.get("usage"), dict) else {}):
        for key in keys:
            if key in source and source[key] not in (None, ""):
                return source[key]
    attempts = [a for a in mapping.get("attempts") or [] if isinstance(a, dict)]
    found = [a[k] for a in attempts for k in keys if isinstance(a.get(k), int | float)]
    if not found:
        return None
    # Tokens are paid on every attempt; latency is the answer's, the last attempt's.
    return sum(found) if total_attempts else found[-1]


def judge_provenance(provenance: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """(raw response, input tokens, output tokens, latency ms, the rest scrubbed of credentials)."""
    clean = scrub_provenance(provenance if isinstance(provenance, dict) else {})
    raw = _first(clean, RAW_KEYS)
    if raw is not None and not isinstance(raw, str):
        raw = json.dumps(raw, ensure_ascii=False)
    rest = {k: v for k, v in clean.items() if k not in RAW_KEYS}
    return (
        raw,
        _first(clean, INPUT_TOKEN_KEYS, total_attempts=True),
        _first(clean, OUTPUT_TOKEN_KEYS, total_attempts=True),
        _first(clean, LATENCY_KEYS),
        rest,
    )


def write_llm_judgments(data: StudyData, sheet, counter) -> dict[int, Matches]:
    """Every judgment by an LLM or baseline judge; returns each judge's pairwise matches."""
    rows = (
        Judgment.objects.filter(counted_raters(), study=data.study)
        .exclude(rater__kind__in=HUMAN_KINDS)
        .order_by("rater_id", "item__position", "item_id", "assignment__trial", "id")
        .values_list(
            "rater_id",
            "item_id",
            "item__external_id",
            "item__is_attention_check",
            "assignment__trial",
            "status",
            "value",
            "duration_ms",
            "created_at",
            "provenance",
        )
    )
    matches: dict[int, Matches] = {}
    header = [
        "Judge",
        "Kind",
        "Item",
        "Attention check",
        "Trial",
        "Status",
        "Parsed value",
        "Numeric coding",
        "Raw response",
        "Input tokens",
        "Output tokens",
        "Latency ms",
        "Duration ms",
        "Created at",
        "Other provenance",
    ]
    wrote_header = False
    for rater_id, item_id, external_id, is_check, trial, status, value, duration, created, prov in stream(rows):
        if not wrote_header:
            sheet.append(header, bold=True)
            wrote_header = True
        counter.add()
        judge = data.raters[rater_id]
        raw, tokens_in, tokens_out, latency, rest = judge_provenance(prov)
        number = data.number(item_id, value) if status == Judgment.Status.OK else None
        parsed = data.label(value) if value is not None else None
        sheet.append(
            [
                judge.label,
                judge.kind,
                external_id,
                "yes" if is_check else "no",
                trial_as_set(trial),
                status,
                parsed,
                number,
                raw,
                tokens_in,
                tokens_out,
                latency,
                duration,
                created,
                rest or None,
            ],
        )
        if data.level == Level.PAIRWISE and status == Judgment.Status.OK and not is_check:
            matches.setdefault(rater_id, Matches()).add_item(data, item_id, [value])
    if not wrote_header:
        _note(sheet, "No LLM judgments in this study.")
    return matches


# -- Rankings ------------------------------------------------------------------


class Matches:
    """A growing match list between candidates' generators (or the candidates themselves)."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.a = array("l")
        self.b = array("l")
        self.score = array("d")

    def _index(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    def add_item(self, data: StudyData, item_id: int, values: list[Any]) -> None:
        keys = data.candidate_keys.get(item_id, [])
        if len(keys) != 2:
            return
        first, second = (self._index(contestant(data, item_id, k)) for k in keys)
        if first == second:
            return
        for value in values:
            score = data.number(item_id, value)
            if score is not None:
                self.a.append(first)
                self.b.append(second)
                self.score.append(score)


def contestant(data: StudyData, item_id: int, key: str) -> str:
    """Who a candidate stands for in a ranking (``ratings.pairwise.contestant_of``)."""
    return contestant_of(key, data.candidate_provenance.get((item_id, key), {}))


def _verdicts(matches: Matches) -> list[MatchVerdict]:
    names = sorted(matches.names, key=matches.names.get)
    return [
        MatchVerdict(names[a], names[b], float(s)) for a, b, s in zip(matches.a, matches.b, matches.score, strict=True)
    ]


def _write_board(sheet, title: str, board: Leaderboard, *, first: bool) -> None:
    if not first:
        sheet.append([])
    sheet.append([title], bold=True)
    sheet.append(list(PRINTED_COLUMNS), bold=True)
    for standing in board.standings:
        sheet.append(printed_row(standing))
    sheet.append(
        [
            f"Note: 95% percentile intervals from {board.n_resamples} bootstrap resamples; Stable Elo over "
            f"{board.n_orderings} replays; seed {board.seed}."
        ],
    )
    sheet.append([f"Note: {position_summary(board.position)}"])
    for note in board.warnings:
        sheet.append([f"Note: {note}"])


def write_rankings(data: StudyData, sheet, human: Matches | None, judges: dict[int, Matches]) -> None:
    """One leaderboard for the people and one per judge, as ``ratings.leaderboards`` computes them."""
    if data.level != Level.PAIRWISE:
        _note(sheet, f"Rankings apply to pairwise studies; this study collects {data.task_type.title.lower()}.")
        return
    boards: list[tuple[str, Leaderboard | None]] = []
    if human is not None and len(human.names) >= 2 and len(human.a):
        title = "Human raters" + (" (selected subset)" if data.subset else " (included)")
        boards.append((title, study_leaderboard(study=data.study, verdicts=_verdicts(human))))
    # Judges' verdicts by the same rule as the tournament page and the protocol report.
    by_judge = judge_verdicts(study=data.study, rater_ids=list(judges)) if judges else {}
    comparisons = study_judge_comparisons(study=data.study, rater_ids=list(judges)) if judges else {}
    for pk in judges:
        board = study_leaderboard(study=data.study, verdicts=by_judge.get(pk, []), comparisons=comparisons.get(pk, {}))
        boards.append((f"LLM judge {data.raters[pk].label}", board))
    wrote = False
    for title, board in boards:
        if board is None:
            continue
        _write_board(sheet, title, board, first=not wrote)
        wrote = True
    if not wrote:
        _note(sheet, "No pairwise judgments between two or more contestants yet.")
