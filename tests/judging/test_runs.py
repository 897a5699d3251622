"""Judge runs: units, exactly-once judgments, both orders, cancelling, resuming, claiming."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import Assignment, Judgment
from judging import runner
from judging.models import JudgeRun, JudgeUnit
from judging.runner import claim_units
from judging.selectors import position_consistency, run_progress, run_summary
from judging.services.judges import judge_create
from judging.services.runs import SWAPPED_TRIAL_OFFSET, process_run, run_cancel, run_create, run_resume

pytestmark = pytest.mark.django_db


def finish(run, sleep=None):
    process_run(run_id=run.pk, **({"sleep": sleep} if sleep else {}))
    run.refresh_from_db()
    return run


class TestRunCreation:
    def test_one_unit_per_item_and_trial(self, make_study, make_llm_judge):
        study = make_study(n_items=3)
        run = run_create(study=study, judge=make_llm_judge("ok"), trials=2, enqueue=False)
        assert run.units.count() == 6
        assert run.status == "queued"

    def test_both_orders_doubles_the_units_of_a_pairwise_study(self, make_study, make_llm_judge):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2)
        run = run_create(study=study, judge=make_llm_judge("ok"), both_orders=True, enqueue=False)
        assert run.units.filter(swapped=True).count() == 3
        assert run.units.count() == 6

    def test_both_orders_is_refused_for_other_task_types(self, make_study, make_llm_judge):
        with pytest.raises(ValidationError):
            run_create(study=make_study(n_items=1), judge=make_llm_judge("ok"), both_orders=True, enqueue=False)

    def test_the_run_freezes_the_template_version(self, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=1), judge=make_llm_judge("ok"), enqueue=False)
        assert (run.template.name, run.template.version) == ("funniness-digit", 1)


class TestExactlyOnce:
    def test_every_unit_ends_in_one_judgment(self, make_study, make_llm_judge):
        study = make_study(n_items=4)
        judge = make_llm_judge("ok")
        run = finish(run_create(study=study, judge=judge, trials=2, enqueue=False))
        assert run.status == "done"
        assert Judgment.objects.filter(rater=judge.rater).count() == 8
        assert set(Judgment.objects.filter(rater=judge.rater).values_list("status", flat=True)) == {"ok"}
        summary = run_summary(run=run)
        assert (summary["judged"], summary["failed"], summary["unparseable"]) == (8, 0, 0)
        assert summary["tokens"] == 8 * 50

    def test_a_second_run_of_the_same_judge_reuses_the_judgments(self, make_study, make_llm_judge, fault_server):
        study = make_study(n_items=3)
        judge = make_llm_judge("ok")
        finish(run_create(study=study, judge=judge, enqueue=False))
        calls = fault_server.requests
        again = finish(run_create(study=study, judge=judge, enqueue=False))
        assert fault_server.requests == calls
        assert again.status == "done"
        # It reports what it did: nothing asked, three units an earlier run had judged.
        progress = run_progress(run=again)
        assert (progress.judged, progress.already, progress.calls, progress.tokens) == (0, 3, 0, 0)
        assert Judgment.objects.filter(rater=judge.rater).count() == 3

    def test_the_judgment_records_what_a_report_needs(self, make_study, make_llm_judge):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        judge = make_llm_judge("ok")
        finish(run_create(study=study, judge=judge, enqueue=False))
        judgment = Judgment.objects.get(rater=judge.rater)
        p = judgment.provenance
        assert judgment.value == {"choice": judgment.shown_order[0]}
        assert p["template"] == {"id": p["template"]["id"], "name": "humorrank-pairwise", "version": 1}
        assert p["features"]["humor_mechanisms"] == ["wordplay"]
        assert p["tokens"] == {"prompt": 40, "completion": 10, "total": 50}
        assert p["latency_ms"] >= 0
        assert p["raw_response"].startswith("{")
        assert p["parse"] == {"status": "ok", "method": "structured", "error": ""}


class TestBothOrders:
    def test_the_swapped_variant_shows_the_pair_reversed_and_consistency_is_measured(self, make_study, make_llm_judge):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2)
        judge = make_llm_judge("ok")  # always answers "A": perfectly position-biased
        run = finish(run_create(study=study, judge=judge, both_orders=True, enqueue=False))
        for item in study.items.all():
            base = Assignment.objects.get(rater=judge.rater, item=item, trial=0)
            swapped = Assignment.objects.get(rater=judge.rater, item=item, trial=SWAPPED_TRIAL_OFFSET)
            assert swapped.shown_order == list(reversed(base.shown_order))
        assert position_consistency(run=run) == (0.0, 3)
        assert run_summary(run=run)["position_consistency"] == 0.0

    def test_a_consistent_judge_scores_one(self, make_study, make_llm_judge):
        study = make_study(task_type="pairwise", n_items=2, n_candidates=2)
        run = finish(run_create(study=study, judge=make_llm_judge("tie"), both_orders=True, enqueue=False))
        assert position_consistency(run=run) == (1.0, 2)


class TestCancelAndResume:
    def test_a_cancelled_run_stops_and_a_resumed_one_finishes_without_repeats(self, make_study, make_llm_judge):
        study = make_study(n_items=5)
        judge = make_llm_judge("ok", concurrency=1)
        run = run_create(study=study, judge=judge, enqueue=False)
        assert run_cancel(run=run)
        finish(run)
        assert run.status == "cancelled"
        assert Judgment.objects.filter(rater=judge.rater).count() == 0
        run_resume(run=run, enqueue=False)
        run = finish(run)
        assert run.status == "done"
        assert Judgment.objects.filter(rater=judge.rater).count() == 5

    def test_a_dead_workers_units_are_reclaimed_after_their_lease(self, make_study, make_llm_judge):
        study = make_study(n_items=3)
        judge = make_llm_judge("ok")
        run = run_create(study=study, judge=judge, enqueue=False)
        claimed = claim_units(JudgeUnit, run_id=run.pk, token="dead-worker", limit=2)
        assert len(claimed) == 2
        others = claim_units(JudgeUnit, run_id=run.pk, token="other", limit=5)
        assert len(others) == 1
        assert others[0].pk not in {u.pk for u in claimed}
        JudgeUnit.objects.filter(claimed_by="other").update(status="pending", claimed_by="")
        JudgeUnit.objects.filter(claimed_by="dead-worker").update(claimed_until=timezone.now() - timedelta(seconds=1))
        run = finish(run)
        assert run.status == "done"
        assert Judgment.objects.filter(rater=judge.rater).count() == 3

    def test_two_claimers_never_share_a_unit(self, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=6), judge=make_llm_judge("ok"), enqueue=False)
        first = {u.pk for u in claim_units(JudgeUnit, run_id=run.pk, token="one", limit=4)}
        second = {u.pk for u in claim_units(JudgeUnit, run_id=run.pk, token="two", limit=4)}
        assert len(first) == 4
        assert len(second) == 2
        assert not first & second


class TestFailuresAreRecorded:
    def test_a_missing_key_variable_fails_the_run_with_a_clear_error(
        self, make_study, researcher, fault_server, monkeypatch
    ):
        monkeypatch.delenv("FUNNYBONE_TEST_NO_SUCH_KEY", raising=False)
        judge = judge_create(
            owner=researcher,
            name="needs a key",
            base_url=fault_server.url("ok"),
            model="m",
            api_key_env="FUNNYBONE_TEST_NO_SUCH_KEY",
        )
        run = finish(run_create(study=make_study(n_items=1), judge=judge, enqueue=False))
        assert run.status == "failed"
        assert "FUNNYBONE_TEST_NO_SUCH_KEY" in run.error
        run.refresh_from_db()
        assert JudgeRun.objects.get(pk=run.pk).units.filter(status="pending").count() == 1


class TestCancellingMidRun:
    def test_units_in_flight_are_recorded_and_prepared_ones_go_back_to_pending(self, make_study, make_llm_judge):
        from judging.runner import drive
        from judging.services.judging_job import JudgeJob

        study = make_study(n_items=8)
        judge = make_llm_judge("slow:50", concurrency=2)
        run = run_create(study=study, judge=judge, enqueue=False)
        job = JudgeJob(JudgeRun.objects.select_related("study", "judge__rater", "template").get(pk=run.pk))
        checks = {"n": 0}

        def cancelled_after_first_round() -> bool:
            checks["n"] += 1
            return checks["n"] > 1

        result = drive(job, run_id=run.pk, is_cancelled=cancelled_after_first_round)
        job.close()
        assert result.cancelled
        units = JudgeRun.objects.get(pk=run.pk).units
        assert units.filter(status="claimed").count() == 0
        done, pending = units.filter(status="done").count(), units.filter(status="pending").count()
        assert done >= 2  # the calls in flight when it was cancelled were recorded
        # Prepared-but-unsent units went back, none left claimed (how many were sent before the loop saw the
        # cancellation depends on how long it let finished calls gather).
        assert pending >= 1
        assert done + pending == 8
        assert Judgment.objects.filter(rater=judge.rater).count() == done
        run = finish(run)
        assert run.status == "done"
        assert Judgment.objects.filter(rater=judge.rater).count() == 8


class TestTheFirstCallsLeaveBeforeAPoolsWorthIsPrepared:
    def test_the_first_claim_is_a_few_units_and_the_rest_are_claimed_while_their_calls_are_out(
        self, monkeypatch, make_study, make_llm_judge
    ):
        claims = []

        def claim(*args, limit, **kwargs):
            claimed = claim_units(*args, limit=limit, **kwargs)
            answered = JudgeUnit.objects.filter(run_id=kwargs["run_id"], status="done").count()
            claims.append((limit, len(claimed), answered))
            return claimed

        monkeypatch.setattr(runner, "claim_units", claim)
        # Calls of a second: the rest are claimed long before the first answer comes back.
        judge = make_llm_judge("slow:1000", concurrency=8, timeout_seconds=30)
        run = run_create(study=make_study(n_items=24), judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "done"
        assert claims[0] == (runner.FIRST_CLAIM, runner.FIRST_CLAIM, 0)
        assert claims[1] == (runner.PREPARED_PER_SLOT * 8 - runner.FIRST_CLAIM, 24 - runner.FIRST_CLAIM, 0)
        assert JudgeUnit.objects.filter(run=run, status="done").count() == 24
