# SPDX-License-Identifier: GPL-3.0-or-later
"""Reports kept per change of their inputs, computed by a worker, read by the pages.

The analysis page, the alignment report, the protocol report and the
tournament leaderboard each store their figures in one ``StudyReport`` row per
study, kind and parameter set. With the figures the row keeps the
*fingerprint* of the data they were computed from (:func:`study_inputs`:
how many judgments of each status, the newest judgment and item ids, and
the study's count of edits in place), so a page compares it with the
study's fingerprint now — a few cheap indexed queries — instead of
recomputing:

- the same: the stored figures are current;
- different: the page shows the stored figures as out of date ("N new
  judgments since") and asks for a recomputation itself — a conditional
  update, so at most one is queued per report; htmx polling swaps the fresh
  figures in when the worker is done;
- a computation for these inputs already failed: the page shows the reason
  and whether the figures shown beside it are stale, and waits for new
  judgments (or the Recompute button) before trying again.

A report is a leased job (``annotation.jobs``): :func:`report_run` claims it
under a token, a heartbeat renews the lease, the result is stored only while
the token holds it, and recovery re-queues a report whose worker died.
Studies with at most ``FUNNYBONE_REPORT_INLINE_JUDGMENTS`` judgments are
computed in the first request that needs them (a page poll never computes).

The computations themselves live apart from the pages (``ratings.analysis``,
``ratings.protocols``, ``ratings.alignment``, ``judging``); each kind
registers one function ``compute(study, params, progress) -> dict`` of plain
JSON values with :func:`register_kind` from its app's ``ready``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from annotation.job_tasks import job_run
from annotation.jobs import (
    Beat,
    Claim,
    LeaseLost,
    Recovered,
    job_claim,
    job_fail,
    job_finish,
    lease_seconds,
    stale_jobs,
    stale_jobs_recover,
)
from annotation.models import Enrollment, Item, Judgment, Study

from .models import StudyReport

logger = logging.getLogger(__name__)

Progress = Callable[[float, str], None]
Compute = Callable[[Study, dict[str, Any], Progress], dict[str, Any]]

#: Claims (first run, retries, recoveries) before a report whose worker keeps dying is failed.
MAX_ATTEMPTS = 2

_KINDS: dict[str, tuple[Compute, bool]] = {}
#: The config key by which a study names the study it belongs to (a tournament's matches, a human check).
SOURCE_LINK = "source_study"


class ReportUnavailable(ValueError):
    """The study's data cannot give this report; the message is shown as the failure's reason."""


def register_kind(kind: str, compute: Compute, *, linked: bool = False) -> None:
    """Say how reports of ``kind`` are computed; ``linked``: they also read the study's linked studies."""
    if kind not in StudyReport.Kind.values:
        raise ValueError(f"unknown report kind {kind!r}")
    _KINDS[kind] = (compute, linked)


def _kind(kind: str) -> tuple[Compute, bool]:
    try:
        return _KINDS[kind]
    except KeyError:
        raise LookupError(f"no computation registered for {kind!r} reports") from None


