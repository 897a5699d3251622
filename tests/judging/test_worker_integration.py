"""End to end through real services: a Celery worker on Redis, PostgreSQL, and a real model server.

The llama.cpp server runs SmolLM2-135M, which often answers badly: these
tests check that every unit still ends judged, unparseable or failed, with the
counts right and the raw answers kept, not that the model is a good critic.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db.models import Count

from annotation.models import Judgment
from judging.models import JudgeRun, JudgeUnit
from judging.selectors import run_progress
from judging.services.judges import judge_create
from judging.services.runs import run_create, run_resume

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
# A bound on waiting for a finished run, so a broken worker ends the test instead of hanging it.
WAIT_LIMIT_S = 900


def wait_until(predicate, *, what: str, limit: float = WAIT_LIMIT_S, every: float = 0.5):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    pytest.fail(f"gave up waiting for {what}")


def run_has_ended(run_id: int) -> bool:
    return not JudgeRun.objects.get(pk=run_id).is_active


class TestRealModelThroughAWorker:
    def test_the_cli_judges_a_study_with_smollm2_and_the_counts_add_up(
        self, make_study, llama_server, start_worker, worker_env
    ):
        study = make_study(task_type="ordinal", n_items=3)
        start_worker()
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "judge",
                study.slug,
                "--base-url",
                llama_server.base_url,
                "--model",
                "smollm2-135m",
                "--temperature",
                "0.1",
                "--max-tokens",
                "24",
                "--timeout",
                "120",
                "--concurrency",
                "2",
                "--wait",
            ],
            cwd=ROOT,
            env=worker_env,
            capture_output=True,
            text=True,
            timeout=WAIT_LIMIT_S,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        run = JudgeRun.objects.get(pk=summary["run"])
        judgments = Judgment.objects.filter(rater=run.judge.rater)
        assert summary["status"] == "done"
        assert summary["judged"] + summary["unparseable"] + summary["failed"] == 3
        for status in ("ok", "unparseable", "failed"):
            key = "judged" if status == "ok" else status
            assert judgments.filter(status=status).count() == summary[key]
        assert summary["tokens"] > 0
        assert summary["seconds"] > 0
        for judgment in judgments:
            assert judgment.provenance["raw_response"]
            assert judgment.provenance["template"]["name"] == "funniness-digit"
            if judgment.status == "ok":
                assert judgment.value["rating"] in (0, 1, 2, 3)
            else:
                assert judgment.value is None
                assert len(judgment.provenance["attempts"]) == 4

    def test_pairwise_verdicts_in_both_orders_with_retries_recorded(
        self, make_study, researcher, llama_server, start_worker, send_task
    ):
        study = make_study(task_type="pairwise", n_items=2, n_candidates=2)
        judge = judge_create(
            owner=researcher,
            name="smollm2 critic",
            base_url=llama_server.base_url,
            model="smollm2-135m",
            temperature=0.1,
            max_tokens=160,
            timeout_seconds=180,
            backoff_seconds=0.2,
            concurrency=2,
        )
        run = run_create(study=study, judge=judge, both_orders=True, enqueue=False)
        start_worker()
        send_task("judging.tasks.judge_run_task", run.pk)
        wait_until(lambda: run_has_ended(run.pk), what="the pairwise run")
        run.refresh_from_db()
        assert run.status == "done"
        assert run.units.filter(status="done").count() == 4
        judgments = Judgment.objects.filter(rater=judge.rater)
        assert judgments.count() == 4
        progress = run_progress(run=run)
        assert progress.judged + progress.unparseable + progress.failed == 4
        assert progress.judged == judgments.filter(status="ok").count()
        total_attempts = sum(len(j.provenance["attempts"]) for j in judgments)
        assert total_attempts == sum(run.units.values_list("attempts", flat=True))
        for judgment in judgments:
            assert judgment.provenance["attempts"]
            if judgment.status == "ok":
                assert judgment.value["choice"] in [*judgment.shown_order, "tie"]
                assert set(judgment.provenance["features"]) == {
                    "humor_mechanisms",
                    "delivery_features",
                    "failure_features",
                }
            else:
                assert judgment.value is None
                assert judgment.provenance["parse"]["error"]

    def test_answers_cut_off_by_the_token_limit_are_retried_then_recorded_unparseable(
        self, make_study, researcher, llama_server, start_worker, send_task
    ):
        study = make_study(task_type="pairwise", n_items=2, n_candidates=2)
        judge = judge_create(
            owner=researcher,
            name="smollm2 with too few tokens",
            base_url=llama_server.base_url,
            model="smollm2-135m",
            max_tokens=8,  # far too few for the critic's JSON verdict
            timeout_seconds=120,
            backoff_seconds=0.1,
        )
        run = run_create(study=study, judge=judge, enqueue=False)
        start_worker()
        send_task("judging.tasks.judge_run_task", run.pk)
        wait_until(lambda: run_has_ended(run.pk), what="the run")
        progress = run_progress(run=JudgeRun.objects.get(pk=run.pk))
        assert (progress.judged, progress.unparseable, progress.failed) == (0, 2, 0)
        for judgment in Judgment.objects.filter(rater=judge.rater):
            assert judgment.status == "unparseable"
            assert judgment.value is None
            attempts = judgment.provenance["attempts"]
            assert len(attempts) == 4
            assert all(a["finish_reason"] == "length" and a["parse_error"] for a in attempts)
            assert judgment.provenance["raw_response"]
            assert judgment.provenance["content"]
        assert sum(run.units.values_list("attempts", flat=True)) == 8


class TestAKilledWorkerLosesNothing:
    def test_the_resumed_run_judges_every_unit_exactly_once(
        self, make_study, researcher, fault_server, start_worker, send_task
    ):
        study = make_study(task_type="ordinal", n_items=8)
        judge = judge_create(
            owner=researcher,
            name="slow judge",
            base_url=fault_server.url("slow:1500"),
            model="fake-model",
            concurrency=2,
            timeout_seconds=10,
            backoff_seconds=0.1,
        )
        run = run_create(study=study, judge=judge, trials=2, enqueue=False)
        first = start_worker("doomed")
        send_task("judging.tasks.judge_run_task", run.pk)
        wait_until(lambda: Judgment.objects.filter(rater=judge.rater).count() >= 3, what="some units judged")
        first.kill()
        judged_before = Judgment.objects.filter(rater=judge.rater).count()
        assert judged_before < 16, "the run finished before the worker was killed"
        assert JudgeUnit.objects.filter(run=run, status="claimed").exists()

        start_worker("rescuer")
        run_resume(run=run, enqueue=False)
        send_task("judging.tasks.judge_run_task", run.pk)
        wait_until(lambda: run_has_ended(run.pk), what="the resumed run")

        run.refresh_from_db()
        assert run.status == "done"
        assert run.units.filter(status="done").count() == 16
        per_unit = {
            (item_id, trial): n
            for item_id, trial, n in Judgment.objects.filter(rater=judge.rater)
            .values_list("item_id", "assignment__trial")
            .annotate(n=Count("id"))
            .values_list("item_id", "assignment__trial", "n")
        }
        assert len(per_unit) == 16
        assert set(per_unit.values()) == {1}
        assert set(Judgment.objects.filter(rater=judge.rater).values_list("status", flat=True)) <= {"ok", "failed"}


class TestADeadWorkersRunIsPickedUpWithinALease:
    @pytest.fixture
    def kill_mid_run(self, make_study, researcher, fault_server, start_worker, send_task, worker_env):
        """A run of a judge whose every call takes 1.5 s, its worker SIGKILLed once ``judged`` judgments
        are written; the workers' lease is 4 s, test-sized (the default is 30 s, FUNNYBONE_JOB_LEASE_SECONDS)."""
        worker_env["FUNNYBONE_JOB_LEASE_SECONDS"] = "4"

        def start(*, n_items: int, trials: int, judged: int, concurrency: int, timeout_seconds: float):
            study = make_study(task_type="ordinal", n_items=n_items)
            judge = judge_create(
                owner=researcher,
                name=f"slow judge c{concurrency}",
                base_url=fault_server.url("slow:1500"),
                model="fake-model",
                concurrency=concurrency,
                timeout_seconds=timeout_seconds,
                backoff_seconds=0.1,
            )
            run = run_create(study=study, judge=judge, trials=trials, enqueue=False)
            first = start_worker("doomed")
            send_task("judging.tasks.judge_run_task", run.pk)
            judgments = Judgment.objects.filter(rater=judge.rater)
            wait_until(lambda: judgments.count() >= judged, what="some units judged")
            first.kill()
            run.refresh_from_db()
            assert judgments.count() < n_items * trials, "the run finished before the kill"
            return run, judge

        return start

    def test_another_worker_finishes_the_run_without_a_resume(self, kill_mid_run, start_worker):
        run, judge = kill_mid_run(n_items=8, trials=2, judged=3, concurrency=2, timeout_seconds=10)
        dead_token = run.claimed_by
        assert dead_token, "the doomed worker did not record itself as the run's driver"
        assert run.status == "running"

        # No Resume and no task sent: the second worker's own recovery must find the silent run.
        start_worker("rescuer")
        wait_until(lambda: run_has_ended(run.pk), what="the dead worker's run", limit=300)

        run.refresh_from_db()
        assert run.status == "done"
        assert run.claimed_by not in ("", dead_token)
        assert run.units.filter(status="done").count() == 16
        per_unit = (
            Judgment.objects.filter(rater=judge.rater).values("item_id", "assignment__trial").annotate(n=Count("id"))
        )
        assert len(per_unit) == 16
        assert {row["n"] for row in per_unit} == {1}

    def test_the_call_slots_of_the_dead_worker_are_free_within_a_lease_not_a_timeout(self, kill_mid_run, start_worker):
        # One call slot, held by the worker that is killed mid-call. Leased for the judge's timeout
        # (600 s) plus a margin, as it was, the rescuer would wait ten minutes for it, past the bail-out
        # below; leased for the run's lease and renewed by the living, it is free once the lease is out.
        run, judge = kill_mid_run(n_items=6, trials=1, judged=2, concurrency=1, timeout_seconds=600)

        start_worker("rescuer")
        wait_until(lambda: run_has_ended(run.pk), what="the dead worker's run", limit=300)
        run.refresh_from_db()
        assert run.status == "done"
        assert set(Judgment.objects.filter(rater=judge.rater).values_list("status", flat=True)) == {"ok"}


