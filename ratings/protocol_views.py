# SPDX-License-Identifier: GPL-3.0-or-later
"""The protocol report page: the paper's tables and figures for a study made from a protocol template.

The report is a stored report (``ratings.cached``, kind ``protocol``):
computed by ``ratings.analysis.protocol_compute`` once per change of the
study's judgments, by a worker (in the request for a small study), and read
by the page, which says when it is out of date and polls while it is
recomputed. Figures are embedded in the page as PNG and
offered as PNG/SVG downloads, and the whole report downloads as a workbook
(one sheet per table); downloads use the stored report while it is current and
compute afresh otherwise, so a file never holds out-of-date figures.
"""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import owned_study_or_404
from annotation.models import Study

from .cached import Shown, report_show
from .models import StudyReport
from .protocols import (
    NoProtocolReport,
    ProtocolReport,
    has_report,
    protocol_report,
    report_from_stored,
    write_report_workbook,
)


def _shown(request: HttpRequest, slug: str, *, inline: bool) -> tuple[Study, Shown]:
    study = owned_study_or_404(request, slug=slug)
    if not has_report(study):
        raise Http404(f"Study {study.slug!r} follows no protocol template with a report.")
    return study, report_show(study=study, kind=StudyReport.Kind.PROTOCOL, params={}, inline=inline)


def _current_report(request: HttpRequest, slug: str) -> ProtocolReport:
    """For a download: the stored report if it is current, else one computed now."""
    study, shown = _shown(request, slug, inline=True)
    if shown.current:
        return report_from_stored(study, shown.result)
    try:
        return protocol_report(study=study)
    except NoProtocolReport as exc:
        raise Http404(str(exc)) from None


@require_GET
@login_required
def protocol_report_page(request: HttpRequest, slug: str) -> HttpResponse:
    poll = bool(request.GET.get("poll"))
    study, shown = _shown(request, slug, inline=not poll)
    report = report_from_stored(study, shown.result) if shown.result else None
    sections = (
        [
            {
                "section": section,
                "figures": [
                    {"figure": f, "data": stored["png"]}
                    for f, stored in zip(section.figures, raw["figures"], strict=True)
                ],
            }
            for section, raw in zip(report.sections, shown.result["sections"], strict=True)
        ]
        if report
        else []
    )
    context = {
        "study": study,
        "report": report,
        "sections": sections,
        "shown": shown,
        "poll_url": f"{request.path}?poll=1",
    }
    if request.htmx and not request.htmx.history_restore_request:
        return render(request, "ratings/protocol_report.html#body", context)
    return render(request, "ratings/protocol_report.html", context)


@require_GET
@login_required
def protocol_figure(request: HttpRequest, slug: str, key: str, fmt: str) -> HttpResponse:
    report = _current_report(request, slug)
    figure = report.figure(key)
    if figure is None or fmt not in ("png", "svg"):
        raise Http404("No such figure.")
    if fmt == "png":
        response = HttpResponse(figure.plot.png, content_type="image/png")
    else:
        response = HttpResponse(figure.plot.svg, content_type="image/svg+xml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{report.study.slug}-{key}.{fmt}"'
    return response


@require_GET
@login_required
def protocol_workbook(request: HttpRequest, slug: str) -> HttpResponse:
    report = _current_report(request, slug)
    stream = io.BytesIO()
    write_report_workbook(report, stream)
    response = HttpResponse(
        stream.getvalue(), content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    response["Content-Disposition"] = f'attachment; filename="{report.study.slug}-report.xlsx"'
    return response
