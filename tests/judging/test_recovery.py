"""Re-queueing work whose broker message was lost: stalled runs and tournaments get a new task."""

import random
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from judging.models import GenerationRun, GenerationUnit, JudgeRun, JudgeUnit, Tournament
from judging.runner import LEASE_SECONDS
from judging.services.generation import generation_run_create, generator_create
from judging.services.judges import ensure_baseline_judges
from judging.services.recovery import stalled_work_requeue
from judging.services.runs import run_create
from judging.services.tournaments import _contestants, _schedule_round, tournament_create

pytestmark = pytest.mark.django_db(transaction=True)

LONG_AGO = timedelta(seconds=10 * LEASE_SECONDS)


@pytest.fixture
def queued_tasks():
    """The tasks re-queued, by name, instead of sending them to a broker."""
    sent: dict[str, list[int]] = {"judge": [], "generation": [], "tournament": []}
    with (
        mock.patch("judging.tasks.judge_run_task.delay", side_effect=sent["judge"].append),
        mock.patch("judging.tasks.generation_run_task.delay", side_effect=sent["generation"].append),
        mock.patch("judging.tasks.tournament_task.delay", side_effect=sent["tournament"].append),
    ):
        yield sent


def age(model, pk, *fields: str) -> None:
    """Move a row's timestamps (its creation by default) into the past, as if nothing had happened since."""
    model.objects.filter(pk=pk).update(**dict.fromkeys(fields or ("created_at",), timezone.now() - LONG_AGO))


def left_running_with_leases(unit_model, run, *, expired: bool) -> None:
    until = timezone.now() + (-LONG_AGO if expired else timedelta(seconds=LEASE_SECONDS))
    type(run).objects.filter(pk=run.pk).update(status="running")
    unit_model.objects.filter(run=run).update(status="claimed", claimed_by="dead-worker", claimed_until=until)


@pytest.fixture
def judge_run(researcher, make_study):
    return run_create(study=make_study(n_items=2), judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)


@pytest.fixture
def generation(researcher, make_study):
    gen = generator_create(owner=researcher, name="alpha", base_url="http://127.0.0.1:9/v1", model="m")
    return generation_run_create(study=make_study(n_items=2), generators=[gen], enqueue=False)


class TestStalledJudgeRuns:
    def test_a_running_run_whose_leases_expired_is_queued_again(self, judge_run, queued_tasks):
        left_running_with_leases(JudgeUnit, judge_run, expired=True)
        age(JudgeRun, judge_run.pk, "created_at", "started_at")
        stalled_work_requeue()
        assert queued_tasks["judge"] == [judge_run.pk]

    def test_a_run_with_a_live_lease_is_left_alone(self, judge_run, queued_tasks):
        left_running_with_leases(JudgeUnit, judge_run, expired=False)
        age(JudgeRun, judge_run.pk, "created_at", "started_at")
        assert not stalled_work_requeue()
        assert queued_tasks["judge"] == []

    def test_a_queued_run_whose_message_was_lost_is_queued_again(self, judge_run, queued_tasks):
        age(JudgeRun, judge_run.pk)
        stalled_work_requeue()
        assert queued_tasks["judge"] == [judge_run.pk]

    def test_a_run_queued_just_now_is_not_touched(self, judge_run, queued_tasks):
        assert not stalled_work_requeue()

    def test_a_recently_finished_unit_counts_as_progress(self, judge_run, queued_tasks):
        left_running_with_leases(JudgeUnit, judge_run, expired=True)
        age(JudgeRun, judge_run.pk, "created_at", "started_at")
        JudgeUnit.objects.filter(pk=judge_run.units.first().pk).update(status="failed", finished_at=timezone.now())
        assert not stalled_work_requeue()

    @pytest.mark.parametrize("status", ["done", "cancelled", "failed"])
    def test_an_ended_run_is_not_queued(self, judge_run, queued_tasks, status):
        JudgeRun.objects.filter(pk=judge_run.pk).update(status=status)
        age(JudgeRun, judge_run.pk)
        assert not stalled_work_requeue()

    def test_checking_twice_queues_once_and_a_duplicate_task_is_harmless(self, judge_run, queued_tasks):
        from judging.services.runs import process_run

        age(JudgeRun, judge_run.pk)
        stalled_work_requeue()
        stalled_work_requeue()  # a second worker checking at the same moment
        assert queued_tasks["judge"] == [judge_run.pk]
        process_run(run_id=judge_run.pk)
        process_run(run_id=judge_run.pk)  # the broker redelivered it anyway
        judge_run.refresh_from_db()
        assert judge_run.status == "done"
        assert judge_run.units.filter(status="done").count() == 2

    def test_a_run_no_worker_took_is_queued_again_after_another_lease(self, judge_run, queued_tasks):
        age(JudgeRun, judge_run.pk)
        stalled_work_requeue()
        later = timezone.now() + timedelta(seconds=LEASE_SECONDS + 1)
        stalled_work_requeue(now=later)
        assert queued_tasks["judge"] == [judge_run.pk, judge_run.pk]


