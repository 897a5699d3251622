"""Judge runs record their results in batches; a batch that fails is recorded unit by unit."""

import pytest

from annotation.models import Assignment, Judgment
from annotation.services.assignment import assignment_for_judge
from annotation.services.judgments import ModelAnswer, judgment_submit, judgments_submit_many
from judging.models import JudgeUnit
from judging.selectors import run_progress
from judging.services.judging_job import JudgeJob
from judging.services.runs import process_run, run_create

pytestmark = pytest.mark.django_db


class TestBatchedRuns:
    def test_every_unit_gets_one_judgment_and_its_own_record(self, make_study, make_llm_judge):
        study = make_study(task_type="pairwise", n_items=6, n_candidates=2)
        judge = make_llm_judge("ok", concurrency=4, both_orders=True)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        units = list(JudgeUnit.objects.filter(run=run))
        assert len(units) == 12 and {u.outcome for u in units} == {"ok"}
        assert all(u.assignment_id and u.attempts == 1 and u.prompt_tokens > 0 for u in units)
        assert Judgment.objects.filter(rater=judge.rater).count() == 12
        # The B/A unit shows the pair in the reverse of its A/B unit's order.
        orders = {(u.item_id, u.swapped): Assignment.objects.get(pk=u.assignment_id).shown_order for u in units}
        for item_id in {u.item_id for u in units}:
            assert orders[(item_id, True)] == list(reversed(orders[(item_id, False)]))
        assert run_progress(run=run).calls == 12

    def test_a_batch_that_fails_is_recorded_unit_by_unit(self, make_study, make_llm_judge, monkeypatch):
        def broken(self, results):
            raise RuntimeError("the batch insert failed")

        monkeypatch.setattr(JudgeJob, "finish_many", broken)
        study = make_study(n_items=8)
        judge = make_llm_judge("ok", concurrency=4)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        progress = run_progress(run=run)
        assert (progress.judged, progress.failed, progress.total) == (8, 0, 8)
        assert Judgment.objects.filter(rater=judge.rater, status="ok").count() == 8


class TestJudgmentsSubmitMany:
    def test_an_assignment_judged_meanwhile_is_left_as_it_is(self, make_study, make_llm_judge):
        study = make_study(n_items=3)
        judge = make_llm_judge("ok")
        items = list(study.items.order_by("position"))
        assignments = [assignment_for_judge(study=study, rater=judge.rater, item=item) for item in items]
        judgment_submit(assignment=assignments[0], rater=judge.rater, value={"rating": 1})
        created = judgments_submit_many(
            rater=judge.rater,
            answers=[ModelAnswer(assignment=a, value={"rating": 2}) for a in assignments]
            + [ModelAnswer(assignment=assignments[2], value=None, status="failed")],
        )
        assert created == {assignments[1].pk, assignments[2].pk}
        values = dict(Judgment.objects.filter(rater=judge.rater).values_list("assignment_id", "value"))
        assert values == {a.pk: {"rating": 1 if a == assignments[0] else 2} for a in assignments}
        assert set(Assignment.objects.filter(pk__in=created).values_list("state", flat=True)) == {"done"}

    def test_an_invalid_value_writes_nothing(self, make_study, make_llm_judge):
        study = make_study(n_items=2)
        judge = make_llm_judge("ok")
        assignments = [assignment_for_judge(study=study, rater=judge.rater, item=item) for item in study.items.all()]
        with pytest.raises(Exception):  # noqa: B017 - the task type's own validation error
            judgments_submit_many(
                rater=judge.rater,
                answers=[
                    ModelAnswer(assignment=assignments[0], value={"rating": 2}),
                    ModelAnswer(assignment=assignments[1], value={"rating": 9}),
                ],
            )
        assert not Judgment.objects.filter(rater=judge.rater).exists()
