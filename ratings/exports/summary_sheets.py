# SPDX-License-Identifier: GPL-3.0-or-later
"""The workbook's smaller sheets: Metadata, Raters and Agreement."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from django.db.models import Count, Max, Min, Q
from django.utils import timezone

import funnybone
from annotation.models import Enrollment, Judgment, counted_raters
from ratings.stats.agreement import (
    exact_agreement,
    mean_absolute_deviation,
    percentage_agreement,
)
from ratings.stats.alpha import krippendorff_alpha
from ratings.stats.correlation import spearman
from ratings.stats.leaderboard import DEFAULT_RESAMPLES
from ratings.stats.report import agreement_summary

from .item_figures import ADJACENT_DEFINITION, EXACT_DEFINITION, MAD_DEFINITION
from .study_data import HUMAN_KINDS, StudyData


def _note(sheet, text: str) -> None:
    sheet.append([text])


# -- Metadata ----------------------------------------------------------------


def write_metadata(data: StudyData, sheet, *, judgments_read: int, sort_note: str) -> None:
    study = data.study
    sheet.widths({0: 34, 1: 100})
    sheet.append(["Key", "Value"], bold=True)
    counts = Judgment.objects.filter(counted_raters(), study=study).aggregate(
        total=Count("pk"), human=Count("pk", filter=Q(rater__kind__in=HUMAN_KINDS))
    )
    rows: list[tuple[str, Any]] = [
        ("Study", study.name),
        ("Slug", study.slug),
        ("Description", study.description),
        ("Protocol", study.protocol),
        ("Task type", study.task_type),
        ("Task configuration", data.config),
        ("State", study.state),
        ("Judgments per item (quota)", study.quota_per_item),
        ("Per-rater cap", study.per_rater_cap),
        ("Item order", study.item_order),
        ("Attention-check rate", study.attention_check_rate),
        ("Attention-check policy", study.attention_check_policy),
        ("Attention-check failures allowed", study.attention_check_max_failures),
        ("Minimum seconds per item", study.min_seconds_per_item),
        ("Created", study.created_at),
        ("Items (regular)", len(data.item_ids)),
        ("Items (attention checks)", study.items.filter(is_attention_check=True).count()),
        ("Human raters", len(data.humans)),
        ("Human raters excluded", sum(1 for r in data.humans if r.excluded)),
        ("LLM and baseline judges", len(data.judges)),
        ("Judgments (all)", counts["total"]),
        ("Judgments (human)", counts["human"]),
        ("Rater subset", ", ".join(f"R{pk}" for pk in data.subset) if data.subset else "none chosen"),
        ("Exported at", timezone.now()),
        ("Times", "All dates and times in this workbook are UTC."),
        ("Software", f"Funnybone {funnybone.__version__}"),
        (
            "Consensus",
            "Computed from the usable judgments (status ok) on regular items of "
            + ("the selected rater subset." if data.subset else "all human raters who were not excluded.")
            + " Attention-check items and LLM judges never enter the consensus.",
        ),
        ("Items sheet order", sort_note),
        (
            "Ratings sheet",
            "Every human rater's raw answers, one column each, excluded raters too (the Raters sheet says "
            "who was excluded and why); attention-check items are left out.",
        ),
        ("Median", "Per item: the middle rating; with an even number of ratings, the midpoint of the two middle ones."),
        ("Mean / SD", "Per item: arithmetic mean and sample standard deviation (n − 1) of the ratings."),
        ("Exact agreement", EXACT_DEFINITION),
        ("Adjacent agreement", ADJACENT_DEFINITION),
        ("Mean absolute deviation", MAD_DEFINITION),
        ("Majority", "Most frequent value; on a tie between ratings, the higher rating (JEST rule)."),
        ("ICC(2,k)", "Two-way random-effects intraclass correlation of the mean of k raters (complete items)."),
        ("Krippendorff's alpha", "Agreement beyond chance for any number of raters and missing ratings."),
        ("Mean pairwise Spearman", "Average Spearman rank correlation over all pairs of raters."),
        ("Percentage agreement", "Per item, the share of agreeing rater pairs; averaged over items."),
        (
            "Bradley–Terry rating",
            "Strength on the Elo scale (mean 1000) fitted by MM; ties count half a win; 95% CI by "
            f"bootstrap over matches ({DEFAULT_RESAMPLES} resamples).",
        ),
        ("Formula safety", "Text cells are stored as text, never formulas, even when they start with = + - or @."),
        ("Provenance", "Keys that look like credentials (key, token, secret, …) are removed; token counts stay."),
        ("Judgments read for this workbook", judgments_read),
    ]
    for key, value in rows:
        sheet.append([key, value])


# -- Raters ------------------------------------------------------------------


def write_raters(data: StudyData, sheet) -> None:
    if not data.raters:
        _note(sheet, "No raters have joined this study yet.")
        return
    header = [
        "Rater",
        "Rater id",
        "Kind",
        "Pseudonym",
        "Judge name",
        "Enrolled at",
        "Consented at",
        "Completed at",
        "Judgments",
        "Usable judgments",
        "Attention checks passed",
        "Attention checks failed",
        "Too fast",
        "Excluded",
        "Exclusion reason",
        "Ended early",
        "In subset",
        "First judgment at",
        "Last judgment at",
    ]
    sheet.append(header, bold=True)
    tallies = {
        row["rater_id"]: row
        for row in Judgment.objects.filter(study=data.study)
        .values("rater_id")
        .annotate(
            n=Count("pk"),
            ok=Count("pk", filter=Q(status=Judgment.Status.OK)),
            passed=Count("pk", filter=Q(attention_passed=True)),
            failed=Count("pk", filter=Q(attention_passed=False)),
            too_fast=Count("pk", filter=Q(too_fast=True)),
            first=Min("created_at"),
            last=Max("created_at"),
        )
        .order_by()
    }
    enrollments = {
        e["rater_id"]: e
        for e in Enrollment.objects.filter(study=data.study).values(
            "rater_id", "created_at", "consented_at", "completed_at", "ended_early"
        )
    }
    for rater in data.raters.values():
        tally = tallies.get(rater.pk, {})
        enrolled = enrollments.get(rater.pk, {})
        subset = ("yes" if rater.in_subset else "no") if data.subset else None
        sheet.append(
            [
                rater.label,
                rater.pk,
                rater.kind,
                rater.pseudonym,
                rater.judge_name,
                enrolled.get("created_at"),
                enrolled.get("consented_at"),
                enrolled.get("completed_at"),
                tally.get("n", 0),
                tally.get("ok", 0),
                tally.get("passed", 0),
                tally.get("failed", 0),
                tally.get("too_fast", 0),
                "yes" if rater.excluded else "no",
                rater.excluded_reason,
                "yes" if enrolled.get("ended_early") else "no",
                subset,
                tally.get("first"),
                tally.get("last"),
            ],
        )


# -- Agreement -----------------------------------------------------------------


def _figure(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 4)


def _scale_metrics(matrix: np.ndarray, points: list[float]) -> dict[str, Any]:
    summary = agreement_summary(matrix, categories=points)
    m = summary.metrics
    return {
        "Items": summary.n_items,
        "Raters": summary.n_raters,
        "ICC(2,k)": m["icc2k"],
        "Krippendorff's alpha (ordinal)": m["alpha_ordinal"],
        "Exact agreement %": 100 * m["exact_agreement"],
        "Adjacent agreement %": 100 * m["adjacent_agreement"],
        "Mean per-item SD": m["mean_item_sd"],
        "Mean absolute deviation": mean_absolute_deviation(matrix).value,
        "Mean pairwise Spearman rho": m["mean_pairwise_spearman"],
        "Notes": "; ".join(summary.warnings),
    }


def _label_metrics(matrix: np.ndarray) -> dict[str, Any]:
    return {
        "Items": matrix.shape[0],
        "Raters": matrix.shape[1],
        "Krippendorff's alpha (nominal)": krippendorff_alpha(matrix, level="nominal"),
        "Percentage agreement (pairs) %": 100 * percentage_agreement(matrix).value,
        "Exact agreement (all raters) %": 100 * exact_agreement(matrix).value,
        "Notes": "",
    }


def write_agreement(data: StudyData, sheet, matrix: np.ndarray | None, note: str) -> None:
    if matrix is None:
        _note(sheet, note or "No agreement figures for this study.")
        return
    rated = ~np.isnan(matrix).all(axis=1)
    if rated.sum() < 2:
        _note(sheet, "Agreement needs at least two items rated by the included human raters.")
        return
    # Every item rated (the usual case): the matrix itself, not a copy of it.
    everyone = matrix if rated.all() else matrix[rated]
    groups: list[tuple[str, np.ndarray]] = [("All included human raters", everyone)]
    if data.subset:
        columns = [i for i, r in enumerate(data.included) if r.in_subset]
        if len(columns) >= 2:
            groups.append(("Selected subset", everyone[:, columns]))
    results = []
    for name, values in groups:
        try:
            metrics = _scale_metrics(values, data.scale_points()) if data.is_scale else _label_metrics(values)
        except ValueError as exc:
            metrics = {"Notes": f"could not be computed: {exc}"}
        results.append((name, metrics))
    sheet.widths({0: 34})
    sheet.append(["Metric", *[name for name, _ in results]], bold=True)
    keys = list(dict.fromkeys(k for _, metrics in results for k in metrics))
    for key in keys:
        cells = [metrics.get(key) for _, metrics in results]
        sheet.append([key, *[c if isinstance(c, str) else _figure(c) for c in cells]])
    if data.is_scale and len(groups) == 2:
        full = np.nanmean(groups[0][1], axis=1)
        part = np.nanmean(groups[1][1], axis=1)
        keep = ~np.isnan(full) & ~np.isnan(part)
        if keep.sum() >= 3:
            rho = spearman(full[keep], part[keep], n_resamples=DEFAULT_RESAMPLES)
            sheet.append([])
            sheet.append(
                [
                    "Spearman rho, all-rater mean vs subset mean per item",
                    _figure(rho.estimate),
                    f"95% CI {_figure(rho.ci_low)} to {_figure(rho.ci_high)}",
                ],
            )
