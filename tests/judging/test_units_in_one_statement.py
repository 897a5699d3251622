"""A run over every item and a retry of a run's failures make their units in the database, in one statement.

Starting a run of a million items or retrying a million failed units must not read them into
Python: the queries do not grow with the study, and the rows are the ones ``bulk_create`` made
(same fields, same order). A queued run too big for a request is made by the worker, with the same units.
"""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Item, Judgment
from judging.models import JudgeRun, JudgeUnit
from judging.services import runs
from judging.services.runs import process_run, retryable_units, run_create, run_retry_failed

pytestmark = pytest.mark.django_db

KEY = ("item_id", "trial", "swapped")
UNIT_FIELDS = [*KEY, *(f.attname for f in JudgeUnit._meta.concrete_fields if f.attname not in (*KEY, "id", "run_id"))]


def rows(run):
    """The run's units field by field, in id order (the order the run page shows them in)."""
    return list(run.units.order_by("pk").values_list(*UNIT_FIELDS))


def queries(action):
    with CaptureQueriesContext(connection) as captured:
        result = action()
    return result, [q["sql"] for q in captured.captured_queries]


def unit_inserts(sqls):
    return [sql for sql in sqls if sql.startswith('INSERT INTO "judging_judgeunit"')]


class TestRunOverEveryItem:
    def test_the_queries_do_not_grow_with_the_study_and_one_statement_makes_the_units(self, make_study, make_llm_judge):
        judge = make_llm_judge("ok")
        run_create(study=make_study(n_items=1, name="first"), judge=judge, enqueue=False)  # makes the template
        made = {}
        for n in (3, 40):
            study = make_study(n_items=n, name=f"{n} items")
            made[n] = queries(lambda study=study: run_create(study=study, judge=judge, enqueue=False))
        (small, small_sqls), (big, big_sqls) = made[3], made[40]
        assert (small.units.count(), big.units.count()) == (3, 40)
        assert len(small_sqls) == len(big_sqls)
        assert len(unit_inserts(big_sqls)) == 1
        item_reads = [sql for sql in big_sqls if '"annotation_item"' in sql and not sql.startswith("INSERT")]
        assert all(sql.endswith("LIMIT 1") for sql in item_reads)  # whether there is an item, not the items

    def test_the_units_are_those_bulk_create_made_in_item_order(self, make_study, make_llm_judge):
        """Same rows as the per-item path (``items`` given), ids by import position, then trial, then order."""
        study = make_study(task_type="pairwise", n_items=6, n_candidates=2)
        for item in study.items.all():  # imported last to first: position order is not id order
            item.position = 100 - item.position
            item.save(update_fields=["position"])
        check = study.items.order_by("position").first()
        Item.objects.filter(pk=check.pk).update(is_attention_check=True, gold="A")
        judge = make_llm_judge("ok")
        whole = run_create(study=study, judge=judge, trials=2, both_orders=True, enqueue=False)
        listed = study.items.filter(is_attention_check=False).order_by("position", "id")
        per_item = run_create(study=study, judge=whole.judge, items=list(listed), enqueue=False)
        assert len(rows(whole)) == 5 * 2 * 2
        assert rows(whole) == rows(per_item)
        in_order = [(item.pk, t, s) for item in listed for t in range(2) for s in (False, True)]
        assert [(r[0], r[1], r[2]) for r in rows(whole)] == in_order
        assert check.pk not in {r[0] for r in rows(whole)}
        unit = whole.units.first()
        assert (unit.status, unit.attempts, unit.outcome, unit.assignment_id, unit.claimed_until) == (
            "pending", 0, "", None, None,
        )  # fmt: skip

    def test_a_study_with_only_attention_checks_makes_no_run(self, make_study, make_llm_judge):
        study = make_study(n_items=2)
        study.items.update(is_attention_check=True, gold=1)
        runs = JudgeRun.objects.count()
        with pytest.raises(ValidationError, match="no items"):
            run_create(study=study, judge=make_llm_judge("ok"), enqueue=False)
        assert JudgeRun.objects.count() == runs