def params_key(params: dict[str, Any]) -> str:
    """A stable digest of a report's parameters (the same digest ``AlignmentParams.key`` gives)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:32]


# -- the fingerprint of a study's inputs -----------------------------------------------------


def linked_studies(study: Study) -> QuerySet[Study]:
    """The study, the studies naming it as their source (tournament matches, human checks) and the one it names."""
    slugs = {study.slug}
    source = (study.config or {}).get(SOURCE_LINK) if isinstance(study.config, dict) else None
    if isinstance(source, str) and source:
        slugs.add(source)
    return Study.objects.filter(Q(pk=study.pk) | Q(slug__in=slugs) | Q(**{f"config__{SOURCE_LINK}__in": sorted(slugs)}))


def study_inputs(*, study: Study, linked: bool = False) -> dict[str, Any]:
    """What a report of the study is computed from, in a few numbers.

    Judgments per status (a retried failure that became OK changes them), the
    newest judgment id (an added judgment), the items' count and newest id,
    how many raters are excluded (the attention-check policy's groups), and
    each study's ``inputs_revision``, which counts the edits in place none of
    these show: a judgment's value, an item's gold, metadata or candidates, a
    rater excluded or let back in, a judge renamed (``annotation.study_changes``).
    With ``linked``, over the study and its linked studies together (a protocol
    report of a contest reads its tournaments' verdicts).
    """
    found = linked_studies(study) if linked else Study.objects.filter(pk=study.pk)
    revisions = dict(found.values_list("pk", "inputs_revision"))
    ids = sorted(revisions) or [study.pk]
    studies = {"study_id__in": ids} if linked else {"study_id": study.pk}
    judgments = Judgment.objects.filter(**studies)
    # Two queries, not one: the counts come from the (study, status) index alone, the newest id from the key's.
    by_status = dict(judgments.order_by().values_list("status").annotate(n=Count("*")))
    last = judgments.aggregate(last=Max("id"))["last"] or 0
    items = Item.objects.filter(**studies).aggregate(n=Count("*"), last=Max("id"))
    return {
        "judgments": sum(by_status.values()),
        "by_status": dict(sorted(by_status.items())),
        "last_judgment": last,
        "items": items["n"],
        "last_item": items["last"] or 0,
        "excluded_raters": Enrollment.objects.filter(excluded=True, **studies).count(),
        "revisions": {str(pk): revisions[pk] for pk in sorted(revisions)},
    }


# -- what a page shows ----------------------------------------------------------------------


@dataclass
class Shown:
    """A stored report as a page shows it, with how current it is."""

    report: StudyReport
    inputs: dict[str, Any]  # the study's fingerprint now

    @property
    def result(self) -> dict[str, Any] | None:
        return self.report.result

    @property
    def current(self) -> bool:
        """The figures were computed from the judgments as they are now."""
        return self.report.result is not None and self.report.result_inputs == self.inputs

    @property
    def computing(self) -> bool:
        return self.report.is_active

    @property
    def failed(self) -> bool:
        return self.report.status == StudyReport.Status.FAILED

    @property
    def new_judgments(self) -> int:
        """Judgments added since the figures were computed (0 when only statuses or items changed)."""
        if not self.report.result_inputs:
            return self.inputs["judgments"]
        return max(0, self.inputs["judgments"] - self.report.result_inputs.get("judgments", 0))

    @property
    def computed_judgments(self) -> int | None:
        return (self.report.result_inputs or {}).get("judgments")

    @property
    def poll(self) -> bool:
        """The page should ask again shortly: a computation is queued or running."""
        return self.computing


def report_show(*, study: Study, kind: str, params: dict[str, Any], inline: bool = True, force: bool = False) -> Shown:
    """The stored report of ``kind`` for ``params``, asking for a recomputation when its inputs changed.

    ``inline`` lets a small study's report be computed in this request; a
    page's poll passes False. ``force`` (the Recompute button) asks again even
    when a computation for these inputs already ran or failed.
    """
    inputs = study_inputs(study=study, linked=_kind(kind)[1])
    report, _ = StudyReport.objects.get_or_create(
        study=study, kind=kind, params_key=params_key(params), defaults={"params": params, "inputs": {}}
    )
    if force or report.inputs != inputs:
        report = report_request(report=report, inputs=inputs, inline=inline)
    return Shown(report=report, inputs=inputs)


def inline_allowed(inputs: dict[str, Any]) -> bool:
    return inputs["judgments"] <= settings.FUNNYBONE_REPORT_INLINE_JUDGMENTS


def report_request(*, report: StudyReport, inputs: dict[str, Any], inline: bool = False) -> StudyReport:
    """Queue a (re)computation of ``report`` for ``inputs`` unless one is already queued or running.

    Conditional on the report's state, so two pages asking at once queue one
    computation. A running report whose heartbeat is older than the lease
    belongs to a dead worker and is queued again; so is one queued longer
    than the lease ago (its message was lost with a broker).
    """
    now = timezone.now()
    waiting = StudyReport.objects.filter(pk=report.pk)
    recently = report.requested_at >= now - timedelta(seconds=lease_seconds())
    if report.status == StudyReport.Status.QUEUED and report.inputs and recently:
        # Already waiting for a worker, which reads the judgments as they are when it starts.
        waiting.filter(status=StudyReport.Status.QUEUED).update(inputs=inputs)
        report.refresh_from_db()
        return report
    stale = stale_jobs(StudyReport).filter(pk=report.pk).values("pk")
    requeued = waiting.filter(~Q(status=StudyReport.Status.RUNNING) | Q(pk__in=stale)).update(
        status=StudyReport.Status.QUEUED,
        claimed_by="",
        progress=0,
        stage="queued",
        error="",
        inputs=inputs,
        requested_at=now,
    )
    if not requeued:  # running and alive: the page asks again when it is done
        report.refresh_from_db()
        return report
    if inline and inline_allowed(inputs):
        try:
            report_run(report_id=report.pk)
        except Exception as exc:  # noqa: BLE001 - recorded on the report and logged, the page shows it
            logger.exception("%s report %s failed", report.kind, report.pk)
            report_fail(report_id=report.pk, error=f"{type(exc).__name__}: {exc}")
    else:
        from .tasks import study_report_task

        transaction.on_commit(lambda: study_report_task.delay(report.pk))
    report.refresh_from_db()
    return report


# -- the worker's side -------------------------------------------------------------------------


def report_claim(*, report_id: int, token: str) -> Claim | None:
    """Move a queued report (or one whose worker stopped beating) to running under ``token``; None if taken."""
    claim = job_claim(StudyReport, pk=report_id, token=token)
    if claim is not None:
        StudyReport.objects.filter(pk=report_id, claimed_by=token).update(progress=1, stage="starting")
    return claim


def report_run(*, report_id: int) -> None:
    """Claim and compute one report now (the inline path; a worker uses ``ratings.tasks.study_report_task``)."""
    from .tasks import REPORTS

    job_run(REPORTS, report_id, lambda held: report_compute(report_id=held.pk, token=held.token, beat=held.beat))


def report_compute(*, report_id: int, token: str, beat: Beat) -> None:
    """Compute a claimed report, storing the result with the fingerprint of what it was computed from.

    The fingerprint is read before the judgments, so a judgment added while
    the report computes makes it look out of date (and computed once more),
    never current while it is not. The computation stops at its next
    progress report once the lease is lost, raising LeaseLost.
    """
    report = StudyReport.objects.select_related("study").get(pk=report_id)
    compute, linked = _kind(report.kind)
    inputs = study_inputs(study=report.study, linked=linked)

    def progress(fraction: float, message: str) -> None:
        beat.check()
        held = StudyReport.objects.filter(pk=report_id, claimed_by=token).update(
            progress=max(1, min(99, int(fraction * 100))), stage=message[:200]
        )
        if not held:
            raise LeaseLost(f"report {report_id} is no longer held by this worker")

    try:
        result = compute(report.study, report.params, progress)
    except ReportUnavailable as exc:
        report_fail(report_id=report_id, error=str(exc), token=token)
        return
    stored = job_finish(
        StudyReport,
        pk=report_id,
        token=token,
        progress=100,
        stage="done",
        result=result,
        result_inputs=inputs,
        error="",
        computed_at=timezone.now(),
    )
    if not stored:
        raise LeaseLost(f"report {report_id} is no longer held by this worker")


def report_fail(*, report_id: int, error: str, token: str | None = None) -> None:
    """Mark an unfinished report failed with its reason; the figures it had stay (and are shown as such)."""
    job_fail(StudyReport, pk=report_id, token=token, error=error[:2000], stage="failed")


def reports_recover() -> Recovered:
    """Re-queue reports whose worker stopped beating, or fail them after their last attempt."""
    from .tasks import study_report_task

    return stale_jobs_recover(
        StudyReport,
        enqueue=study_report_task.delay,
        failure=lambda reason: {"error": reason[:2000], "stage": "failed"},
        max_attempts=MAX_ATTEMPTS,
        advice="Recompute the report to try again.",
    )
