"""Imports as leased jobs: protocol data through the same job, heartbeats, recovery and time limits."""

import io
import time
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation.importers.background import item_import_create, item_import_run, item_imports_recover
from annotation.jobs import heartbeat, job_claim, job_fail, job_heartbeat, new_token, stale_jobs
from annotation.models import Item, ItemImport, Judgment
from annotation.protocols import TEMPLATES, StudyTemplate, study_from_template
from annotation.services.studies import study_create
from annotation.tasks import import_items_task
from tests.protocols.test_framework import rate_importer

pytestmark = pytest.mark.django_db

GOOD = b"id,text,rater,rating\na,joke a,R1,2\na,joke a,R2,3\nb,joke b,R1,0\n"
BAD = b"id,text,rater,rating\na,joke a,R1,2\nb,joke b,R1,9\n"


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def rate_template(monkeypatch):
    template = StudyTemplate(
        key="rateproto",
        protocol="rateproto",
        title="Rate protocol",
        description="Items with ratings already given.",
        task_type="ordinal",
        config={"points": [0, 1, 2, 3]},
        importer=rate_importer,
        columns="id, text, rater, rating",
    )
    monkeypatch.setitem(TEMPLATES, "rateproto", template)
    return template


@pytest.fixture
def protocol_study(researcher, rate_template):
    return study_from_template(owner=researcher, template="rateproto", name="Rated jokes")


@pytest.fixture
def items_study(researcher):
    return study_create(owner=researcher, name="Plain items", task_type="ordinal")


def upload(data: bytes, name: str = "data.csv") -> io.BytesIO:
    stream = io.BytesIO(data)
    stream.name = name
    return stream


def queued(study, researcher, data: bytes, *, kind=ItemImport.Kind.ITEMS) -> ItemImport:
    return item_import_create(study=study, upload=SimpleUploadedFile("data.csv", data), user=researcher, kind=kind)


def running_since(item_import: ItemImport, *, minutes: int, attempts: int = 1) -> ItemImport:
    """Make the import look claimed by a worker whose last heartbeat was ``minutes`` ago."""
    beat = timezone.now() - timedelta(minutes=minutes)
    ItemImport.objects.filter(pk=item_import.pk).update(
        status="running", claimed_by="dead-worker", attempts=attempts, started_at=beat, heartbeat_at=beat
    )
    item_import.refresh_from_db()
    return item_import


class TestProtocolImportPage:
    def url(self, study):
        return reverse("researcher:protocol_import", args=[study.pk])

    def test_a_small_file_is_imported_while_the_researcher_waits(self, client, researcher, protocol_study):
        client.force_login(researcher)
        response = client.post(self.url(protocol_study), {"file": upload(GOOD)}, follow=True)
        assert "Imported 2 items and 3 answers." in response.content.decode()
        job = ItemImport.objects.get(study=protocol_study)
        assert (job.kind, job.status, job.items_created, job.judgments_created) == ("protocol", "done", 2, 3)
        assert Judgment.objects.filter(study=protocol_study).count() == 3

    def test_a_file_over_the_threshold_goes_to_the_worker_and_the_page_shows_its_progress(
        self, client, researcher, protocol_study, settings, monkeypatch, django_capture_on_commit_callbacks
    ):
        settings.FUNNYBONE_IMPORT_INLINE_MAX_BYTES = 20
        queued_ids = []
        monkeypatch.setattr(import_items_task, "delay", queued_ids.append)
        client.force_login(researcher)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(self.url(protocol_study), {"file": upload(GOOD)})
        job = ItemImport.objects.get(study=protocol_study)
        assert response.status_code == 302
        assert response["Location"] == reverse("researcher:import_status", args=[protocol_study.pk, job.pk])
        assert queued_ids == [job.pk]
        assert (job.kind, job.status) == ("protocol", "queued")
        assert not protocol_study.items.exists()
        page = client.get(response["Location"]).content.decode()
        assert "being imported in the background" in page and 'hx-trigger="every 2s"' in page

    def test_a_bad_small_file_lists_its_rows_and_imports_nothing(self, client, researcher, protocol_study):
        client.force_login(researcher)
        response = client.post(self.url(protocol_study), {"file": upload(BAD)})
        assert response.status_code == 400
        assert "Row 3: The rating 9 is outside the scale (0, 1, 2, 3)." in response.content.decode()
        assert not protocol_study.items.exists()

    def test_a_file_of_the_wrong_type_is_refused_and_nothing_is_stored(self, client, researcher, protocol_study):
        client.force_login(researcher)
        response = client.post(self.url(protocol_study), {"file": upload(b"%PDF", "data.pdf")})
        assert response.status_code == 400
        assert "Unsupported file type" in response.content.decode()
        assert not ItemImport.objects.exists()


