"""The one lifecycle of background jobs (annotation.job_tasks): claim → heartbeat → work → finish, fail or recover.

Imports, exports, stored reports, judge runs, generation runs and tournaments
all go through it; these tests drive the block itself with the real kinds on
PostgreSQL, and fail if a task builds the lifecycle by hand again.
"""

import ast
import threading
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from annotation import job_tasks, jobs
from annotation.importers.background import IMPORTS, item_import_create, item_import_work
from annotation.job_tasks import Held, job_kinds, job_run
from annotation.jobs import JobStatus, heartbeat, job_claim, job_drive, lease_seconds, new_token
from annotation.models import Item, ItemImport
from annotation.services.studies import study_create
from annotation.tasks import recover_stale_jobs_task
from funnybone.celery import app
from funnybone.env import env_int
from judging.models import GenerationRun, JudgeRun, Tournament, Webhook, WebhookDelivery
from judging.services.generation import generation_run_create, generator_create
from judging.services.judges import ensure_baseline_judges
from judging.services.runs import run_create
from judging.services.tournaments import tournament_create
from judging.tasks import judge_run_task
from ratings.exports.services import MAX_ATTEMPTS
from ratings.models import Export, StudyReport
from ratings.tasks import study_report_task
from tests.conftest import build_study
from tests.ratings.export_helpers import rate_as_crowd

ROOT = Path(__file__).resolve().parents[2]
APPS = ("annotation", "ratings", "judging")


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def item_import(researcher):
    study = study_create(owner=researcher, name="Plain items", task_type="ordinal")
    upload = SimpleUploadedFile("items.csv", b"id,text\nj1,A joke\nj2,Another\n")
    return item_import_create(study=study, upload=upload, user=researcher)


def silent_for(model, pk: int, *, attempts: int = 1) -> None:
    """Make a job look held by a worker that died well over a lease ago."""
    long_ago = timezone.now() - timedelta(seconds=10 * lease_seconds())
    fields = {"status": JobStatus.RUNNING, "claimed_by": "dead-worker", "heartbeat_at": long_ago}
    if hasattr(model, "attempts"):
        fields["attempts"] = attempts
    if hasattr(model, "created_at"):
        fields["created_at"] = long_ago
    model.objects.filter(pk=pk).update(**fields)


@pytest.mark.django_db
class TestClaim:
    def test_a_job_claimed_twice_is_worked_once(self, item_import):
        worked = []
        assert job_run(IMPORTS, item_import.pk, worked.append)
        assert not job_run(IMPORTS, item_import.pk, worked.append)
        assert [held.pk for held in worked] == [item_import.pk]

    def test_a_finished_job_is_never_worked_again(self, item_import):
        ItemImport.objects.filter(pk=item_import.pk).update(status=JobStatus.DONE)
        assert not job_run(IMPORTS, item_import.pk, lambda held: pytest.fail("worked a finished job"))

    def test_a_driven_run_takes_every_driver_but_not_once_it_ended(self, researcher, make_study):
        run = run_create(study=make_study(n_items=2), judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)
        assert job_drive(JudgeRun, pk=run.pk, token="first")
        assert job_drive(JudgeRun, pk=run.pk, token="second")
        assert JudgeRun.objects.get(pk=run.pk).claimed_by == "second"
        JudgeRun.objects.filter(pk=run.pk).update(status=JobStatus.CANCELLED)
        assert job_drive(JudgeRun, pk=run.pk, token="third") is None


@pytest.mark.django_db(transaction=True)
class TestHeartbeat:
    def test_no_beat_starts_inside_the_transaction_that_claims(self, item_import):
        before = {t.name for t in threading.enumerate()}
        with transaction.atomic():
            claim = job_claim(ItemImport, pk=item_import.pk, token=new_token())
            with heartbeat(claim, every=0.01) as beat:
                started = {t.name for t in threading.enumerate()} - before
        assert not any(name.startswith("heartbeat-") for name in started)
        assert not beat.lost.is_set()

    def test_a_report_beats_only_once_its_claim_is_committed(self, researcher, settings):
        # The report task used to start its heartbeat before its claim: the first beat found no claim of its
        # token, took the lease for lost, and the finished report was thrown away.
        settings.FUNNYBONE_JOB_HEARTBEAT_SECONDS = 0.02
        study = build_study(researcher, n_items=2, quota_per_item=1)
        rate_as_crowd(study, {"p1": {"item-0": {"rating": 2}, "item-1": {"rating": 0}}})
        report = StudyReport.objects.create(study=study, kind=StudyReport.Kind.ANALYSIS, params={}, params_key="-")
        beats: list[bool] = []
        beaten = threading.Event()
        real = jobs.job_heartbeat

        def recording(model, *, pk, token):
            held = real(model, pk=pk, token=token)
            beats.append(held)
            beaten.set()
            return held

        committed: list[bool] = []
        real_heartbeat = job_tasks.heartbeat

        def checking(claim, **kwargs):
            # What another connection (the heartbeat's) sees of the claim at the moment the beat starts.
            def look() -> None:
                held = StudyReport.objects.filter(pk=claim.pk, status="running", claimed_by=claim.token)
                committed.append(held.exists())
                connection.close()

            looker = threading.Thread(target=look)
            looker.start()
            looker.join()
            return real_heartbeat(claim, **kwargs)

        def compute(study, params, progress):
            assert beaten.wait(30), "no heartbeat while the report computed"
            return {"figures": 1}

        with (
            mock.patch("annotation.job_tasks.heartbeat", checking),
            mock.patch("annotation.jobs.job_heartbeat", recording),
            mock.patch("ratings.cached._kind", return_value=(compute, False)),
        ):
            assert study_report_task.apply(args=[report.pk]).get() == "done"
        report.refresh_from_db()
        assert committed == [True]
        # Every beat while it computed found its claim (one after the report was done may not).
        assert beats[0] is True
        assert (report.status, report.result) == ("done", {"figures": 1})


