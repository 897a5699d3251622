"""The retry policy against a misbehaving server: what is retried, how long it waits, what is recorded."""

import random

import pytest

from annotation.models import Judgment
from judging.backends.chat import CallError, Completion
from judging.limits import LocalLimits
from judging.models import JudgeRun
from judging.parsing import Parsed
from judging.retry import FAILED, OK, UNPARSEABLE, RateLimiter, RetryPolicy, ask
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

    def test_the_budget_is_three_retries_then_failed(self, make_study, make_llm_judge, no_sleep, settings):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0  # tries only
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "500")
        assert judgment.status == "failed"
        assert judgment.value is None
        assert len(judgment.provenance["attempts"]) == 4
        assert judgment.provenance["parse"]["status"] == "failed"

    def test_waits_grow_exponentially(self, make_study, make_llm_judge, no_sleep, settings):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0
        judge_one(make_study, make_llm_judge, no_sleep, "500", backoff_seconds=1.0)
        assert len(no_sleep.waits) == 3
        for retry, wait in enumerate(no_sleep.waits):
            assert 2**retry / 2 <= wait <= 2**retry

    def test_a_client_error_is_not_retried(self, make_study, make_llm_judge, no_sleep):
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "echo")
        assert judgment.status == "failed"
        assert len(judgment.provenance["attempts"]) == 1
        assert judgment.provenance["attempts"][0]["error"].startswith("HTTP 401")


class TestTheRetryBudgetInTime:
    def test_a_failing_endpoint_is_retried_until_the_time_budget_is_spent(
        self, make_study, make_llm_judge, no_sleep, settings
    ):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 60
        judgment, _ = judge_one(make_study, make_llm_judge, no_sleep, "503", backoff_seconds=1.0)
        assert judgment.status == "failed"
        tries = len(judgment.provenance["attempts"])
        assert tries > 4  # past the judge's three retries
        assert sum(no_sleep.waits) <= 60
        assert max(no_sleep.waits) <= RetryPolicy().cap_seconds
        assert f"gave up after {tries} tries over " in judgment.provenance["parse"]["error"]

    def test_an_endpoint_down_for_a_few_seconds_is_waited_out(self, make_study, make_llm_judge, settings):
        # A restart, test-sized: the connection is dropped for 4 s, then the server answers.
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 30
        study = make_study(task_type="ordinal", n_items=2)
        judge = make_llm_judge("down:4", backoff_seconds=0.2, max_retries=2)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)  # real waits
        judgments = Judgment.objects.filter(rater=judge.rater)
        assert sorted(judgments.values_list("status", flat=True)) == ["ok", "ok"]
        assert all(len(j.provenance["attempts"]) > 3 for j in judgments)
        assert all("error" in j.provenance["attempts"][0] for j in judgments)

    def test_without_a_time_budget_the_same_outage_fails_the_judgments(self, make_study, make_llm_judge, settings):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0
        study = make_study(task_type="ordinal", n_items=1)
        judge = make_llm_judge("down:4", backoff_seconds=0.2, max_retries=2)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.status == "failed"
        assert "gave up after 3 tries over " in judgment.provenance["parse"]["error"]


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


class FakeClock:
    """Time that moves only when asked to wait, or when a call is said to take a while."""

    def __init__(self):
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.waits.append(seconds)
            self.now += seconds


class DownThenUp:
    """A backend refusing connections until ``up_at`` on the fake clock, each refused call taking ``call_seconds``."""

    structured_mode = "off"

    def __init__(self, clock: FakeClock, *, up_at: float, call_seconds: float = 0.0, unreachable=False, answered=False):
        self.clock, self.up_at, self.call_seconds = clock, up_at, call_seconds
        # ``unreachable``: refusals classified as such (ChatBackend's); ``answered``: it answered before.
        self.unreachable, self.answered = unreachable, answered

    def complete(self, messages, schema):
        self.clock.now += self.call_seconds
        if self.clock.now < self.up_at:
            raise CallError("connection failed: Connection refused", retryable=True, unreachable=self.unreachable)
        return Completion('{"rating": 2}', "{}", 1, 1, 5, "stop")


def ask_against(backend, clock, policy, parse=lambda text: Parsed(value={"rating": 2})):
    return ask(
        backend=backend,
        messages=[{"role": "user", "content": "rate"}],
        schema=None,
        parse=parse,
        policy=policy,
        limiter=LocalLimits(concurrency=1, per_minute=0, clock=clock),
        rng=random.Random(0),
        sleep=clock.sleep,
        clock=clock,
    )


class TestRetryBudgetOnAFakeClock:
    def test_an_endpoint_down_for_a_minute_is_survived_with_a_two_minute_budget(self):
        clock = FakeClock()
        answer = ask_against(DownThenUp(clock, up_at=60, call_seconds=0.5), clock, RetryPolicy(max_elapsed_seconds=120))
        assert answer.status == OK
        assert 60 <= clock.now <= 60 + RetryPolicy().cap_seconds + 1
        assert len(answer.attempts) > 4

    def test_an_endpoint_that_answered_before_and_refuses_for_a_minute_is_still_waited_out(self):
        clock = FakeClock()
        backend = DownThenUp(clock, up_at=60, call_seconds=0.5, unreachable=True, answered=True)
        answer = ask_against(backend, clock, RetryPolicy(max_elapsed_seconds=120))
        assert answer.status == OK
        assert not answer.endpoint_down

    def test_an_endpoint_that_never_answered_gets_its_tries_only_and_is_reported_down(self):
        clock = FakeClock()
        backend = DownThenUp(clock, up_at=60, call_seconds=0.5, unreachable=True, answered=False)
        answer = ask_against(backend, clock, RetryPolicy(max_elapsed_seconds=120))
        assert answer.status == FAILED
        assert answer.endpoint_down
        assert len(answer.attempts) == 4
        assert clock.now < 8

    def test_tries_alone_give_up_within_seconds(self):
        clock = FakeClock()
        answer = ask_against(DownThenUp(clock, up_at=60), clock, RetryPolicy())
        assert answer.status == FAILED
        assert len(answer.attempts) == 4
        assert clock.now < 8

    def test_an_outage_longer_than_the_budget_fails_saying_tries_and_time(self):
        clock = FakeClock()
        answer = ask_against(DownThenUp(clock, up_at=1000), clock, RetryPolicy(max_elapsed_seconds=120))
        assert answer.status == FAILED
        assert clock.now <= 120
        assert answer.error.startswith("connection failed: Connection refused (gave up after ")
        assert answer.error.endswith(f"{len(answer.attempts)} tries over {clock.now:.1f} s)")

    def test_waits_are_capped(self):
        clock = FakeClock()
        ask_against(DownThenUp(clock, up_at=1000), clock, RetryPolicy(cap_seconds=10, max_elapsed_seconds=120))
        assert max(clock.waits) <= 10

    def test_unparseable_answers_use_the_tries_not_the_time(self):
        clock = FakeClock()
        policy = RetryPolicy(max_elapsed_seconds=120)
        answer = ask_against(DownThenUp(clock, up_at=0), clock, policy, parse=lambda text: Parsed(error="prose"))
        assert answer.status == UNPARSEABLE
        assert len(answer.attempts) == policy.max_retries + 1
