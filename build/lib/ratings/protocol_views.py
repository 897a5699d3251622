# SPDX-License-Identifier: GPL-3.0-or-later
"""The protocol report page: the paper's tables and figures for a study made from a protocol template.

The report is recomputed from the judgments on each request; figures are
embedded in the page as PNG and offered as PNG/SVG downloads, and the whole
report downloads as a workbook (one sheet per table).
"""

from __future__ import annotations

import base64
import io

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import owned_study_or_404

from .protocols import NoProtocolReport, protocol_report, write_report_workbook


def _report(request: HttpRequest, slug: str):
    study = owned_study_or_404(request, slug=slug)
    try:
        return protocol_report(study=study)
    except NoProtocolReport as exc:
        raise Http404(str(exc)) from None


@require_GET
@login_required
def protocol_report_page(request: HttpRequest, slug: str) -> HttpResponse:
    report = _report(request, slug)
    sections = [
        {
            "section": section,
            "figures": [{"figure": f, "data": base64.b64encode(f.plot.png).decode("ascii")} for f in section.figures],
        }
        for section in report.sections
    ]
    return render(
        request, "ratings/protocol_report.html", {"study": report.study, "report": report, "sections": sections}
    )


@require_GET
@login_required
def protocol_figure(request: HttpRequest, slug: str, key: str, fmt: str) -> HttpResponse:
    report = _report(request, slug)
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
    report = _report(request, slug)
    stream = io.BytesIO()
    write_report_workbook(report, stream)
    response = HttpResponse(
        stream.getvalue(), content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    response["Content-Disposition"] = f'attachment; filename="{report.study.slug}-report.xlsx"'
    return response
