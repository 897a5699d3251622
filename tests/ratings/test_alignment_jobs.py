# SPDX-License-Identifier: GPL-3.0-or-later
"""Alignment reports as leased jobs: staleness from the last heartbeat, recovery, lease loss."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.jobs import lease_seconds
from annotation.tasks import recover_stale_jobs_task
from ratings.alignment import AlignmentParams
from ratings.alignment.tasks import MAX_ATTEMPTS, report_request, report_run
from ratings.models import AlignmentReport
from tests.ratings.alignment_helpers import build_ordinal

pytestmark = pytest.mark.django_db


@pytest.fixture
def ordinal(researcher):
    study, raters = build_ordinal(researcher)
    return study


@pytest.fixture
def queued(ordinal, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        return report_request(study=ordinal, params=AlignmentParams(seed=ordinal.seed), inline=False)


def running(report, *, started_ago, beat_ago, attempts=1):
    now = timezone.now()
    AlignmentReport.objects.filter(pk=report.pk).update(
        status="running",
        claimed_by="worker-1",
        attempts=attempts,
        started_at=now - started_ago,
        heartbeat_at=now - beat_ago,
        stage="bootstrap",
    )


def test_a_running_report_whose_worker_is_alive_is_not_queued_again(
    ordinal, queued, django_capture_on_commit_callbacks
):
    # Started 20 minutes ago (longer than any lease) and beating just now: the old rule re-queued it.
    running(queued, started_ago=timedelta(minutes=20), beat_ago=timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = report_request(study=ordinal, params=AlignmentParams(seed=ordinal.seed), inline=False)
        recover_stale_jobs_task.apply()
    assert (again.status, again.stage, again.claimed_by) == ("running", "bootstrap", "worker-1")
    assert callbacks == []


def test_a_report_whose_heartbeat_stopped_is_queued_again_by_the_workers(queued, django_capture_on_commit_callbacks):
    running(queued, started_ago=timedelta(minutes=1), beat_ago=timedelta(seconds=lease_seconds() + 5))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        recover_stale_jobs_task.apply()
    queued.refresh_from_db()
    assert (queued.status, queued.claimed_by) == ("queued", "")
    assert len(callbacks) == 1  # the report's task is sent again


def test_after_its_last_attempt_a_dead_report_is_failed_with_the_reason(queued):
    running(queued, started_ago=timedelta(minutes=1), beat_ago=timedelta(hours=1), attempts=MAX_ATTEMPTS)
    recover_stale_jobs_task.apply()
    queued.refresh_from_db()
    assert queued.status == "failed"
    assert f"attempt {MAX_ATTEMPTS} of {MAX_ATTEMPTS}" in queued.error
    assert queued.error.endswith("Recompute the report to try again.")


def test_asking_again_for_a_report_whose_worker_died_queues_it(ordinal, queued, django_capture_on_commit_callbacks):
    running(queued, started_ago=timedelta(minutes=1), beat_ago=timedelta(seconds=lease_seconds() + 5))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = report_request(study=ordinal, params=AlignmentParams(seed=ordinal.seed), inline=False)
    assert again.status == "queued" and len(callbacks) == 1


def test_a_worker_that_lost_its_report_stores_no_result(queued, monkeypatch):
    import ratings.alignment.tasks as tasks

    real = tasks.compute_alignment

    def taken_over_midway(**kwargs):
        result = real(**kwargs)
        # Meanwhile recovery found the heartbeat stale and another worker claimed the report.
        AlignmentReport.objects.filter(pk=queued.pk).update(claimed_by="worker-2")
        return result

    monkeypatch.setattr(tasks, "compute_alignment", taken_over_midway)
    report_run(report_id=queued.pk)
    queued.refresh_from_db()
    assert (queued.status, queued.claimed_by, queued.result) == ("running", "worker-2", None)


def test_a_database_error_retries_the_report_then_fails_it_with_the_reason(queued, monkeypatch):
    from django.db import OperationalError

    from ratings.tasks import study_report_task

    def unavailable(**kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr("ratings.alignment.tasks.compute_alignment", unavailable)
    result = study_report_task.apply(args=[queued.pk])
    assert result.failed()
    queued.refresh_from_db()
    assert queued.status == "failed"
    assert queued.error == (
        "The report failed after 4 tries because the database was unavailable: the database system is shutting down"
    )
