"""The background export: claimed once, written under MEDIA_ROOT/exports/, failures recorded."""

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from django.db import OperationalError
from django.utils import timezone
from openpyxl import load_workbook

from annotation.jobs import lease_seconds
from ratings.exports.services import export_claim, export_file_path, export_run
from ratings.models import Export
from ratings.tasks import export_study_task
from tests.conftest import build_study
from tests.ratings.export_helpers import rate_as_crowd

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords_and_media(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def export(researcher):
    study = build_study(researcher, n_items=2, quota_per_item=1)
    rate_as_crowd(study, {"p1": {"item-0": {"rating": 2}, "item-1": {"rating": 0}}})
    return Export.objects.create(study=study, format="xlsx", created_by=researcher, rows_expected=2)


class TestClaim:
    def test_a_queued_export_is_claimed_once(self, export):
        assert export_claim(export_id=export.pk).status == Export.Status.RUNNING
        assert export_claim(export_id=export.pk) is None

    def test_a_finished_export_is_never_claimed_again(self, export):
        Export.objects.filter(pk=export.pk).update(status=Export.Status.DONE, file="exports/x.xlsx")
        assert export_claim(export_id=export.pk) is None

    def test_an_export_abandoned_by_a_dead_worker_can_be_claimed_again(self, export):
        long_ago = timezone.now() - timedelta(seconds=lease_seconds() + 60)
        Export.objects.filter(pk=export.pk).update(
            status=Export.Status.RUNNING, started_at=long_ago, heartbeat_at=long_ago
        )
        assert export_claim(export_id=export.pk) is not None

    def test_a_running_export_that_reports_progress_is_left_alone(self, export):
        long_ago = timezone.now() - timedelta(seconds=lease_seconds() + 60)
        Export.objects.filter(pk=export.pk).update(
            status=Export.Status.RUNNING, started_at=long_ago, heartbeat_at=timezone.now()
        )
        assert export_claim(export_id=export.pk) is None


class TestTask:
    def test_it_writes_the_workbook_under_media_exports(self, export, settings):
        export_study_task.apply(args=[export.pk])
        export.refresh_from_db()
        assert export.status == Export.Status.DONE
        assert export.rows_written == 2
        assert export.finished_at is not None
        path = export_file_path(export)
        assert path.parent == Path(settings.MEDIA_ROOT) / "exports"
        assert load_workbook(path).sheetnames[0] == "Metadata"
        assert not list(path.parent.glob(".*.part"))

    def test_a_second_delivery_does_nothing(self, export):
        export_study_task.apply(args=[export.pk])
        export.refresh_from_db()
        first = (export.file, export.finished_at)
        export_study_task.apply(args=[export.pk])
        export.refresh_from_db()
        assert (export.file, export.finished_at) == first
        assert len(list(export_file_path(export).parent.iterdir())) == 1

    def test_a_failure_is_recorded_not_swallowed(self, export, monkeypatch):
        def broken(**kwargs):
            raise RuntimeError("disk full")

        monkeypatch.setattr("ratings.tasks.export_run", broken)
        result = export_study_task.apply(args=[export.pk])
        assert result.failed()
        export.refresh_from_db()
        assert export.status == Export.Status.FAILED
        assert export.error == "RuntimeError: disk full"

    def test_a_lost_database_hands_the_export_back_for_a_retry(self, export, monkeypatch):
        def unavailable(**kwargs):
            raise OperationalError("server closed the connection")

        monkeypatch.setattr("ratings.tasks.export_run", unavailable)
        monkeypatch.setattr(export_study_task, "retry", lambda **kw: RuntimeError("retry scheduled"))
        export_study_task.apply(args=[export.pk])
        export.refresh_from_db()
        assert export.status == Export.Status.QUEUED

    def test_csv_and_jsonl_exports_are_written_too(self, export):
        for fmt in ("csv", "jsonl"):
            other = Export.objects.create(study=export.study, format=fmt, created_by=export.created_by)
            claimed = export_claim(export_id=other.pk)
            done = export_run(export=claimed)
            assert done.status == Export.Status.DONE
            assert done.rows_written == 2
            assert export_file_path(done).suffix == f".{fmt}"


class TestFilePath:
    def test_a_path_outside_the_export_folder_is_refused(self, export):
        export.file = "../secret_key"
        with pytest.raises(FileNotFoundError):
            export_file_path(export)


class TestAnalysisFormats:
    @pytest.mark.parametrize("fmt", ["csv_raw", "parquet"])
    def test_the_worker_writes_the_analysis_formats(self, export, fmt):
        Export.objects.filter(pk=export.pk).update(format=fmt)
        assert export_study_task.apply(args=[export.pk]).successful()
        export.refresh_from_db()
        assert (export.status, export.rows_written) == ("done", 2)
        path = export_file_path(export)
        frame = pd.read_parquet(path) if fmt == "parquet" else pd.read_csv(path)
        assert sorted(frame["numeric"]) == [0.0, 2.0]


class TestLease:
    def test_an_export_that_lost_its_lease_writes_no_file_and_is_not_marked_done(self, export, monkeypatch, settings):
        from ratings.exports.formats import _FORMATS

        real = _FORMATS["xlsx"].write

        def taken_over_midway(*args, **kwargs):
            rows = real(*args, **kwargs)
            # Meanwhile recovery found the heartbeat stale and another worker claimed the export.
            Export.objects.filter(pk=export.pk).update(claimed_by="worker-2")
            return rows

        monkeypatch.setitem(_FORMATS, "xlsx", replace(_FORMATS["xlsx"], write=taken_over_midway))
        result = export_study_task.apply(args=[export.pk])
        assert result.successful()
        export.refresh_from_db()
        assert (export.status, export.claimed_by, export.file) == ("running", "worker-2", "")
        assert list((Path(settings.MEDIA_ROOT) / "exports").iterdir()) == []

    def test_the_workers_recover_an_export_whose_heartbeat_stopped(self, export, django_capture_on_commit_callbacks):
        from annotation.tasks import recover_stale_jobs_task

        silent = timezone.now() - timedelta(seconds=lease_seconds() + 5)
        Export.objects.filter(pk=export.pk).update(
            status=Export.Status.RUNNING, claimed_by="worker-1", attempts=1, started_at=silent, heartbeat_at=silent
        )
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            recover_stale_jobs_task.apply()
        export.refresh_from_db()
        assert (export.status, export.claimed_by, len(callbacks)) == (Export.Status.QUEUED, "", 1)
        # The task sent again is picked up by the next worker, which writes the file.
        export_study_task.apply(args=[export.pk])
        export.refresh_from_db()
        assert export.status == Export.Status.DONE
        assert export.attempts == 2
        assert export_file_path(export).exists()


class TestDatabaseErrors:
    def test_a_database_error_retries_with_bounded_backoff_then_fails_with_the_reason(self, export, monkeypatch):
        from annotation import job_tasks

        def unavailable(**kwargs):
            raise OperationalError("server closed the connection")

        waits = []
        real_retry = export_study_task.retry

        def spy(*args, **kwargs):
            waits.append(kwargs["countdown"])
            return real_retry(*args, **kwargs)

        monkeypatch.setattr("ratings.tasks.export_run", unavailable)
        monkeypatch.setattr(export_study_task, "retry", spy)
        result = export_study_task.apply(args=[export.pk])
        assert result.failed()
        assert waits == [10, 20, 40]
        assert [job_tasks.backoff_seconds(n) for n in (0, 3, 5, 12)] == [10, 80, 300, 300]
        export.refresh_from_db()
        assert export.status == Export.Status.FAILED
        assert export.error == (
            "The export failed after 4 tries because the database was unavailable: server closed the connection"
        )
        assert export.attempts == 4