@pytest.mark.django_db
class TestLostLease:
    def test_a_worker_that_lost_its_import_has_its_rows_undone(self, item_import):
        from annotation.importers import background

        real = background.prepare

        def taken_over_midway(**kwargs):
            read = real(**kwargs)
            # Meanwhile recovery found the heartbeat stale and another worker claimed the import.
            ItemImport.objects.filter(pk=item_import.pk).update(claimed_by="worker-2")
            return read

        with mock.patch.object(background, "prepare", taken_over_midway):
            assert job_run(IMPORTS, item_import.pk, item_import_work)
        item_import.refresh_from_db()
        assert (item_import.status, item_import.claimed_by) == ("running", "worker-2")
        assert Item.objects.count() == 0


@pytest.mark.django_db
class TestRecovery:
    def test_the_one_loop_recovers_a_stale_job_of_every_kind(
        self, researcher, make_study, item_import, django_capture_on_commit_callbacks
    ):
        study = build_study(researcher, n_items=2, quota_per_item=1)
        export = Export.objects.create(study=study, format="csv", created_by=researcher)
        report = StudyReport.objects.create(study=study, kind=StudyReport.Kind.ANALYSIS, params={}, params_key="-")
        baseline = ensure_baseline_judges(owner=researcher)[0]
        run = run_create(study=make_study(n_items=2), judge=baseline, enqueue=False)
        generator = generator_create(owner=researcher, name="alpha", base_url="http://127.0.0.1:9/v1", model="m")
        generation = generation_run_create(study=make_study(n_items=2), generators=[generator], enqueue=False)
        source = make_study(task_type="pick_one", n_items=2, n_candidates=3)
        cup = tournament_create(owner=researcher, name="cup", source_study=source, judge=baseline, enqueue=False)
        hook = Webhook.objects.create(owner=researcher, url="http://127.0.0.1:9/hook", secret="s", events=["run.done"])
        delivery = WebhookDelivery.objects.create(webhook=hook, event="run.done", payload={})
        stale = {
            "item imports": (ItemImport, item_import.pk),
            "exports": (Export, export.pk),
            "reports": (StudyReport, report.pk),
            "judge runs": (JudgeRun, run.pk),
            "generation runs": (GenerationRun, generation.pk),
            "tournaments": (Tournament, cup.pk),
            "webhook deliveries": (WebhookDelivery, delivery.pk),
        }
        for model, pk in stale.values():
            silent_for(model, pk)
        # A judge run's shares are recovered with the run: its task queues them again.
        assert {kind.name for kind in job_kinds()} == set(stale) | {"judge run shares"}
        queued: list[tuple[str, int]] = []
        with (
            mock.patch("celery.app.task.Task.delay", lambda task, pk: queued.append((task.name, pk))),
            django_capture_on_commit_callbacks(execute=True),
        ):
            recover_stale_jobs_task.apply()
        assert sorted(pk for _, pk in queued) == sorted(pk for _, pk in stale.values())
        for name, (_model, pk) in stale.items():
            task = next(t for t in app.tasks.values() if getattr(t, "job_kind", None) and t.job_kind.name == name)
            assert (task.name, pk) in queued, name

    def test_a_held_job_out_of_attempts_is_failed_with_the_reason(self, researcher):
        study = build_study(researcher, n_items=2, quota_per_item=1)
        export = Export.objects.create(study=study, format="csv", created_by=researcher)
        silent_for(Export, export.pk, attempts=MAX_ATTEMPTS)
        recover_stale_jobs_task.apply()
        export.refresh_from_db()
        assert export.status == "failed"
        assert f"attempt {MAX_ATTEMPTS} of {MAX_ATTEMPTS}" in export.error
        assert "Ask for the export again." in export.error

    def test_a_run_whose_retries_are_spent_is_failed_with_the_reason(self, researcher, make_study):
        run = run_create(study=make_study(n_items=2), judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)

        def endpoint_gone(held: Held, **kwargs):
            raise ConnectionError("connection refused by 127.0.0.1:9")

        with mock.patch("judging.tasks.run_drive", endpoint_gone):
            result = judge_run_task.apply(args=[run.pk], retries=judge_run_task.max_retries)
        assert result.failed()
        run.refresh_from_db()
        assert run.status == "failed"
        assert run.error == (
            f"The judge run failed after {judge_run_task.max_retries + 1} tries because a connection failed: "
            "connection refused by 127.0.0.1:9"
        )

    def test_a_database_outage_hands_the_job_back_until_its_retries_are_spent(self, item_import):
        def database_gone(held: Held) -> None:
            raise OperationalError("server closed the connection unexpectedly")

        from annotation.tasks import import_items_task

        with mock.patch("annotation.tasks.item_import_work", database_gone):
            with mock.patch.object(import_items_task, "retry", lambda **kw: RuntimeError("retry scheduled")):
                import_items_task.apply(args=[item_import.pk])
            assert ItemImport.objects.get(pk=item_import.pk).status == "queued"
            import_items_task.apply(args=[item_import.pk], retries=import_items_task.max_retries)
        item_import.refresh_from_db()
        assert item_import.status == "failed"
        assert item_import.errors == [
            "The import failed after 4 tries because the database was unavailable: "
            "server closed the connection unexpectedly"
        ]