class TestRetryInOneStatement:
    def test_the_queries_do_not_grow_with_the_failures(self, make_study, make_llm_judge):
        judge = make_llm_judge("503", max_retries=0)
        made = {}
        for n in (1, 2, 25):
            run = run_create(study=make_study(n_items=n, name=f"{n} items"), judge=judge, enqueue=False)
            process_run(run_id=run.pk)
            run.refresh_from_db()
            made[n] = queries(lambda run=run: run_retry_failed(run=run, enqueue=False))
        (small, small_sqls), (big, big_sqls) = made[2], made[25]
        assert (small.units.count(), big.units.count()) == (2, 25)
        assert len(small_sqls) == len(big_sqls)
        assert len(unit_inserts(big_sqls)) == 1
        assert not any(sql.startswith('SELECT "judging_judgeunit"') for sql in big_sqls)

    def test_the_retry_copies_the_failed_units_in_their_order_and_nothing_else(self, make_study, make_llm_judge):
        study = make_study(n_items=8)
        run = run_create(study=study, judge=make_llm_judge("503", max_retries=0), enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        judged = list(run.units.order_by("pk")[:3])  # as if these had been answered: not retried
        Judgment.objects.filter(assignment__in=[unit.assignment_id for unit in judged]).update(status="ok", value=2)
        failed = list(retryable_units(run).order_by("pk").values_list("item_id", "trial", "swapped"))
        assert len(failed) == 5
        retry = run_retry_failed(run=run, enqueue=False)
        assert [(r[0], r[1], r[2]) for r in rows(retry)] == failed
        assert set(retry.units.values_list("status", "attempts", "outcome", "assignment")) == {("pending", 0, "", None)}
        assert retry.retry_of_id == run.pk and retry.judge_id == run.judge_id

    def test_nothing_to_retry_leaves_no_run(self, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=2), judge=make_llm_judge("ok"), enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        runs = JudgeRun.objects.count()
        with pytest.raises(ValidationError, match="Nothing to retry"):
            run_retry_failed(run=run, enqueue=False)
        assert JudgeRun.objects.count() == runs


@pytest.fixture
def big(monkeypatch):
    """Every study of more than two items (or retry of more than two units) counts as big."""
    monkeypatch.setattr(runs, "PREPARE_IN_WORKER_ABOVE", 2)


class TestBigRunsArePreparedByTheWorker:
    def test_a_queued_run_over_a_big_study_is_made_by_the_worker_with_the_same_units(
        self, big, make_study, make_llm_judge, django_capture_on_commit_callbacks
    ):
        study = make_study(n_items=5)
        judge = make_llm_judge("ok")
        with django_capture_on_commit_callbacks() as queued:
            run, sqls = queries(lambda: run_create(study=study, judge=judge, trials=2, enqueue=True))
        assert run.preparing and run.units.count() == 0 and len(queued) == 1
        assert not unit_inserts(sqls)
        at_once = run_create(study=study, judge=run.judge, enqueue=False)  # not queued: made in the request
        assert not at_once.preparing and at_once.units.count() == 10
        process_run(run_id=run.pk)
        run.refresh_from_db()
        assert not run.preparing and run.status == "done"
        assert [r[:3] for r in rows(run)] == [r[:3] for r in rows(at_once)]
        assert set(run.units.values_list("status", flat=True)) == {"done"}

    def test_a_small_study_is_still_made_in_the_request(self, big, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=2), judge=make_llm_judge("ok"), enqueue=True)
        assert not run.preparing and run.units.count() == 2

    def test_the_run_page_and_the_api_say_it_is_preparing(self, big, client, researcher, make_study, make_llm_judge):
        client.force_login(researcher)
        study = make_study(n_items=4)
        judge = make_llm_judge("ok")
        response = client.post(f"/judging/studies/{study.pk}/runs/", {"judge": judge.pk})
        run = JudgeRun.objects.get(study=study)
        assert response.status_code == 302 and run.preparing
        assert 'id="run-preparing"' in client.get(f"/judging/runs/{run.pk}/").content.decode()
        assert client.get(f"/api/judging/runs/{run.pk}/").json()["preparing"] is True
        process_run(run_id=run.pk)
        assert 'id="run-preparing"' not in client.get(f"/judging/runs/{run.pk}/").content.decode()
        assert client.get(f"/api/judging/runs/{run.pk}/").json()["preparing"] is False

    def test_a_big_retry_is_copied_by_the_worker_once(self, big, make_study, make_llm_judge):
        run = run_create(study=make_study(n_items=5), judge=make_llm_judge("503", max_retries=0), enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        failed = list(retryable_units(run).order_by("pk").values_list("item_id", "trial", "swapped"))
        retry = run_retry_failed(run=run, enqueue=True)
        assert retry.preparing and retry.units.count() == 0
        runs._prepare_units(retry.pk)
        runs._prepare_units(retry.pk)  # a second worker finds it made
        retry.refresh_from_db()
        assert not retry.preparing and [r[:3] for r in rows(retry)] == failed
