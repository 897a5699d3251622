"""How many calls a judge keeps in flight against an endpoint that serves fewer at once than the judge's
concurrency: the number the server says (llama.cpp's /props), else one learned from the calls' latencies."""

import threading
import time

from judging.concurrency import AdaptiveWidth, server_root
from judging.models import JudgeRun
from judging.selectors import run_failure_reasons, run_progress, timeout_advice
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import ScriptedServer


class OneSlot:
    """A server's model that answers one request at a time, each taking ``seconds``, queueing the rest
    (as llama.cpp with one slot, or llama-cpp-python, does); remembers the most requests it held at once."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._model = threading.Lock()
        self._count = threading.Lock()
        self.held = 0
        self.most_held = 0

    def __call__(self, request) -> str:
        with self._count:
            self.held += 1
            self.most_held = max(self.most_held, self.held)
        try:
            with self._model:
                time.sleep(self.seconds)
        finally:
            with self._count:
                self.held -= 1
        return '{"rating": 2}'


def one_slot_judge(owner, url: str, **settings):
    defaults = {"model": "local", "timeout_seconds": 4.0, "backoff_seconds": 0.05, "max_retries": 0}
    return judge_create(owner=owner, name="local judge", base_url=url, **{**defaults, **settings})


class TestTheEndpointSaysHowManyItServes:
    def test_a_judge_sends_no_more_calls_at_once_than_the_server_has_slots(self, make_study, researcher):
        study = make_study(task_type="ordinal", n_items=6)
        model = OneSlot(0.05)
        with ScriptedServer(model, props={"total_slots": 1}) as server:
            judge = one_slot_judge(researcher, server.url, concurrency=8)
            run = run_create(study=study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        assert model.most_held == 1
        assert run_progress(run=JudgeRun.objects.get(pk=run.pk)).judged == 6

    def test_the_base_url_s_v1_is_not_part_of_the_server_s_own_address(self):
        assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
        assert server_root("http://gpu.lab:8080/llama/v1/") == "http://gpu.lab:8080/llama"


class TestTheEndpointDoesNotSay:
    def test_calls_queued_at_a_one_slot_server_do_not_time_out(self, make_study, researcher):
        # Twelve calls at once would wait up to 12 x 0.4 s = 4.8 s for the one slot, past the 4 s timeout,
        # and with no retries a timed-out unit fails; learning the width from the latencies avoids that.
        study = make_study(task_type="ordinal", n_items=12)
        model = OneSlot(0.4)
        with ScriptedServer(model) as server:
            judge = one_slot_judge(researcher, server.url, concurrency=16)
            run = run_create(study=study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        run = JudgeRun.objects.get(pk=run.pk)
        assert run_failure_reasons(run=run) == []
        assert run_progress(run=run).judged == 12
        assert model.most_held < 12


class TestAdaptiveWidth:
    def test_it_starts_at_one_call_and_grows_while_answers_come_back_fast(self):
        width = AdaptiveWidth(ceiling=6, timeout=10.0, clock=lambda: 0.0)
        assert width.limit == 1
        for _ in range(10):
            width.observe(started=0.0, seconds=0.2, timed_out=False)
        assert width.limit == 6

    def test_one_quick_answer_takes_it_to_what_a_one_at_a_time_server_would_answer_in_a_quarter_timeout(self):
        # 30 s timeout, answers of 0.2 s: 37 calls one after another take 7.4 s, within 7.5 s.
        width = AdaptiveWidth(ceiling=64, timeout=30.0, clock=lambda: 0.0)
        width.observe(started=0.0, seconds=0.2, timed_out=False)
        assert width.limit == 37
        width.observe(started=0.0, seconds=0.2, timed_out=False)  # slow start: one more per answer after that
        assert width.limit == 38

    def test_a_slow_answer_still_grows_it_by_one_only(self):
        width = AdaptiveWidth(ceiling=64, timeout=30.0, clock=lambda: 0.0)
        width.observe(started=0.0, seconds=5.0, timed_out=False)  # 7.5 s / 5 s: one call fits
        assert width.limit == 2

    def test_a_timeout_halves_it_once_for_the_calls_that_were_in_flight_together(self):
        now = [100.0]
        width = AdaptiveWidth(ceiling=8, timeout=10.0, clock=lambda: now[0])
        for _ in range(8):
            width.observe(started=0.0, seconds=0.2, timed_out=False)
        width.observe(started=90.0, seconds=10.0, timed_out=True)
        assert width.limit == 4
        width.observe(started=91.0, seconds=10.0, timed_out=True)  # sent before the cut: same queue
        assert width.limit == 4
        now[0] = 120.0
        width.observe(started=110.0, seconds=10.0, timed_out=True)  # sent after it: cut again
        assert width.limit == 2

    def test_an_answer_that_took_more_than_half_the_timeout_counts_as_queued(self):
        width = AdaptiveWidth(ceiling=4, timeout=10.0, clock=lambda: 5.0)
        for _ in range(4):
            width.observe(started=0.0, seconds=1.0, timed_out=False)
        width.observe(started=1.0, seconds=6.0, timed_out=False)
        assert width.limit == 2

    def test_it_never_goes_below_one_call_nor_above_the_judge_s_concurrency(self):
        width = AdaptiveWidth(ceiling=3, timeout=1.0, clock=time.monotonic)
        for _ in range(5):
            width.observe(started=time.monotonic(), seconds=2.0, timed_out=True)
        assert width.limit == 1
        for _ in range(50):
            width.observe(started=0.0, seconds=0.01, timed_out=False)
        assert width.limit == 3

    def test_a_width_the_server_gave_does_not_move(self):
        width = AdaptiveWidth(ceiling=2, timeout=1.0, fixed=True)
        width.observe(started=0.0, seconds=5.0, timed_out=True)
        assert width.limit == 2


class TestTheRunPageNamesTimeouts:
    def test_timed_out_units_get_advice_to_lower_the_concurrency_or_raise_the_timeout(
        self, make_study, make_llm_judge, client, researcher
    ):
        study = make_study(task_type="ordinal", n_items=2)
        judge = make_llm_judge("hang:2", timeout_seconds=0.3, max_retries=0)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        run = JudgeRun.objects.get(pk=run.pk)
        advice = timeout_advice(run=run, reasons=run_failure_reasons(run=run))
        assert "2 units failed because the endpoint did not answer within the judge's timeout (0.3 s)" in advice
        assert "lower the judge's concurrency" in advice
        client.force_login(researcher)
        page = client.get(f"/judging/runs/{run.pk}/").content.decode()
        assert 'id="timeout-advice"' in page
        assert "did not answer within the judge&#x27;s timeout (0.3 s)" in page
