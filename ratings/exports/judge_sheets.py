# SPDX-License-Identifier: GPL-3.0-or-later
"""The workbook's sheets about LLM judges and pairwise rankings."""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import numpy as np
from openpyxl.styles import Font

from annotation.models import Judgment
from annotation.task_types import Level
from ratings.stats.bradley_terry import bradley_terry_bootstrap
from ratings.stats.pairwise import win_matrix, win_rates

from .safe_cells import scrub_provenance, xlsx_row
from .study_data import CHUNK, HUMAN_KINDS, StudyData

BOLD = Font(bold=True)
BOOTSTRAP_RESAMPLES = 100
RAW_KEYS = ("raw_response", "raw", "response_text", "response")
INPUT_TOKEN_KEYS = ("prompt_tokens", "input_tokens", "tokens_in")
OUTPUT_TOKEN_KEYS = ("completion_tokens", "output_tokens", "tokens_out")
LATENCY_KEYS = ("latency_ms", "latency")


def _note(sheet, text: str) -> None:
    sheet.append(xlsx_row(sheet, [text]))


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
        Judgment.objects.filter(study=data.study)
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
    for rater_id, item_id, external_id, is_check, trial, status, value, duration, created, prov in rows.iterator(
        chunk_size=CHUNK
    ):
        if not wrote_header:
            sheet.append(xlsx_row(sheet, header, font=BOLD))
            wrote_header = True
        counter.add()
        judge = data.raters[rater_id]
        raw, tokens_in, tokens_out, latency, rest = judge_provenance(prov)
        number = data.number(item_id, value) if status == Judgment.Status.OK else None
        parsed = data.label(value) if value is not None else None
        sheet.append(
            xlsx_row(
                sheet,
                [
                    judge.label,
                    judge.kind,
                    external_id,
                    "yes" if is_check else "no",
                    trial,
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
    """Who a candidate stands for in a ranking: its generator when provenance names one, else its key."""
    provenance = data.candidate_provenance.get((item_id, key), {})
    for field in ("model", "generator", "source", "system"):
        if provenance.get(field):
            return str(provenance[field])
    return key


def _ranking_rows(matches: Matches) -> tuple[list[list[Any]], list[str]]:
    names = sorted(matches.names, key=matches.names.get)
    a, b, score = np.asarray(matches.a), np.asarray(matches.b), np.asarray(matches.score)
    k = len(names)
    fit = bradley_terry_bootstrap(a, b, score, n_contestants=k, names=names, n_resamples=BOOTSTRAP_RESAMPLES)
    wins = win_matrix(a, b, score, n_contestants=k)
    rates = win_rates(wins)
    games = (wins + wins.T).sum(axis=1)
    order = np.argsort(-fit.ratings, kind="stable")
    rows = [
        [
            rank + 1,
            names[i],
            round(float(fit.ratings[i]), 1),
            round(float(fit.ci_low[i]), 1),
            round(float(fit.ci_high[i]), 1),
            _figure(100 * rates[i]),
            float(games[i]),
        ]
        for rank, i in enumerate(order)
    ]
    return rows, fit.warnings


def write_rankings(data: StudyData, sheet, human: Matches | None, judges: dict[int, Matches]) -> None:
    if data.level != Level.PAIRWISE:
        _note(sheet, f"Rankings apply to pairwise studies; this study collects {data.task_type.title.lower()}.")
        return
    blocks = [("Human raters" + (" (selected subset)" if data.subset else " (included)"), human)]
    blocks += [(f"LLM judge {data.raters[pk].label}", m) for pk, m in judges.items()]
    wrote = False
    for title, matches in blocks:
        if matches is None or len(matches.names) < 2 or not len(matches.a):
            continue
        rows, notes = _ranking_rows(matches)
        if wrote:
            sheet.append([])
        sheet.append(xlsx_row(sheet, [title], font=BOLD))
        sheet.append(
            xlsx_row(
                sheet,
                ["Rank", "Contestant", "Bradley–Terry rating", "CI low (95%)", "CI high (95%)", "Win rate %", "Games"],
                font=BOLD,
            )
        )
        for row in rows:
            sheet.append(xlsx_row(sheet, row))
        for note in notes:
            sheet.append(xlsx_row(sheet, [f"Note: {note}"]))
        wrote = True
    if not wrote:
        _note(sheet, "No pairwise judgments between two or more contestants yet.")
