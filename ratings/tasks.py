# SPDX-License-Identifier: GPL-3.0-or-later
"""Background work of the ratings app: exports too large for a request, and stored reports.

Both are held jobs run by the one building block (``annotation.job_tasks``):
the kinds below say how each is claimed, failed, released and recovered, and
each task body is the work alone.
"""

from annotation.job_tasks import Held, JobKind, job_kind_register, job_task
from annotation.jobs import job_release
from ratings.cached import report_claim, report_compute, report_fail, reports_recover
from ratings.exports.services import export_fail, export_release, export_run, export_take, exports_recover
from ratings.models import Export, StudyReport

EXPORTS = job_kind_register(
    JobKind(
        name="exports",
        model=Export,
        what="The export",
        claim=lambda pk, token: export_take(export_id=pk, token=token),
        fail=lambda pk, reason, token: export_fail(export_id=pk, error=reason, token=token),
        release=lambda pk: export_release(export_id=pk),
        recover=exports_recover,
    )
)

REPORTS = job_kind_register(
    JobKind(
        name="reports",
        model=StudyReport,
        what="The report",
        claim=lambda pk, token: report_claim(report_id=pk, token=token),
        fail=lambda pk, reason, token: report_fail(report_id=pk, error=reason, token=token),
        release=lambda pk: job_release(StudyReport, pk=pk),
        recover=reports_recover,
        outcome="the figures shown before stay.",
    )
)


@job_task(EXPORTS)
def export_study_task(job: Held) -> None:
    """Write one export; its file is moved into place only while this worker still holds it."""
    export_run(export=Export.objects.select_related("study").get(pk=job.pk), beat=job.beat)


@job_task(REPORTS)
def study_report_task(job: Held) -> None:
    """Compute one stored report (analysis, alignment, protocol, tournament)."""
    report_compute(report_id=job.pk, token=job.token, beat=job.beat)


from ratings.alignment.tasks import alignment_report_task  # noqa: E402,F401 - registers the task with the worker
