# SPDX-License-Identifier: GPL-3.0-or-later
"""The computations behind a study's analysis pages, apart from the pages that show them.

The analysis page's figures (agreement for a rater group, rating
distributions, rater-subset selection, aggregated labels and, for pairwise
studies, the Bradley–Terry leaderboard) and the protocol report are stored
reports (``ratings.cached``, kinds ``analysis`` and ``protocol``): a worker
computes them once per change of the study's judgments, or the request does
for a small study, and the pages (``ratings.views``, ``ratings.protocol_views``)
only read them. Workers import this module, never a view module
(``tests/test_dependency_direction.py``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from django.conf import settings

from annotation.allocation import scale_ends
from annotation.allocation.state import allocation_summary, passive_means
from annotation.models import Study
from annotation.task_types import Level, get_task_type

from .cached import Progress, ReportUnavailable
from .protocols import NoProtocolReport, protocol_report, report_stored
from .rater_groups import rater_groups, small_group_raters
from .reports import (
    AnalysisError,
    alpha_figures,
    best_worst_report,
    json_ready,
    pairwise_report,
    rating_distributions,
    study_agreement,
    subset_report,
    to_plain,
)
from .selectors import (
    NoNumericCoding,
    StudyMatrix,
    study_best_worst,
    study_pairwise_outcomes,
    study_rating_matrix,
)
from .stats import FORM_LABELS, item_mean, item_median, majority_vote

TIE_RULES = {
    "higher": "Ties go to the higher rating",
    "lower": "Ties go to the lower rating",
    "undecided": "Ties stay undecided",
}


def tie_rules_for(level: str) -> dict[str, str]:
    """The majority tie rules that mean something for a statistics family.

    Only a scale has a higher and a lower rating: for pairwise answers the "higher"
    code is the first candidate shown, for labels and picks an arbitrary category,
    so a tie there stays undecided.
    """
    if level in (Level.ORDINAL, Level.INTERVAL):
        return dict(TIE_RULES)
    return {"undecided": TIE_RULES["undecided"]}


def default_tie_rule(level: str) -> str:
    return next(iter(tie_rules_for(level)))


#: Rows of the per-item and per-rater tables shown on the page; the export carries the rest.
ITEM_ROWS = 300
RATER_ROWS = 200
BAR_WIDTH, BAR_GAP, CHART_HEIGHT = 18, 4, 48


def _bar_chart(counts: np.ndarray, names: list[str]) -> dict[str, Any]:
    """Geometry of a small server-rendered SVG bar chart of one rater's counts."""
    top = max(int(counts.max()) if counts.size else 0, 1)
    bars = []
    for i, (count, name) in enumerate(zip(counts.tolist(), names, strict=True)):
        height = round(CHART_HEIGHT * count / top)
        bars.append(
            {
                "x": i * (BAR_WIDTH + BAR_GAP),
                "y": CHART_HEIGHT - height,
                "width": BAR_WIDTH,
                "height": height,
                "count": count,
                "name": name,
            }
        )
    return {"bars": bars, "width": len(bars) * (BAR_WIDTH + BAR_GAP), "height": CHART_HEIGHT}


def _distributions(data: StudyMatrix) -> list[dict[str, Any]]:
    if not data.raters:
        return []
    counts = (
        data.rater_counts[:RATER_ROWS]
        if data.rater_counts is not None
        else rating_distributions(data.values, categories=data.scale.codes)
    )
    return [
        {
            "rater": asdict(rater),
            "counts": row.tolist(),
            "total": int(row.sum()),
            "chart": _bar_chart(row, data.scale.names),
        }
        for rater, row in zip(data.raters[:RATER_ROWS], counts, strict=False)
    ]


def _scale_name(data: StudyMatrix, value: float) -> str:
    if np.isnan(value):
        return ""
    hits = np.flatnonzero(data.scale.codes == value)
    return data.scale.names[hits[0]] if hits.size else f"{value:g}"


