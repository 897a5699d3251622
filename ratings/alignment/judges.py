# SPDX-License-Identifier: GPL-3.0-or-later
"""Judges of a study side by side: alignment with the humans, and what each judge cost to run.

The alignment figures come from a stored alignment report (all judges, no
breakdown, the chosen human reference), so the ranking here is the report's
own ranking by its primary figure (``ratings.alignment.primary_metric``):
quadratic κ for rating scales, accuracy for binary labels and pick one of N,
agreement with the human majority (ties included) for pairwise choices.
κ carries the report's bootstrap interval; an accuracy or agreement share
carries a 95% Wilson score interval on the report's own correct / n counts.

The running figures are read from every judgment of the judge in the study
(any status, attention checks included) and what judging writes in
``Judgment.provenance``: ``tokens.prompt``, ``tokens.completion``, ``cost``
and ``latency_ms``, plus ``earlier_usage`` (the tokens and cost of the attempts
a retry replaced), so a retried judgment counts every call paid for. A cost is the recorded one; when judging recorded none
(or only zero while tokens were spent and the judge now has prices) it is
the tokens × the judge's configured prices per million; with neither it is
unknown (None) and the reason says why.

Prices are configured on the judging side, which this app may not import
(judging → ratings → annotation); the judging app registers where to read them
with :func:`register_price_source` when it starts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, FloatField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from annotation.models import Judgment, Rater, Study

from . import Family, primary_metric

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054

COST_RECORDED = "recorded"
COST_FROM_PRICES = "prices"

#: Given rater ids, the configured (input, output) prices per million tokens of those that have them.
PriceSource = Callable[[list[int]], dict[int, tuple[float, float]]]
_PRICE_SOURCES: list[PriceSource] = []


def register_price_source(source: PriceSource) -> None:
    """Let an app that configures judges (judging) say what they cost; registering twice is harmless."""
    if source not in _PRICE_SOURCES:
        _PRICE_SOURCES.append(source)


@dataclass(frozen=True)
class Interval:
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str  # "bootstrap" or "wilson"


@dataclass(frozen=True)
class Usage:
    """What one judge's judgments in a study record about running it."""

    n_judgments: int = 0
    n_failed: int = 0
    n_unparseable: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    recorded_cost: float | None = None  # sum over judgments that record a cost; None when none does
    mean_latency_ms: float | None = None
    n_with_latency: int = 0

    @property
    def failure_rate(self) -> float | None:
        return self.n_failed / self.n_judgments if self.n_judgments else None

    @property
    def unparseable_rate(self) -> float | None:
        return self.n_unparseable / self.n_judgments if self.n_judgments else None


@dataclass(frozen=True)
class JudgeRow:
    rank: int
    id: int
    label: str
    kind: str
    primary: Interval
    n_compared: int
    n_missing: int
    usage: Usage
    cost: float | None
    cost_source: str  # COST_RECORDED, COST_FROM_PRICES or "" when unknown
    cost_note: str

    @property
    def is_baseline(self) -> bool:
        return self.kind == Rater.Kind.BASELINE


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of a share ``correct / n``; (None, None) without items."""
    if n <= 0:
        return None, None
    p = correct / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _share(estimate: float | None, correct: int, n: int) -> Interval:
    low, high = wilson_interval(correct, n)
    return Interval(estimate, low, high, "wilson")


def primary_interval(family: str, row: dict[str, Any]) -> tuple[Interval, int, int]:
    """The primary figure of one judge's report row with its interval, items compared and items missing."""
    estimate = primary_metric(family, row)
    if family == Family.ORDINAL:
        kappa = row.get("kappa") or {}
        return (
            Interval(estimate, kappa.get("ci_low"), kappa.get("ci_high"), "bootstrap"),
            row["n_items"] - row["n_missing"],
            row["n_missing"],
        )
    if family == Family.PAIRWISE:
        basis = row["with_ties"]
        return _share(estimate, basis["correct"], basis["n"]), basis["n"], row["n_missing"]
    # The same choice primary_metric makes: gold for pick one when any item has it, else the majority.
    basis = row["vs_gold"] if family == Family.CHOICE and row["vs_gold"]["n"] else row["vs_majority"]
    return _share(estimate, basis["correct"], basis["n"]), basis["n"], basis["n_missing"]