class TestProtocolImportTask:
    def test_the_worker_imports_items_and_answers_together(self, client, researcher, protocol_study):
        job = queued(protocol_study, researcher, GOOD, kind=ItemImport.Kind.PROTOCOL)
        assert import_items_task(job.pk) == "done"
        job.refresh_from_db()
        assert (job.items_created, job.judgments_created, job.errors, job.attempts) == (2, 3, [], 1)
        assert Judgment.objects.filter(study=protocol_study).count() == 3
        client.force_login(researcher)
        page = client.get(reverse("researcher:import_status", args=[protocol_study.pk, job.pk])).content.decode()
        assert "2 items and 3 answers imported" in page and "hx-trigger" not in page

    def test_a_bad_row_fails_the_job_with_the_row_named_and_writes_nothing(self, researcher, protocol_study):
        job = queued(protocol_study, researcher, BAD, kind=ItemImport.Kind.PROTOCOL)
        assert import_items_task(job.pk) == "failed"
        job.refresh_from_db()
        assert job.errors == ["Row 3: The rating 9 is outside the scale (0, 1, 2, 3)."]
        assert not Item.objects.filter(study=protocol_study).exists()
        assert not Judgment.objects.filter(study=protocol_study).exists()

    def test_a_protocol_import_never_replaces_items(self, researcher, protocol_study):
        from django.db import IntegrityError, transaction

        with pytest.raises(IntegrityError), transaction.atomic():
            ItemImport.objects.create(
                study=protocol_study, kind="protocol", replace=True, original_name="x.csv", format="csv"
            )


class TestLease:
    def test_a_job_is_claimed_once_while_its_holder_beats(self, researcher, items_study):
        job = queued(items_study, researcher, b"id,text\nj1,x\n")
        first, second = new_token(), new_token()
        assert job_claim(ItemImport, pk=job.pk, token=first)
        assert not job_claim(ItemImport, pk=job.pk, token=second)
        assert job_heartbeat(ItemImport, pk=job.pk, token=first)
        assert not job_heartbeat(ItemImport, pk=job.pk, token=second)

    def test_staleness_counts_from_the_last_heartbeat_not_from_the_start(self, researcher, items_study):
        job = running_since(queued(items_study, researcher, b"id,text\nj1,x\n"), minutes=90)
        ItemImport.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())
        assert not stale_jobs(ItemImport).exists()
        assert not job_claim(ItemImport, pk=job.pk, token=new_token())
        ItemImport.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
        assert list(stale_jobs(ItemImport)) == [job]
        assert job_claim(ItemImport, pk=job.pk, token=new_token())

    def test_a_holder_that_lost_its_lease_writes_nothing(self, researcher, items_study, monkeypatch):
        from annotation.importers import background

        job = queued(items_study, researcher, b"id,text\nj1,x\nj2,y\n")
        real_prepare = background.prepare

        def taken_over_meanwhile(**kwargs):
            checked = real_prepare(**kwargs)
            # What recovery does when this worker's heartbeat is missed while it reads the file.
            job_fail(ItemImport, pk=job.pk, errors=["taken over by recovery"])
            return checked

        monkeypatch.setattr(background, "prepare", taken_over_meanwhile)
        item_import_run(import_id=job.pk)
        job.refresh_from_db()
        assert (job.status, job.errors) == ("failed", ["taken over by recovery"])
        assert not items_study.items.exists()


@pytest.mark.django_db(transaction=True)
class TestHeartbeatThread:
    def test_it_renews_the_lease_while_the_block_runs_and_stops_after(self, researcher, items_study):
        job = queued(items_study, researcher, b"id,text\nj1,x\n")
        claim = job_claim(ItemImport, pk=job.pk, token=new_token())
        old = timezone.now() - timedelta(minutes=10)
        ItemImport.objects.filter(pk=job.pk).update(heartbeat_at=old)
        with heartbeat(claim, every=0.05) as beat:
            deadline = time.monotonic() + 10
            while ItemImport.objects.get(pk=job.pk).heartbeat_at == old and time.monotonic() < deadline:
                time.sleep(0.05)
        assert ItemImport.objects.get(pk=job.pk).heartbeat_at > old
        assert not beat.lost.is_set()

    def test_it_tells_the_holder_when_the_job_was_taken_away(self, researcher, items_study):
        job = queued(items_study, researcher, b"id,text\nj1,x\n")
        claim = job_claim(ItemImport, pk=job.pk, token=new_token())
        job_fail(ItemImport, pk=job.pk, errors=["stopped by recovery"])
        with heartbeat(claim, every=0.05) as beat:
            assert beat.lost.wait(10)


