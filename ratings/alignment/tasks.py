# SPDX-License-Identifier: GPL-3.0-or-later
"""Alignment reports as stored reports (``ratings.cached``): parameters, the page's requests, the old task name.

An alignment report is a ``StudyReport`` of kind ``alignment`` (the
``AlignmentReport`` proxy): one row per study and parameter set holding the
last complete result, its timestamp and the fingerprint of the judgments it
was computed from. Computing, storing, leases, recovery and the freshness the
page shows are the shared machinery of ``ratings.cached``; this module only
turns the stored parameters back into ``AlignmentParams`` and keeps the task
name messages queued before an upgrade still carry.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from annotation.jobs import Recovered
from annotation.models import Study

from ..cached import (
    MAX_ATTEMPTS,
    Progress,
    ReportUnavailable,
    params_key,
    report_fail,
    report_run,
    report_show,
    reports_recover,
)
from ..models import AlignmentReport, StudyReport
from . import AlignmentParams, AlignmentUnavailable, compute_alignment

__all__ = [
    "MAX_ATTEMPTS",
    "Recovered",
    "alignment_report_task",
    "compute_report",
    "params_from_report",
    "report_fail",
    "report_for",
    "report_request",
    "report_run",
    "reports_recover",
]


def params_of(p: dict[str, Any]) -> AlignmentParams:
    return AlignmentParams(
        reference=p["reference"],
        reference_rater_ids=tuple(p.get("reference_rater_ids", ())),
        judge_ids=tuple(p.get("judge_ids", ())),
        breakdown=p.get("breakdown", ""),
        rater_breakdown=p.get("rater_breakdown", ""),
        n_resamples=p.get("n_resamples", 1000),
        seed=p.get("seed", 0),
    )


def params_from_report(report: StudyReport) -> AlignmentParams:
    return params_of(report.params)


def compute_report(study: Study, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The registered computation of ``alignment`` reports."""
    try:
        return compute_alignment(study=study, params=params_of(params), progress=progress)
    except AlignmentUnavailable as exc:
        raise ReportUnavailable(str(exc)) from None


def report_for(*, study: Study, params: AlignmentParams) -> AlignmentReport | None:
    return AlignmentReport.objects.filter(study=study, params_key=params_key(params.as_dict())).first()


def report_request(*, study: Study, params: AlignmentParams, inline: bool | None = None) -> AlignmentReport:
    """Ask for a (re)computation whatever the inputs: the Recompute button.

    Computed in the request for small studies unless ``inline`` is False; else queued.
    """
    shown = report_show(
        study=study, kind=StudyReport.Kind.ALIGNMENT, params=params.as_dict(), inline=inline is not False, force=True
    )
    return AlignmentReport.objects.get(pk=shown.report.pk)


# The name it had before it moved into the alignment package, so messages queued before an upgrade still run.
@shared_task(name="ratings.alignment_tasks.alignment_report_task")
def alignment_report_task(report_id: int) -> None:
    from ..tasks import study_report_task

    study_report_task.delay(report_id)