def judge_usage(*, study: Study, judge_ids: list[int]) -> dict[int, Usage]:
    """Per judge: judgment counts by status, token sums, recorded cost and mean latency (one query)."""

    def number(path: str) -> Cast:
        return Cast(KT(f"provenance__{path}"), FloatField())

    rows = (
        Judgment.objects.filter(study=study, rater_id__in=judge_ids)
        .order_by()
        .values("rater_id")
        .annotate(
            n=Count("id"),
            failed=Count("id", filter=Q(status=Judgment.Status.FAILED)),
            unparseable=Count("id", filter=Q(status=Judgment.Status.UNPARSEABLE)),
            prompt=Sum(number("tokens__prompt")),
            completion=Sum(number("tokens__completion")),
            cost=Sum(number("cost")),
            # What the attempts a retry replaced spent (annotation.services.judgments.judgment_retry).
            earlier_prompt=Sum(number("earlier_usage__prompt")),
            earlier_completion=Sum(number("earlier_usage__completion")),
            earlier_cost=Sum(number("earlier_usage__cost")),
            latency=Avg(number("latency_ms")),
            with_latency=Count(number("latency_ms")),
        )
    )
    return {
        row["rater_id"]: Usage(
            n_judgments=row["n"],
            n_failed=row["failed"],
            n_unparseable=row["unparseable"],
            prompt_tokens=int((row["prompt"] or 0) + (row["earlier_prompt"] or 0)),
            completion_tokens=int((row["completion"] or 0) + (row["earlier_completion"] or 0)),
            recorded_cost=None
            if row["cost"] is None and not row["earlier_cost"]
            else (row["cost"] or 0) + (row["earlier_cost"] or 0),
            mean_latency_ms=row["latency"],
            n_with_latency=row["with_latency"],
        )
        for row in rows
    }


def _prices(judge_ids: list[int]) -> dict[int, tuple[float, float]]:
    """Configured (input, output) prices per million tokens of the judges that have a configuration."""
    prices: dict[int, tuple[float, float]] = {}
    for source in _PRICE_SOURCES:
        prices.update(source(judge_ids))
    return prices


def judge_cost(usage: Usage, prices: tuple[float, float] | None, kind: str) -> tuple[float | None, str, str]:
    """The cost estimate of a judge, where it comes from, and why it is unknown when it is."""
    tokens = usage.prompt_tokens + usage.completion_tokens
    priced = prices is not None and (prices[0] > 0 or prices[1] > 0)
    recorded = usage.recorded_cost
    if recorded is not None and (recorded > 0 or not tokens):
        return recorded, COST_RECORDED, ""
    # No recorded cost, or a zero one for spent tokens: judging had no prices when it ran.
    if tokens and priced:
        inp, out = prices
        return (usage.prompt_tokens * inp + usage.completion_tokens * out) / 1e6, COST_FROM_PRICES, ""
    if not tokens:
        if kind == Rater.Kind.BASELINE:
            return None, "", "a baseline makes no model calls"
        return None, "", "no tokens and no cost recorded"
    return None, "", "no cost recorded and no prices configured for this judge"


def judge_comparison(*, study: Study, result: dict[str, Any]) -> list[JudgeRow]:
    """The judges of a stored alignment report, in the report's ranking order, with their running figures."""
    family = result["family"]
    overall = result.get("overall") or {}
    rows = {row["id"]: row for row in overall.get("judges", [])}
    ranked = [r["id"] for r in result.get("ranking", []) if r["id"] in rows]
    judge_ids = list(rows)
    usage = judge_usage(study=study, judge_ids=judge_ids)
    prices = _prices(judge_ids)
    out = []
    for rank, judge_id in enumerate(ranked, start=1):
        row = rows[judge_id]
        primary, n_compared, n_missing = primary_interval(family, row)
        mine = usage.get(judge_id, Usage())
        cost, source, note = judge_cost(mine, prices.get(judge_id), row["kind"])
        out.append(
            JudgeRow(
                rank=rank,
                id=judge_id,
                label=row["label"],
                kind=row["kind"],
                primary=primary,
                n_compared=n_compared,
                n_missing=n_missing,
                usage=mine,
                cost=cost,
                cost_source=source,
                cost_note=note,
            )
        )
    return out
