"""A judge whose endpoint never answers: no minutes of retries per unit, and the run pauses saying why.

Met as a mistyped endpoint: with max retries 0 each unit was still retried for about 110 s ("gave up
after 13 tries over 109.0 s"), 24 units took over twelve minutes, and no message named the address.
Here the endpoint is a real loopback port nobody listens on, or a name under ``.invalid`` (which never
resolves), with the retry time budget of production.
"""

import pytest
from django.urls import reverse

from annotation.models import Judgment
from judging.models import JudgeRun, UnitStatus
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create, run_resume
from judging.testing.fault_server import FaultServer
from judging.testing.services import free_port

pytestmark = pytest.mark.django_db

UNITS = 6


@pytest.fixture(autouse=True)
def _production_retry_budget(settings):
    # The budget that kept the mistyped endpoint retried for minutes (tests elsewhere set it to 0).
    settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 120


def run_against(researcher, make_study, base_url: str, no_sleep) -> JudgeRun:
    study = make_study(task_type="ordinal", n_items=UNITS)
    judge = judge_create(
        owner=researcher, name="mistyped", base_url=base_url, model="m", max_retries=0, timeout_seconds=2
    )
    run = run_create(study=study, judge=judge, enqueue=False)
    process_run(run_id=run.pk, sleep=no_sleep)
    run.refresh_from_db()
    return run


def assert_paused_with_nothing_failed(run: JudgeRun, no_sleep) -> None:
    assert run.status == "paused"
    assert run.units.filter(status=UnitStatus.PENDING).count() == UNITS
    assert not Judgment.objects.filter(rater=run.judge.rater).exists()
    assert no_sleep.waits == []  # max retries 0 means one try: nothing is waited out


class TestAnEndpointThatNeverAnswered:
    def test_a_refused_port_pauses_the_run_naming_the_address_without_retrying(self, researcher, make_study, no_sleep):
        port = free_port()
        run = run_against(researcher, make_study, f"http://127.0.0.1:{port}/v1", no_sleep)
        assert_paused_with_nothing_failed(run, no_sleep)
        assert f"could not connect to http://127.0.0.1:{port}/v1: connection refused" in run.error
        assert "resume" in run.error

    def test_a_name_that_does_not_resolve_pauses_the_run_the_same_way(self, researcher, make_study, no_sleep, settings):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["0.0.0.0/0", "::/0"]  # the name, not the rules, is at fault
        run = run_against(researcher, make_study, "http://judge.mistyped.invalid/v1", no_sleep)
        assert_paused_with_nothing_failed(run, no_sleep)
        assert "could not connect to http://judge.mistyped.invalid/v1: the host name does not resolve" in run.error


class TestAPausedRun:
    def test_its_page_and_the_api_say_paused_and_why_and_it_resumes_once_the_server_answers(
        self, researcher, make_study, no_sleep, client
    ):
        port = free_port()
        # The fault server's path for plain valid answers, on a port where nothing listens yet.
        run = run_against(researcher, make_study, f"http://127.0.0.1:{port}/s/ok/n1/v1", no_sleep)
        assert_paused_with_nothing_failed(run, no_sleep)

        client.force_login(researcher)
        page = client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
        assert "Paused" in page
        assert "connection refused" in page
        assert "Resume the run" in page
        api = client.get(f"/api/judging/runs/{run.pk}/").json()
        assert api["status"] == "paused"
        assert f"127.0.0.1:{port}" in api["error"]

        server = FaultServer(port=port).start()  # the researcher starts the server
        try:
            run_resume(run=run, enqueue=False)
            process_run(run_id=run.pk, sleep=no_sleep)
        finally:
            server.stop()
        run.refresh_from_db()
        assert run.status == "done", run.error
        assert run.error == ""
        assert Judgment.objects.filter(rater=run.judge.rater, status="ok").count() == UNITS


class TestAnEndpointThatAnsweredBefore:
    def test_a_server_error_on_a_reachable_endpoint_still_fails_the_unit_instead_of_pausing(
        self, researcher, make_study, no_sleep, settings, fault_server
    ):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0
        run = run_against(researcher, make_study, fault_server.url("500"), no_sleep)
        assert run.status == "done"
        assert Judgment.objects.filter(rater=run.judge.rater, status="failed").count() == UNITS
