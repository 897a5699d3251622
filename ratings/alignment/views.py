# SPDX-License-Identifier: GPL-3.0-or-later
"""The alignment report page: judges against a human reference, with figures.

The page shows the last stored report for the chosen parameters, when it was
computed and whether judgments changed since (``ratings.cached``): a report
that is out of date is recomputed by a Celery worker (in the request for
small studies) while the page polls with htmx; "Recompute" asks again by hand. Figures are PNG or
SVG files drawn from the arrays stored with the report. Only the study's
owner sees any of it; everyone else gets a 404.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import owned_study_or_404
from annotation.models import Study
from annotation.task_types import get_task_type

from .. import plots
from ..cached import Shown, report_show
from ..models import AlignmentReport, StudyReport
from ..rater_groups import groupable_questions
from ..selectors import study_raters
from . import (
    REFERENCES,
    AlignmentParams,
    AlignmentUnavailable,
    Family,
    family_flags,
    metadata_keys,
    study_judges,
    task_family,
)
from .judges import judge_comparison

TEMPLATE = "ratings/alignment/report.html"
JUDGES_TEMPLATE = "ratings/alignment/judges.html"


class AlignmentForm(forms.Form):
    reference = forms.ChoiceField(choices=list(REFERENCES.items()), required=False, label="Human reference")
    rater = forms.TypedMultipleChoiceField(
        coerce=int, required=False, label="Chosen human raters", widget=forms.CheckboxSelectMultiple
    )
    judge = forms.TypedMultipleChoiceField(
        coerce=int, required=False, label="Judges (none ticked = all)", widget=forms.CheckboxSelectMultiple
    )
    breakdown = forms.ChoiceField(required=False, label="Break down by item metadata")
    by = forms.ChoiceField(required=False, label="Break down by rater group of")

    def __init__(self, *args: Any, humans, judges, keys, questions=(), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["rater"].choices = humans
        self.fields["judge"].choices = judges
        self.fields["breakdown"].choices = [("", "No breakdown"), *((k, k) for k in keys)]
        self.fields["by"].choices = [("", "No rater breakdown"), *questions]

    def params(self, seed: int) -> AlignmentParams:
        data = self.cleaned_data if self.is_valid() else {}
        reference = data.get("reference") or "passers"
        raters = tuple(data.get("rater") or ())
        if reference == "selected" and not raters:
            reference = "passers"
        return AlignmentParams(
            reference=reference,
            reference_rater_ids=raters if reference == "selected" else (),
            judge_ids=tuple(data.get("judge") or ()),
            breakdown=data.get("breakdown") or "",
            rater_breakdown=data.get("by") or "",
            seed=seed,
        )


def _form(study: Study, data) -> AlignmentForm:
    humans = [(r.id, f"{r.label} ({r.kind})") for r in study_raters(study=study) if r.kind in ("expert", "crowd")]
    judges = [(j.id, f"{j.label} ({j.kind})") for j in study_judges(study=study)]
    questions = [(q.key, f"{q.key}: {q.text}") for q in groupable_questions(study)]
    return AlignmentForm(
        data or None, humans=humans, judges=judges, keys=metadata_keys(study=study), questions=questions
    )


def _query(params: AlignmentParams) -> str:
    pairs: list[tuple[str, Any]] = [("reference", params.reference)]
    pairs += [("rater", r) for r in params.reference_rater_ids]
    pairs += [("judge", j) for j in params.judge_ids]
    if params.breakdown:
        pairs.append(("breakdown", params.breakdown))
    if params.rater_breakdown:
        pairs.append(("by", params.rater_breakdown))
    return urlencode(pairs)


def _reference_query(params: AlignmentParams) -> str:
    """The query choosing only the human reference: what the judge comparison page takes."""
    pairs: list[tuple[str, Any]] = [("reference", params.reference)]
    pairs += [("rater", r) for r in params.reference_rater_ids]
    return urlencode(pairs)


def _figures(study: Study, report: AlignmentReport) -> list[dict[str, str]]:
    """The figures a report has, each with its title, alt text and download links."""
    result = report.result or {}
    data = result.get("plots") or {}
    judges = {str(j["id"]): j["label"] for j in result.get("judges", [])}
    reference = result.get("reference", {}).get("label", "human reference")
    out: list[tuple[str, str, str]] = []
    family = result.get("family")
    if family == Family.ORDINAL:
        out.append(("distributions", "Ratings per rater", "Box plots of each rater's ratings, humans and judges"))
        out.append(
            ("spearman", "Spearman ρ between raters", "Heatmap of the Spearman correlation between every two raters")
        )
    if family == Family.PAIRWISE:
        rankings = data.get("rankings") or {}
        if any(rankings.values()):
            out.append(
                (
                    "leaderboard",
                    "Leaderboard",
                    "Bradley–Terry ratings of the contestants with 95% intervals, by humans and by each judge",
                )
            )
        if rankings.get("reference"):
            out.append(
                (
                    "winrate-reference",
                    f"Win rates: {reference}",
                    f"Heatmap of pairwise win rates from the votes of {reference}",
                )
            )
        for key, label in judges.items():
            if rankings.get(key):
                out.append(
                    (
                        f"winrate-{key}",
                        f"Win rates: {label}",
                        f"Heatmap of pairwise win rates from the verdicts of {label}",
                    )
                )
        for key in data.get("features") or {}:
            if key in judges:
                label = judges[key]
                out.append(
                    (
                        f"features-{key}",
                        f"Features: {label}",
                        f"Heatmap of the feature shares in the wins and losses of each contestant, judged by {label}",
                    )
                )
    both = _both_orders_judges(result)
    for key in data.get("confusion") or {}:
        if key in judges:
            orders = " (each order's verdict counted)" if key in both else ""
            out.append(
                (
                    f"confusion-{key}",
                    f"Confusion: {judges[key]}",
                    f"Confusion matrix of the {reference} consensus against the answers of {judges[key]}{orders}",
                )
            )
    # The version makes a browser fetch the figure again after a recomputation.
    version = f"?v={int(report.computed_at.timestamp())}" if report.computed_at else ""
    figures = []
    for name, title, alt in out:
        png = reverse("alignment:plot", args=[study.slug, report.pk, name, "png"])
        svg = reverse("alignment:plot", args=[study.slug, report.pk, name, "svg"])
        figures.append({"name": name, "title": title, "alt": alt, "png": png + version, "svg": svg + version})
    return figures


def _show(study: Study, params: AlignmentParams, *, poll: bool = False, force: bool = False) -> Shown:
    """The stored report for ``params``, recomputed when the judgments changed (never in a poll's request)."""
    return report_show(
        study=study, kind=StudyReport.Kind.ALIGNMENT, params=params.as_dict(), inline=not poll, force=force
    )


def _polled(request: HttpRequest) -> bool:
    return bool(request.GET.get("poll"))


def _context(
    request: HttpRequest, study: Study, form: AlignmentForm, params: AlignmentParams, shown: Shown
) -> dict[str, Any]:
    report = shown.report
    poll_url = f"{reverse('alignment:status', args=[study.slug, report.pk])}?{_query(params)}&poll=1"
    return {
        "shown": shown,
        "poll_url": poll_url,
        "study": study,
        "form": form,
        "params": params,
        "query": _query(params),
        "judges_query": _reference_query(params),
        "report": report,
        "result": report.result if report else None,
        "figures": _figures(study, report) if report and report.result else [],
        "family_title": get_task_type(study.task_type).title,
        "family": family_flags((report.result or {}).get("family") if report else None),
    }


@require_GET
@login_required
def alignment_report(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    try:
        task_family(study)
    except AlignmentUnavailable as exc:
        return render(request, TEMPLATE, {"study": study, "unsupported": str(exc)})
    form = _form(study, request.GET)
    params = form.params(study.seed)
    context = _context(request, study, form, params, _show(study, params, poll=_polled(request)))
    template = TEMPLATE
    if request.htmx and not request.htmx.history_restore_request:
        template = f"{TEMPLATE}#report"
    return render(request, template, context)


@require_POST
@login_required
def alignment_recompute(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    try:
        task_family(study)
    except AlignmentUnavailable:
        raise Http404("no alignment report for this task type") from None
    form = _form(study, request.POST)
    params = form.params(study.seed)
    shown = _show(study, params, force=True)
    if request.htmx:
        return render(request, f"{TEMPLATE}#report", _context(request, study, form, params, shown))
    return redirect(f"{reverse('alignment:report', args=[study.slug])}?{_query(params)}")


@require_GET
@login_required
def alignment_status(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The report section alone: the htmx poll while a report is computed."""
    study = owned_study_or_404(request, slug=slug)
    report = get_object_or_404(AlignmentReport, pk=pk, study=study)
    form = _form(study, request.GET)
    params = form.params(study.seed)
    shown = report_show(study=study, kind=report.kind, params=report.params, inline=False)
    return render(request, f"{TEMPLATE}#report", _context(request, study, form, params, shown))


def _both_orders_judges(result: dict[str, Any]) -> set[str]:
    """Ids of the report's pairwise judges asked in both orders: their confusion cells count verdicts."""
    return {str(row["id"]) for row in (result.get("overall") or {}).get("judges", []) if row.get("both_orders")}


def _draw(result: dict[str, Any], name: str) -> plots.Plot:
    data = result.get("plots") or {}
    judges = {str(j["id"]): j["label"] for j in result.get("judges", [])}
    reference = result.get("reference", {}).get("label", "human reference")
    kind, _, key = name.partition("-")
    if kind == "distributions" and "counts" in data:
        return plots.rating_distributions(data["raters"], data["counts"], data["scale"], kinds=data.get("kinds", ()))
    if kind == "spearman" and "spearman" in data:
        return plots.spearman_heatmap(data["raters"], data["spearman"])
    if kind == "confusion" and key in (data.get("confusion") or {}) and key in judges:
        unit = "verdicts" if key in _both_orders_judges(result) else "items"
        return plots.confusion_matrix(
            data["confusion"][key], data["scale_names"], judge=judges[key], reference=reference, unit=unit
        )
    rankings = data.get("rankings") or {}
    if kind == "leaderboard" and rankings:
        series = [{"label": reference, **rankings["reference"]}] if rankings.get("reference") else []
        series += [{"label": judges[k], **v} for k, v in rankings.items() if k in judges and v]
        return plots.leaderboard(series)
    if kind == "winrate" and rankings.get(key) and (key == "reference" or key in judges):
        ranking = rankings[key]
        title = f"Win rates: {reference if key == 'reference' else judges[key]}"
        return plots.win_rate_heatmap(ranking["names"], ranking["win_rates"], title=title)
    features = data.get("features") or {}
    if kind == "features" and key in features and key in judges:
        f = features[key]
        return plots.feature_heatmap(f["contestants"], f["features"], f["shares"], judge=judges[key])
    raise Http404("no such figure in this report")


@require_GET
@login_required
def alignment_plot(request: HttpRequest, slug: str, pk: int, name: str, fmt: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    report = get_object_or_404(AlignmentReport, pk=pk, study=study)
    if fmt not in ("png", "svg") or not report.result:
        raise Http404("no such figure")
    plot = _draw(report.result, name)
    filename = f"{study.slug}-alignment-{name}.{fmt}"
    if fmt == "png":
        response = HttpResponse(plot.png, content_type="image/png")
    else:
        response = HttpResponse(plot.svg, content_type="image/svg+xml; charset=utf-8")
        # Opened on its own, an SVG is a document: let it run nothing and load nothing.
        response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=300"
    return response


# -- judge comparison --------------------------------------------------------------------


def _comparison_params(form: AlignmentForm, study: Study) -> AlignmentParams:
    """Every judge, no breakdown: the comparison reads the alignment report of these settings."""
    return replace(form.params(study.seed), judge_ids=(), breakdown="", rater_breakdown="")


def _comparison_context(study: Study, form: AlignmentForm, params: AlignmentParams, shown: Shown) -> dict[str, Any]:
    report = shown.report
    result = report.result
    rows = judge_comparison(study=study, result=result) if result and result.get("overall") else []
    return {
        "shown": shown,
        "poll_url": f"{reverse('alignment:judges', args=[study.slug])}?{_reference_query(params)}&poll=1",
        "study": study,
        "form": form,
        "params": params,
        "query": _reference_query(params),
        "report": report,
        "result": result,
        "rows": rows,
        "cost_notes": sorted({row.cost_note for row in rows if row.cost_note}),
        "family_title": get_task_type(study.task_type).title,
        "family": family_flags((result or {}).get("family")),
    }


@require_GET
@login_required
def judge_comparison_page(request: HttpRequest, slug: str) -> HttpResponse:
    """All judges of a study ranked by alignment with a human reference, with their running costs."""
    study = owned_study_or_404(request, slug=slug)
    try:
        task_family(study)
    except AlignmentUnavailable as exc:
        return render(request, JUDGES_TEMPLATE, {"study": study, "unsupported": str(exc)})
    form = _form(study, request.GET)
    params = _comparison_params(form, study)
    shown = _show(study, params, poll=_polled(request))
    template = JUDGES_TEMPLATE
    if request.htmx and not request.htmx.history_restore_request:
        template = f"{JUDGES_TEMPLATE}#judges"
    return render(request, template, _comparison_context(study, form, params, shown))


@require_POST
@login_required
def judge_comparison_recompute(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    try:
        task_family(study)
    except AlignmentUnavailable:
        raise Http404("no alignment report for this task type") from None
    form = _form(study, request.POST)
    params = _comparison_params(form, study)
    shown = _show(study, params, force=True)
    if request.htmx:
        return render(request, f"{JUDGES_TEMPLATE}#judges", _comparison_context(study, form, params, shown))
    return redirect(f"{reverse('alignment:judges', args=[study.slug])}?{_reference_query(params)}")