class TestOneLifecycle:
    def test_every_job_task_of_the_apps_goes_through_the_block(self):
        app.loader.import_default_modules()
        # Tasks that are not a job: the recovery loop and names kept for messages queued before an upgrade.
        not_jobs = {
            "annotation.tasks.recover_stale_jobs_task",
            "annotation.tasks.recover_stale_imports_task",
            # The hourly erasure of expired platform ids (annotation.privacy): maintenance, not a job.
            "annotation.tasks.erase_raw_ids_task",
            "judging.tasks.recover_stalled_work_task",
            "ratings.alignment_tasks.alignment_report_task",
        }
        ours = {name: task for name, task in app.tasks.items() if name.split(".")[0] in APPS}
        jobs_tasks = {name: getattr(task, "job_kind", None) for name, task in ours.items() if name not in not_jobs}
        assert sorted(name for name, kind in jobs_tasks.items() if kind is None) == []
        assert {kind.name for kind in jobs_tasks.values()} == {kind.name for kind in job_kinds()}

    def test_only_the_block_starts_a_heartbeat_and_only_one_recovery_loop_runs(self):
        calls: dict[str, set[str]] = {"heartbeat": set(), "recover_periodically": set()}
        for app_name in APPS:
            for path in (ROOT / app_name).rglob("*.py"):
                if "migrations" in path.parts:
                    continue
                for node in ast.walk(ast.parse(path.read_text())):
                    if isinstance(node, ast.Call):
                        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                        if name in calls:
                            calls[name].add(str(path.relative_to(ROOT)))
        assert calls["heartbeat"] == {"annotation/job_tasks.py"}
        assert calls["recover_periodically"] == {"annotation/tasks.py"}

    def test_every_job_model_speaks_the_one_status_vocabulary(self):
        for model in (ItemImport, Export, StudyReport, JudgeRun, GenerationRun, Tournament):
            assert model._meta.get_field("status").choices == JobStatus.choices, model.__name__

    def test_one_lease_setting_and_the_former_run_lease_still_works(self, monkeypatch):
        leases = [name for name in dir(django_settings) if name.startswith("FUNNYBONE") and "LEASE" in name]
        # FUNNYBONE_LEASE_SECONDS is the annotator's hold on an item, not a background job's.
        assert sorted(leases) == ["FUNNYBONE_JOB_LEASE_SECONDS", "FUNNYBONE_LEASE_SECONDS"]
        monkeypatch.delenv("FUNNYBONE_JOB_LEASE_SECONDS", raising=False)
        monkeypatch.setenv("FUNNYBONE_RUN_LEASE_SECONDS", "45")
        with pytest.warns(FutureWarning, match="FUNNYBONE_RUN_LEASE_SECONDS is deprecated"):
            assert env_int("FUNNYBONE_JOB_LEASE_SECONDS", 30, formerly=("FUNNYBONE_RUN_LEASE_SECONDS",)) == 45