class TestRunHeartbeats:
    def test_a_run_whose_driver_stopped_beating_is_queued_again(self, judge_run, queued_tasks):
        left_running_with_leases(JudgeUnit, judge_run, expired=True)
        age(JudgeRun, judge_run.pk, "created_at", "started_at", "heartbeat_at")
        stalled_work_requeue()
        assert queued_tasks["judge"] == [judge_run.pk]

    def test_a_run_whose_driver_still_beats_is_left_alone(self, judge_run, queued_tasks):
        left_running_with_leases(JudgeUnit, judge_run, expired=True)
        age(JudgeRun, judge_run.pk, "created_at", "started_at")
        JudgeRun.objects.filter(pk=judge_run.pk).update(heartbeat_at=timezone.now())
        assert not stalled_work_requeue()

    def test_working_a_run_records_who_drove_it_and_when_it_last_beat(self, judge_run):
        from judging.services.runs import process_run

        process_run(run_id=judge_run.pk, token="worker-a")
        judge_run.refresh_from_db()
        assert judge_run.status == "done"
        assert judge_run.claimed_by == "worker-a"
        assert judge_run.heartbeat_at is not None

    def test_a_tournament_whose_driver_stopped_beating_is_queued_again(self, researcher, make_study, queued_tasks):
        source = make_study(task_type="pick_one", n_items=2, n_candidates=3)
        judge = ensure_baseline_judges(owner=researcher)[0]
        cup = tournament_create(owner=researcher, name="cup", source_study=source, judge=judge, enqueue=False)
        Tournament.objects.filter(pk=cup.pk).update(status="running", claimed_by="dead-worker")
        age(Tournament, cup.pk, "created_at", "heartbeat_at")
        stalled_work_requeue()
        assert queued_tasks["tournament"] == [cup.pk]


class TestHowOftenWorkersLook:
    def test_every_half_lease_by_default(self):
        from annotation.jobs import recovery_seconds

        assert recovery_seconds() == LEASE_SECONDS / 2

    def test_never_when_the_periodic_check_is_off(self, settings):
        from annotation.jobs import recovery_seconds

        settings.FUNNYBONE_RECOVERY_SECONDS = 0
        assert recovery_seconds() == 0


