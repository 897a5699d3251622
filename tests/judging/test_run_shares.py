"""A wide judge run shared over the worker's processes: each share claims its own units, none is judged
twice, the run ends once, and a share that dies leaves its units to the others (issue 23, throughput)."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.job_tasks import job_run
from annotation.models import Judgment
from judging import runner
from judging.models import JudgeRun, JudgeUnit
from judging.runner import claim_units
from judging.services import runs
from judging.services.runs import JUDGE_RUN_SHARES, process_run, run_create, run_drive, run_shares

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_processes(monkeypatch):
    monkeypatch.setenv("FUNNYBONE_WORKER_PROCESSES", "2")


@pytest.fixture
def shares_queued(monkeypatch):
    queued = []
    monkeypatch.setattr(runs, "_enqueue_share", queued.append)
    return queued


@pytest.fixture
def runs_ended(monkeypatch):
    ended = []
    real = runner.run_ended

    def count(model, pk):
        ended.append(pk)
        real(model, pk)

    monkeypatch.setattr(runner, "run_ended", count)
    return ended


class TestWhichRunsAreShared:
    def test_a_run_too_narrow_to_keep_one_process_busy_is_not(self, two_processes):
        assert run_shares(concurrency=16) == 1

    def test_a_wide_run_is_shared_over_the_workers_processes(self, two_processes):
        assert run_shares(concurrency=64) == 2

    def test_a_solo_worker_does_not_share(self, monkeypatch):
        monkeypatch.setenv("FUNNYBONE_WORKER_PROCESSES", "1")
        assert run_shares(concurrency=64) == 1

    def test_the_run_queues_a_share_per_other_process_and_keeps_its_part_of_the_calls(
        self, two_processes, shares_queued, make_study, make_llm_judge, monkeypatch
    ):
        pools = []
        real_drive = runs.drive
        monkeypatch.setattr(
            runs, "drive", lambda job, **kwargs: pools.append(job.concurrency) or real_drive(job, **kwargs)
        )
        run = run_create(study=make_study(n_items=4), judge=make_llm_judge("ok", concurrency=64), enqueue=False)
        process_run(run_id=run.pk)
        assert shares_queued == [run.pk]
        assert pools == [32]
        run.refresh_from_db()
        assert run.status == "done"


def share(run_id):
    try:
        job_run(JUDGE_RUN_SHARES, run_id, lambda held: run_drive(held, share=True))
    finally:
        connection.close()


class TestARunAndItsShare:
    def test_every_unit_is_judged_once_by_one_of_them_and_the_run_ends_once(
        self, two_processes, shares_queued, runs_ended, make_study, make_llm_judge
    ):
        judge = make_llm_judge("slow:50", concurrency=48)
        run = run_create(study=make_study(n_items=300), judge=judge, enqueue=False)
        lead = threading.Thread(target=lambda: (process_run(run_id=run.pk), connection.close()))
        lead.start()
        give_up = time.monotonic() + 30
        while JudgeRun.objects.get(pk=run.pk).status != "running" and time.monotonic() < give_up:
            time.sleep(0.01)
        helper = threading.Thread(target=share, args=(run.pk,))
        helper.start()
        lead.join(timeout=120)
        helper.join(timeout=120)
        run.refresh_from_db()
        assert run.status == "done"
        assert runs_ended == [run.pk]
        assert Judgment.objects.filter(rater=judge.rater).count() == 300
        assert JudgeUnit.objects.filter(run=run, status="done").count() == 300
        drivers = set(JudgeUnit.objects.filter(run=run).values_list("claimed_by", flat=True))
        assert len(drivers) == 2  # both worked

    def test_a_share_of_a_run_that_ended_does_nothing(self, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=2), judge=make_llm_judge("ok"), enqueue=False)
        process_run(run_id=run.pk)
        assert not job_run(JUDGE_RUN_SHARES, run.pk, lambda held: run_drive(held, share=True))

    def test_a_killed_shares_units_are_picked_up_once_their_lease_runs_out(
        self, two_processes, shares_queued, runs_ended, make_study, make_llm_judge
    ):
        judge = make_llm_judge("ok", concurrency=64)
        run = run_create(study=make_study(n_items=20), judge=judge, enqueue=False)
        # The share claimed these and was killed: its lease runs out a moment into the run.
        killed = claim_units(JudgeUnit, run_id=run.pk, token="killed-share", limit=8, lease=60)
        JudgeUnit.objects.filter(claimed_by="killed-share").update(claimed_until=timezone.now() + timedelta(seconds=1))
        process_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "done"
        assert runs_ended == [run.pk]
        assert Judgment.objects.filter(rater=judge.rater).count() == 20
        assert not JudgeUnit.objects.filter(pk__in=[u.pk for u in killed]).exclude(status="done").exists()

    def test_the_run_ends_a_moment_after_its_shares_last_unit(self, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=6), judge=make_llm_judge("ok"), enqueue=False)
        held = claim_units(JudgeUnit, run_id=run.pk, token="live-share", limit=2, lease=60)
        lead = threading.Thread(target=lambda: (process_run(run_id=run.pk), connection.close()))
        lead.start()
        give_up = time.monotonic() + 30
        while JudgeUnit.objects.filter(run=run, status="pending").exists() and time.monotonic() < give_up:
            time.sleep(0.02)
        time.sleep(0.5)  # the run's task waits for the share now
        JudgeUnit.objects.filter(pk__in=[u.pk for u in held]).update(status="failed", claimed_until=None)
        done_at = time.monotonic()
        lead.join(timeout=30)
        ended_after = time.monotonic() - done_at
        run.refresh_from_db()
        assert run.status == "done"
        assert ended_after < 1.0  # it looked again within a moment, not a heartbeat (2 s) later