class TestAnEndpointRestartIsWaitedOut:
    def test_judgments_during_an_outage_end_ok_not_failed(
        self, make_study, researcher, fault_server, start_worker, send_task
    ):
        # The endpoint drops every connection for 10 s (a restart, test-sized), then answers. The judge's
        # own retries (2, from 0.2 s) would be spent in about a second; the worker's default time
        # budget (FUNNYBONE_JUDGE_RETRY_SECONDS, 120 s) carries the calls over the outage.
        study = make_study(task_type="ordinal", n_items=4)
        judge = judge_create(
            owner=researcher,
            name="restarting endpoint",
            base_url=fault_server.url("down:10"),
            model="fake-model",
            concurrency=4,
            timeout_seconds=5,
            max_retries=2,
            backoff_seconds=0.2,
        )
        run = run_create(study=study, judge=judge, enqueue=False)
        start_worker()
        send_task("judging.tasks.judge_run_task", run.pk)
        wait_until(lambda: run_has_ended(run.pk), what="the run through the outage")
        run.refresh_from_db()
        assert run.status == "done"
        judgments = Judgment.objects.filter(rater=judge.rater)
        assert sorted(judgments.values_list("status", flat=True)) == ["ok"] * 4
        for judgment in judgments:
            attempts = judgment.provenance["attempts"]
            assert len(attempts) > 3
            assert "error" in attempts[0] and "error" not in attempts[-1]