class TestTheLookJustAfterALeaseRunsOut:
    """A worker dying just after a periodic look left its run still for up to half a lease more; the look
    now asks for one more look just after the soonest silent lease runs out (``annotation.jobs.recheck_delay``)."""

    def silent_since(self, run, seconds: float) -> None:
        at = timezone.now() - timedelta(seconds=seconds)
        JudgeRun.objects.filter(pk=run.pk).update(status="running", created_at=at, started_at=at, heartbeat_at=at)
        JudgeUnit.objects.filter(run=run).update(
            status="claimed", claimed_by="dead-worker", claimed_until=at + timedelta(seconds=LEASE_SECONDS)
        )

    def test_a_run_silent_for_most_of_a_lease_asks_for_a_look_when_its_lease_ends(self, judge_run):
        from annotation.job_tasks import jobs_recheck_delay
        from annotation.jobs import RECHECK_MARGIN_SECONDS
        from judging.services.recovery import judge_runs_expiry

        self.silent_since(judge_run, 0.8 * LEASE_SECONDS)
        expected = 0.2 * LEASE_SECONDS + RECHECK_MARGIN_SECONDS
        assert jobs_recheck_delay() == pytest.approx(expected, abs=1.0)
        expiry = judge_runs_expiry()
        assert expiry == JudgeUnit.objects.filter(run=judge_run).first().claimed_until
        # At that moment the run is stalled, and the look queues it again.
        with mock.patch("judging.tasks.judge_run_task.delay") as delay:
            assert stalled_work_requeue(now=expiry + timedelta(seconds=RECHECK_MARGIN_SECONDS)).judge_runs
        delay.assert_called_once_with(judge_run.pk)

    def test_a_unit_leased_longer_than_the_run_beat_holds_the_look_back(self, judge_run):
        from judging.services.recovery import judge_runs_expiry

        self.silent_since(judge_run, 0.8 * LEASE_SECONDS)
        later = timezone.now() + timedelta(seconds=2 * LEASE_SECONDS)
        JudgeUnit.objects.filter(pk=judge_run.units.first().pk).update(claimed_until=later)
        assert judge_runs_expiry() == later

    def test_a_live_driver_asks_for_no_extra_look(self, judge_run):
        from annotation.job_tasks import jobs_recheck_delay

        self.silent_since(judge_run, 0.1 * LEASE_SECONDS)  # it beat a moment ago: the periodic look comes first
        assert jobs_recheck_delay() is None

    def test_a_lease_already_past_is_left_to_the_periodic_look(self, judge_run):
        from annotation.job_tasks import jobs_recheck_delay

        self.silent_since(judge_run, 3 * LEASE_SECONDS)
        assert jobs_recheck_delay() is None

    def test_a_held_job_silent_for_most_of_a_lease_asks_for_a_look(self, researcher, make_study):
        from annotation.job_tasks import jobs_recheck_delay
        from annotation.models import ItemImport

        study = make_study(n_items=1)
        at = timezone.now() - timedelta(seconds=0.75 * LEASE_SECONDS)
        ItemImport.objects.create(study=study, status="running", heartbeat_at=at, started_at=at)
        assert jobs_recheck_delay() == pytest.approx(0.25 * LEASE_SECONDS + 0.5, abs=1.0)

    def test_the_recovery_task_queues_the_extra_look(self, judge_run):
        from annotation.tasks import recover_stale_jobs_task

        self.silent_since(judge_run, 0.8 * LEASE_SECONDS)
        with mock.patch.object(recover_stale_jobs_task, "apply_async") as later:
            recover_stale_jobs_task()
        (countdown,) = [call.kwargs["countdown"] for call in later.call_args_list]
        assert 0 < countdown <= 0.2 * LEASE_SECONDS + 1


class TestStalledGenerationRuns:
    def test_a_running_generation_whose_leases_expired_is_queued_again(self, generation, queued_tasks):
        left_running_with_leases(GenerationUnit, generation, expired=True)
        age(GenerationRun, generation.pk)
        stalled_work_requeue()
        assert queued_tasks["generation"] == [generation.pk]

    def test_a_generation_with_a_live_lease_is_left_alone(self, generation, queued_tasks):
        left_running_with_leases(GenerationUnit, generation, expired=False)
        age(GenerationRun, generation.pk)
        assert not stalled_work_requeue()


class TestStalledTournaments:
    @pytest.fixture
    def tournament(self, researcher, make_study):
        source = make_study(task_type="pick_one", n_items=2, n_candidates=3)
        judge = ensure_baseline_judges(owner=researcher)[0]
        return tournament_create(owner=researcher, name="cup", source_study=source, judge=judge, enqueue=False)

    def first_round(self, tournament) -> JudgeRun:
        names, prompts = _contestants(tournament.source_study)
        return _schedule_round(tournament, names, prompts, random.Random(0))

    def test_a_stalled_tournament_is_queued_again_not_its_round(self, tournament, queued_tasks):
        round_run = self.first_round(tournament)
        Tournament.objects.filter(pk=tournament.pk).update(status="running")
        left_running_with_leases(JudgeUnit, round_run, expired=True)
        age(JudgeRun, round_run.pk, "created_at", "started_at")
        age(Tournament, tournament.pk)
        stalled_work_requeue()
        assert queued_tasks["tournament"] == [tournament.pk]
        assert queued_tasks["judge"] == []

    def test_a_tournament_whose_round_holds_a_live_lease_is_left_alone(self, tournament, queued_tasks):
        round_run = self.first_round(tournament)
        left_running_with_leases(JudgeUnit, round_run, expired=False)
        age(JudgeRun, round_run.pk, "created_at", "started_at")
        age(Tournament, tournament.pk)
        assert not stalled_work_requeue()

    def test_a_tournament_that_just_scheduled_a_round_is_left_alone(self, tournament, queued_tasks):
        self.first_round(tournament)
        age(Tournament, tournament.pk)
        assert not stalled_work_requeue()
