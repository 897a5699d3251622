"""The retry policy against a misbehaving server: what is retried, how long it waits, what is recorded."""

import random

import pytest

from annotation.models import Judgment
from judging.models import JudgeRun
from judging.retry import RateLimiter, RetryPolicy
from judging.selectors import run_progress
from judging.services.runs import process_run, run_create

pytestmark = pytest.mark.django_db


def judge_one(make_study, make_llm_judge, no_sleep, *steps, task_type="ordinal", n_candidates=0, **judge_settings):
    study = make_study(task_type=task_type, n_items=1, n_candidates=n_candidates)
    judge = make_llm_judge(*steps, **judge_settings)
    run = run_create(study=study, judge=judge, enqueue=False)
    process_run(run_id=run.pk, sleep=no_sleep)
    return Judgment.objects.get(rater=judge.rater), run


class TestTransientFailuresAreRetried:
    @pytest.mark.parametrize("failure", ["500", "503", "invalid", "truncated", "hang:5", "drip:5"])
    def test_a_failure_then_an_answer_is_judged(self, make_study, make_llm_judge, no_sleep, failure):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, failure, "ok", timeout_seconds=0.5)
        assert judgment.status == "ok"
        assert judgment.value == {"rating": 2}
        attempts = judgment.provenance["attempts"]
        assert len(attempts) == 2
        assert "error" in attempts[0]
        assert "error" not in attempts[1]

    def test_the_slow_stream_is_cut_at_the_overall_deadline(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "drip:5", "ok", timeout_seconds=0.5)
        assert (
            "still arriving" in judgment.provenance["attempts"][0]["error"]
            or "timed out" in judgment.provenance["attempts"][0]["error"]
        )

    def test_retry_after_on_429_is_honoured(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "429:7", "ok")
        assert judgment.status == "ok"
        assert judgment.provenance["attempts"][0]["error"].startswith("HTTP 429")
        assert 7.0 in no_sleep.waits

    def test_the_budget_is_three_retries_then_failed(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "500")
        assert judgment.status == "failed"
        assert judgment.value is None
        assert len(judgment.provenance["attempts"]) == 4
        assert judgment.provenance["parse"]["status"] == "failed"

    def test_waits_grow_exponentially(self, make_study, make_llm_judge, no_sleep):
        judge_one(make_study, make_llm_judge, no_sleep, "500", backoff_seconds=1.0)
        assert len(no_sleep.waits) == 3
        for retry, wait in enumerate(no_sleep.waits):
            assert 2**retry / 2 <= wait <= 2**retry

    def test_a_client_error_is_not_retried(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "echo")
        assert judgment.status == "failed"
        assert len(judgment.provenance["attempts"]) == 1
        assert judgment.provenance["attempts"][0]["error"].startswith("HTTP 401")


class TestUnparseableAnswers:
    def test_prose_is_retried_and_recorded_as_unparseable(self, make_study, make_llm_judge, no_sleep):
        judgment, run = judge_one(make_study, make_llm_judge, no_sleep, "garbage")
        assert judgment.status == "unparseable"
        assert judgment.value is None
        assert len(judgment.provenance["attempts"]) == 4
        assert "both have their charms" in judgment.provenance["raw_response"]
        progress = run_progress(run=JudgeRun.objects.get(pk=run.pk))
        assert (progress.judged, progress.unparseable, progress.failed) == (0, 1, 0)

    def test_broken_json_is_never_read_as_a_tie(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "badjson", task_type="pairwise", n_candidates=2)
        assert judgment.status == "unparseable"
        assert judgment.value is None

    def test_an_unparseable_answer_then_a_good_one_is_judged(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "garbage", "garbage", "ok")
        assert judgment.status == "ok"
        assert [("parse_error" in a) for a in judgment.provenance["attempts"]] == [True, True, False]

    def test_a_server_without_structured_output_is_asked_again_without_it(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "noschema")
        assert judgment.status == "ok"
        assert judgment.provenance["structured_output"] == "off"
        assert judgment.provenance["structured_output_refused"] == [
            "HTTP 400: json_schema refused",
            "HTTP 400: json_object refused",
        ]
        assert len(judgment.provenance["attempts"]) == 1


class TestPolicyArithmetic:
    def test_retry_after_is_capped(self):
        policy = RetryPolicy(max_retry_after=10)
        assert policy.delay(0, random.Random(1), retry_after=500) == 10

    def test_the_rate_limiter_spaces_calls(self):
        now = [100.0]
        limiter = RateLimiter(120, clock=lambda: now[0])
        waits = [limiter.wait_time() for _ in range(4)]
        assert waits == [0.0, 0.5, 1.0, 1.5]

    def test_no_limit_means_no_wait(self):
        assert RateLimiter(0).wait_time() == 0.0
