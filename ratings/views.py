# SPDX-License-Identifier: GPL-3.0-or-later
"""The study analysis page: agreement for a rater group, rating distributions,
rater-subset selection, aggregated labels and, for pairwise studies, the
Bradley–Terry leaderboard. An htmx request renders only the part of the page it targets.

The figures are a stored report (``ratings.cached``, kind ``analysis``):
:func:`analysis_result` computes them once per change of the study's
judgments, in a worker (or in the request for a small study), and the page
reads them, saying when they are out of date and polling while they are
recomputed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.http import retarget

from annotation.access import owned_study_or_404
from annotation.models import Study
from annotation.task_types import Level, get_task_type

from .cached import Progress, report_show
from .models import StudyReport
from .reports import (
    AnalysisError,
    best_worst_report,
    json_ready,
    pairwise_report,
    rating_distributions,
    study_agreement,
    subset_report,
    to_plain,
)
from .selectors import (
    GROUPS,
    NoNumericCoding,
    StudyMatrix,
    study_best_worst,
    study_pairwise_outcomes,
    study_raters,
    study_rating_matrix,
)
from .stats import FORM_LABELS, item_mean, item_median, majority_vote

TIE_RULES = {
    "higher": "Ties go to the higher rating",
    "lower": "Ties go to the lower rating",
    "undecided": "Ties stay undecided",
}
#: Rows of the per-item and per-rater tables shown on the page; the export carries the rest.
ITEM_ROWS = 300
RATER_ROWS = 200
BAR_WIDTH, BAR_GAP, CHART_HEIGHT = 18, 4, 48


class AnalysisForm(forms.Form):
    group = forms.ChoiceField(choices=list(GROUPS.items()), required=False)
    rater = forms.TypedMultipleChoiceField(coerce=int, required=False, label="Only these raters")
    k = forms.IntegerField(min_value=2, max_value=50, required=False, label="Raters to select")
    tie = forms.ChoiceField(choices=list(TIE_RULES.items()), required=False, label="Majority tie rule")

    def __init__(self, *args: Any, raters: list[tuple[int, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["rater"].choices = raters

    def value(self, name: str, default: Any) -> Any:
        if self.is_valid() and self.cleaned_data.get(name) not in (None, "", []):
            return self.cleaned_data[name]
        return default


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
            "rank": rank,
            "name": name,
            "bt": report["bradley_terry"][name],
            "elo": report["stable_elo"][name],
            "win_rate": report["win_rate"][name],
            "games": report["games"][name],
        }
        for rank, name in enumerate(report["ranking"], start=1)
    ]
    return report


def analysis_result(
    *, study: Study, group: str, rater_ids: list[int] | None, k: int, tie: str, progress: Progress | None = None
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
    return to_plain(result)


def compute_report(study: Study, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The registered computation of ``analysis`` reports (``ratings.cached``)."""
    return analysis_result(
        study=study,
        group=params["group"],
        rater_ids=params["rater_ids"],
        k=params["k"],
        tie=params["tie"],
        progress=progress,
    )


def _poll_url(request: HttpRequest) -> str:
    query = request.GET.copy()
    query["poll"] = "1"
    return f"{request.path}?{query.urlencode()}"


@require_GET
@login_required
def study_analysis(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    task_type = get_task_type(study.task_type)
    raters = [(r.id, f"{r.label} ({r.kind})") for r in study_raters(study=study)]
    form = AnalysisForm(request.GET or None, raters=raters)
    group = form.value("group", "humans")
    rater_ids = form.value("rater", None)
    k = form.value("k", 3)
    tie = form.value("tie", "higher")
    params = {"group": group, "rater_ids": sorted(rater_ids) if rater_ids else None, "k": k, "tie": tie}
    shown = report_show(study=study, kind=StudyReport.Kind.ANALYSIS, params=params, inline=not request.GET.get("poll"))
    context: dict[str, Any] = {
        "study": study,
        "task_type": task_type,
        "form": form,
        "group": group,
        "k": k,
        "tie_label": TIE_RULES[tie],
        "rater_rows": RATER_ROWS,
        "item_rows": ITEM_ROWS,
        "show_rater_picker": 0 < len(raters) <= RATER_ROWS,
        "shown": shown,
        "poll_url": _poll_url(request),
        **(shown.result or {}),
    }
    template = "ratings/study_analysis.html"
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    if partial and request.htmx.target == "subset":
        if shown.result:
            # The subset form swaps in only its own result.
            return render(request, f"{template}#subset", context)
        # Not computed yet for this k: the whole analysis part says so and polls.
        return retarget(render(request, f"{template}#analysis", context), "#analysis")
    return render(request, f"{template}#analysis" if partial else template, context)