def _aggregates(data: StudyMatrix, tie: str, ds: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per item: mean, median, majority vote and (nominal scales) the Dawid–Skene label of ``study_agreement``."""
    if data.values.size == 0 or np.isnan(data.values).all():
        return []
    values = data.values[:ITEM_ROWS]
    counts = (~np.isnan(values)).sum(axis=1)
    mean, median = item_mean(values), item_median(values)
    majority = majority_vote(values, categories=data.scale.codes, tie=tie)
    rows = []
    for i, label in enumerate(data.item_labels[:ITEM_ROWS]):
        row = {
            "item": label,
            "n": int(counts[i]),
            "mean": None if np.isnan(mean[i]) else float(mean[i]),
            "median": None if np.isnan(median[i]) else float(median[i]),
            "majority": _scale_name(data, majority[i]) or "undecided",
        }
        if ds is not None:
            estimate = ds["labels"].get(str(label), {})
            row["ds_label"] = estimate.get("label")
            row["ds_confidence"] = estimate.get("confidence")
        rows.append(row)
    return rows


def _subset(data: StudyMatrix, k: int) -> dict[str, Any]:
    labels = [r.label for r in data.raters]
    if len(labels) < 3:
        return {"error": "Selecting a subset needs at least three raters in this group."}
    if not data.whole:
        return {
            "error": f"Selecting a subset needs the whole matrix of {data.n_items} items × {len(labels)} raters, "
            "which is too large to build here."
        }
    k = min(k, len(labels) - 1)
    try:
        report = subset_report(
            data.values, k=k, rater_ids=labels, categories=data.scale.codes, nominal=data.scale.nominal
        )
    except AnalysisError as exc:
        return {"error": str(exc)}
    return json_ready(report)


def _leaderboard(study: Study, group: str, rater_ids: list[int] | None) -> dict[str, Any]:
    outcomes = study_pairwise_outcomes(study=study, group=group, rater_ids=rater_ids)
    try:
        report = pairwise_report(outcomes.a, outcomes.b, outcomes.score, seed=study.seed)
    except (AnalysisError, ValueError) as exc:
        return {"error": str(exc), "rows": []}
    report = json_ready(report)
    report["warnings"] = outcomes.warnings + report["warnings"]
    report["rows"] = [
        {
            "rank": report["rank"][name],
            "name": name,
            "bt": report["bradley_terry"][name],
            "elo": report["stable_elo"][name],
            "win_rate": report["win_rate"][name],
            "games": report["games"][name],
        }
        for name in report["ranking"]
    ]
    return report


def by_rater_group(*, study: Study, group: str, data: StudyMatrix, key: str) -> dict[str, Any]:
    """Krippendorff's α of each group of raters split by their answer to question ``key`` (``rater_groups``).

    The groups hold the raters of the page's rater group (``data``); each part's
    α is computed on its own raters' columns of the group's matrix, as the whole
    group's is, or (a matrix too large to hold whole) from its own judgments.
    """
    nominal = bool(data.scale.nominal)
    try:
        groups = rater_groups(study=study, key=key, within={r.id for r in data.raters})
    except ValueError as exc:
        return {"key": key, "error": str(exc), "rows": []}
    small = small_group_raters()
    columns = {r.id: n for n, r in enumerate(data.raters)}
    rows = []
    for part in groups:
        warnings: list[str] = []
        if data.whole:
            sub = data.values[:, [columns[pk] for pk in part.rater_ids]]
            n_judgments = int((~np.isnan(sub)).sum())
            alpha = (
                alpha_figures(
                    sub, np.sort(np.asarray(data.scale.codes, dtype=float)), nominal=nominal, warnings=warnings
                )
                if sub.shape[1] >= 2
                else {}
            )
            if sub.shape[1] < 2:
                warnings.append("agreement needs ratings from at least two raters")
        else:
            figures = json_ready(study_agreement(study=study, group=group, rater_ids=part.rater_ids))
            alpha = (figures["agreement"] or {}).get("krippendorff_alpha") or {}
            n_judgments, warnings = figures["n_judgments"], figures["warnings"]
        value = alpha.get("nominal" if nominal else "ordinal")
        rows.append(
            {
                "value": part.value,
                "label": part.label,
                "n_raters": len(part.rater_ids),
                "n_judgments": n_judgments,
                "small": len(part.rater_ids) < small,
                "alpha": None if value is None or np.isnan(value) else float(value),
                "warnings": warnings,
            }
        )
    answered = sum(len(p.rater_ids) for p in groups)
    return {
        "key": key,
        "level": "nominal" if nominal else "ordinal",
        "rows": rows,
        "small_below": small,
        "unanswered": len(data.raters) - answered,
    }


def analysis_result(
    *,
    study: Study,
    group: str,
    rater_ids: list[int] | None,
    k: int,
    tie: str,
    by_question: str = "",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every figure of the analysis page for one rater group, as plain JSON values (the stored report)."""
    progress = progress or (lambda fraction, message: None)
    task_type = get_task_type(study.task_type)
    progress(0.05, "reading the judgments")
    if task_type.level == Level.BEST_WORST:
        try:
            report = json_ready(best_worst_report(study_best_worst(study=study, group=group, rater_ids=rater_ids)))
        except AnalysisError as exc:
            report = {"error": str(exc)}
        return {"best_worst": report}
    try:
        data = study_rating_matrix(
            study=study,
            group=group,
            rater_ids=rater_ids,
            max_cells=settings.FUNNYBONE_DENSE_MATRIX_CELLS,
            first_rows=ITEM_ROWS,
        )
    except NoNumericCoding as exc:
        return {"unsupported": str(exc)}
    progress(0.2, "selecting a rater subset")
    subset = _subset(data, k)
    progress(0.4, "agreement")
    agreement = json_ready(study_agreement(study=study, group=group, rater_ids=rater_ids, matrix=data))
    figures = agreement["agreement"] or {}
    progress(0.6, "aggregating labels")
    result: dict[str, Any] = {
        "raters": [asdict(r) for r in data.raters],
        "subset": subset,
        "icc_rows": [(FORM_LABELS[name], entry) for name, entry in figures.get("icc", {}).items()],
        "scale_names": list(data.scale.names),
        "agreement": agreement,
        "distributions": _distributions(data),
        "distributions_truncated": len(data.raters) > RATER_ROWS,
        "aggregates": _aggregates(data if data.first is None else data.first, tie, agreement.get("dawid_skene")),
        "dawid_skene": agreement.get("dawid_skene"),
        "aggregates_truncated": data.n_items > ITEM_ROWS,
        "nominal": bool(data.scale.nominal),
    }
    if task_type.level == Level.PAIRWISE:
        progress(0.75, "Bradley–Terry leaderboard")
        result["leaderboard"] = _leaderboard(study, group, rater_ids)
    if (allocation := allocation_report(study)) is not None:
        result["allocation"] = allocation
    if by_question:
        progress(0.85, "agreement by rater group")
        result["by_group"] = by_rater_group(study=study, group=group, data=data, key=by_question)
    return to_plain(result)


def allocation_report(study: Study) -> dict[str, Any] | None:
    """How an adaptively allocated study's judgments were chosen, and estimates that hold under it.

    The judgments the policy chose and those of the passive (uniform) share are counted apart.
    The top items' intervals are the policy's anytime-valid KL bounds, which stay valid however
    the policy chose; beside them, each item's mean over its passive answers alone, which is an
    unbiased sample but a small one (docs/adaptive.md, "Estimates"). None for a uniform study.
    """
    summary = allocation_summary(study=study)
    if summary is None:
        return None
    passive = passive_means(study=study)
    task_type = get_task_type(study.task_type)
    low, high = scale_ends(task_type, task_type.config(study.config))
    for row in summary.get("best", []):
        n, mean = passive.get(row["item"], (0, None))
        row["passive_n"] = n
        row["passive_mean"] = None if mean is None else low + mean * (high - low)
    summary["intervals"] = (
        "anytime-valid KL confidence bounds (valid under adaptive sampling) at confidence "
        f"{1 - study.allocation_delta:.0%}; the passive mean uses the passive share's answers only"
    )
    return summary


def analysis_compute(study: Study, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The registered computation of ``analysis`` reports (``ratings.cached``)."""
    return analysis_result(
        study=study,
        group=params["group"],
        rater_ids=params["rater_ids"],
        k=params["k"],
        tie=params["tie"],
        by_question=params.get("by_question", ""),
        progress=progress,
    )


def protocol_compute(study: Study, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The registered computation of ``protocol`` reports: the paper-style tables and figures."""
    progress(0.05, "computing the protocol's tables and figures")
    try:
        return report_stored(protocol_report(study=study))
    except NoProtocolReport as exc:
        raise ReportUnavailable(str(exc)) from None