class TestRecovery:
    def test_a_job_whose_heartbeat_stopped_is_queued_again_while_attempts_remain(
        self, researcher, items_study, monkeypatch, django_capture_on_commit_callbacks
    ):
        queued_ids = []
        monkeypatch.setattr(import_items_task, "delay", queued_ids.append)
        job = running_since(queued(items_study, researcher, b"id,text\nj1,x\n"), minutes=10, attempts=1)
        with django_capture_on_commit_callbacks(execute=True):
            found = item_imports_recover()
        job.refresh_from_db()
        assert (found.requeued, found.failed) == ([job.pk], [])
        assert (job.status, job.claimed_by) == ("queued", "")
        assert queued_ids == [job.pk]
        assert import_items_task(job.pk) == "done"
        job.refresh_from_db()
        assert (job.items_created, job.attempts) == (1, 2)

    def test_on_its_last_attempt_it_is_marked_failed_with_the_reason_on_its_page(
        self, client, researcher, items_study, settings
    ):
        settings.FUNNYBONE_IMPORT_MAX_ATTEMPTS = 2
        job = running_since(queued(items_study, researcher, b"id,text\nj1,x\n"), minutes=10, attempts=2)
        found = item_imports_recover()
        job.refresh_from_db()
        assert found.failed == [job.pk]
        assert job.status == "failed" and job.finished_at is not None
        assert job.errors[0].startswith("The worker doing this job stopped responding (last sign of life")
        assert "attempt 2 of 2" in job.errors[0]
        client.force_login(researcher)
        page = client.get(reverse("researcher:import_status", args=[items_study.pk, job.pk])).content.decode()
        assert "Failed" in page and "stopped responding" in page and "hx-trigger" not in page

    def test_a_job_that_is_still_beating_is_left_alone(self, researcher, items_study):
        job = running_since(queued(items_study, researcher, b"id,text\nj1,x\n"), minutes=0)
        assert not item_imports_recover()
        job.refresh_from_db()
        assert job.status == "running"


class TestTimeLimits:
    def test_every_task_has_a_soft_and_a_hard_limit_and_imports_their_own(self, settings):
        from funnybone.celery import app
        from judging.tasks import judge_run_task
        from ratings.tasks import export_study_task

        assert 0 < settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT
        assert (app.conf.task_soft_time_limit, app.conf.task_time_limit) == (
            settings.CELERY_TASK_SOFT_TIME_LIMIT,
            settings.CELERY_TASK_TIME_LIMIT,
        )
        assert (import_items_task.soft_time_limit, import_items_task.time_limit) == (
            settings.FUNNYBONE_IMPORT_SOFT_TIME_LIMIT,
            settings.FUNNYBONE_IMPORT_TIME_LIMIT,
        )
        assert judge_run_task.soft_time_limit == settings.FUNNYBONE_RUN_SOFT_TIME_LIMIT
        # Exports and reports take the global default.
        assert (export_study_task.soft_time_limit, export_study_task.time_limit) == (
            settings.CELERY_TASK_SOFT_TIME_LIMIT,
            settings.CELERY_TASK_TIME_LIMIT,
        )

    def test_an_import_that_runs_past_its_soft_limit_ends_failed_with_the_reason(
        self, researcher, items_study, monkeypatch
    ):
        job = queued(items_study, researcher, b"id,text\nj1,x\n")

        def too_slow(**kwargs):
            raise SoftTimeLimitExceeded()

        monkeypatch.setattr("annotation.importers.background.prepare", too_slow)
        assert import_items_task(job.pk) == "failed"
        job.refresh_from_db()
        assert job.status == "failed"
        assert job.errors == [
            "The import took longer than the 15 minutes time limit and was stopped; nothing was written. "
            "Split the file into smaller ones and import them one by one."
        ]
        assert not items_study.items.exists()

    def test_an_export_past_its_soft_limit_is_failed_with_the_reason(self, make_study, researcher, monkeypatch):
        from ratings.exports.services import export_create
        from ratings.tasks import export_study_task

        study = make_study()
        monkeypatch.setattr(export_study_task, "delay_on_commit", lambda *a: None)
        export = export_create(study=study, user=researcher, fmt="csv")

        def too_slow(**kwargs):
            raise SoftTimeLimitExceeded()

        monkeypatch.setattr("ratings.tasks.export_run", too_slow)
        export_study_task(export.pk)
        export.refresh_from_db()
        assert export.status == "failed"
        assert (
            export.error
            == "The export took longer than the 60 minutes time limit and was stopped; nothing was written."
        )


class TestTimeLimitSettings:
    def run_settings(self, **env) -> str:
        import os
        import subprocess
        import sys

        code = (
            "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'funnybone.settings'); django.setup();"
            "from funnybone.celery import app; from annotation.tasks import import_items_task as t;"
            "print(app.conf.task_soft_time_limit, app.conf.task_time_limit, t.soft_time_limit, t.time_limit)"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=False
        )
        return result.stdout.strip() or result.stderr.strip().splitlines()[-1]

    def test_the_environment_sets_the_limits(self):
        assert (
            self.run_settings(
                CELERY_TASK_SOFT_TIME_LIMIT="100",
                CELERY_TASK_TIME_LIMIT="120",
                FUNNYBONE_IMPORT_SOFT_TIME_LIMIT="5",
                FUNNYBONE_IMPORT_TIME_LIMIT="9",
            )
            == "100 120 5 9"
        )

    def test_a_hard_limit_not_above_the_soft_one_is_refused_at_start(self):
        out = self.run_settings(FUNNYBONE_IMPORT_SOFT_TIME_LIMIT="60", FUNNYBONE_IMPORT_TIME_LIMIT="60")
        assert "FUNNYBONE_IMPORT_TIME_LIMIT must be larger than FUNNYBONE_IMPORT_SOFT_TIME_LIMIT" in out
