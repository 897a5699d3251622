# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the workers send judge and generator requests: public addresses only (unless the operator
allows a network), checked on every call including judges saved before the rule, no redirects, and
no endpoint's error page shown back beyond a short scrubbed line."""

import json
import socket

import pytest

from annotation.models import Judgment, Rater
from judging.models import GenerationRun, GeneratorConfig, JudgeConfig, JudgeRun
from judging.services.generation import generation_run_create, process_generation_run
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create

from .recording_server import RecordingServer

pytestmark = pytest.mark.django_db

# Every spelling of the cloud metadata service (and friends) a researcher has tried.
INTERNAL_URLS = [
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
    ("http://[::ffff:169.254.169.254]/v1", "which reaches 169.254.169.254) is a link-local address"),
    ("http://[fe80::1]:8080/v1", "fe80::1 is a link-local address"),
    ("http://2852039166/v1", "is the address 169.254.169.254, a link-local address"),
    ("http://0xA9FEA9FE/v1", "is the address 169.254.169.254, a link-local address"),
    ("http://0251.0376.0251.0376/v1", "is the address 169.254.169.254, a link-local address"),
    ("http://10.0.0.5:8000/v1", "10.0.0.5 is a private address"),
    ("http://127.0.0.1:6379/v1", "127.0.0.1 is a loopback address"),
    ("http://0.0.0.0:8080/v1", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.1/v1", "224.0.0.1 is a multicast address"),
]
KEY = "sk-judge-key-abcdef123456"


@pytest.fixture(autouse=True)
def strict(settings):
    """A shared server's settings: nothing but public addresses."""
    settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = []


@pytest.fixture
def endpoint():
    server = RecordingServer()
    yield server
    server.stop()


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


def saved_earlier(owner, base_url: str, **fields) -> JudgeConfig:
    """A judge written before the rule existed, straight into the database."""
    rater = Rater.objects.create(kind=Rater.Kind.LLM, name="earlier")
    return JudgeConfig.objects.create(
        owner=owner, rater=rater, name="earlier", base_url=base_url, model="m", max_retries=0, backoff_seconds=0,
        **fields,
    )  # fmt: skip


def run_judge(judge, study) -> JudgeRun:
    run = run_create(study=study, judge=judge, enqueue=False)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    return run


def failures(judge) -> list[str]:
    return [json.dumps(j.provenance) for j in Judgment.objects.filter(rater=judge.rater, status="failed")]


class TestSaving:
    @pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS)
    def test_the_api_refuses_each_spelling_and_names_the_field(self, rita, url, reason):
        response = rita.post("/api/judging/judges/", {"name": "j", "base_url": url, "model": "m"}, "application/json")
        assert response.status_code == 400
        assert reason in response.json()["base_url"][0]
        assert "FUNNYBONE_OUTBOUND_ALLOW_NETWORKS" in response.json()["base_url"][0]

    @pytest.mark.parametrize("url", ["http://[::1/v1", "http://exa mple.org/v1"])
    def test_a_malformed_host_is_a_400_not_a_server_error(self, rita, url):
        response = rita.post("/api/judging/judges/", {"name": "j", "base_url": url, "model": "m"}, "application/json")
        assert response.status_code == 400
        assert "base_url" in response.json()

    def test_a_generator_is_held_to_the_same_rule(self, rita):
        payload = {"name": "g", "base_url": "http://2852039166/v1", "model": "m"}
        response = rita.post("/api/judging/generators/", payload, "application/json")
        assert response.status_code == 400
        assert "169.254.169.254" in response.json()["base_url"][0]

    def test_an_allowed_network_may_be_saved(self, researcher, settings, endpoint):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8"]
        assert judge_create(owner=researcher, name="local", base_url=endpoint.url(), model="m").pk


class TestCallTime:
    @pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS)
    def test_a_judge_saved_before_the_rule_is_refused_with_the_reason(self, researcher, make_study, url, reason):
        judge = saved_earlier(researcher, url)
        run = run_judge(judge, make_study(n_items=1))
        assert run.status == "failed"
        assert reason in run.error

    def test_a_host_name_resolving_to_loopback_is_refused_and_nothing_is_sent(self, researcher, make_study, endpoint):
        judge = saved_earlier(researcher, endpoint.url(host="localhost"))
        run = run_judge(judge, make_study(n_items=1))
        assert run.status == "failed"
        assert "host localhost resolves to" in run.error and "a loopback address" in run.error
        assert endpoint.calls == []

    def test_a_generator_saved_before_the_rule_is_refused(self, researcher, make_study, endpoint):
        generator = GeneratorConfig.objects.create(
            owner=researcher, name="old", base_url="http://0xA9FEA9FE/v1", model="m", user_text="{{ prompt }}"
        )
        run = generation_run_create(study=make_study(n_items=1), generators=[generator], enqueue=False)
        process_generation_run(run_id=run.pk)
        run = GenerationRun.objects.get(pk=run.pk)
        assert run.status == "failed"
        assert "169.254.169.254, a link-local address" in run.error

    def test_the_connection_itself_is_checked_when_the_name_changes_its_answer(
        self, researcher, make_study, endpoint, monkeypatch
    ):
        # DNS rebinding: the name looks public when the run starts, then points at loopback.
        answers = iter([[("93.184.216.34", 0)]])
        real = socket.getaddrinfo

        def rebinding(host, port, *args, **kwargs):
            if host != "rebind.example":
                return real(host, port, *args, **kwargs)
            sockaddrs = next(answers, [("127.0.0.1", 0)])
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip, _ in sockaddrs]

        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        judge = saved_earlier(researcher, endpoint.url(host="rebind.example"))
        run = run_judge(judge, make_study(n_items=1))
        (failure,) = failures(judge)
        assert "host rebind.example resolves to 127.0.0.1, a loopback address" in failure
        assert run.status == "done"  # the run went on; its one unit failed with the reason
        assert endpoint.calls == []

    def test_the_host_allowlist_holds_for_judges_saved_before_it(self, researcher, make_study, endpoint, settings):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8"]
        judge = saved_earlier(researcher, endpoint.url())
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["api.openai.com"]
        run = run_judge(judge, make_study(n_items=1))
        assert run.status == "failed"
        assert "not on this server's list of allowed judge hosts" in run.error
        assert endpoint.calls == []

    def test_an_allowed_network_is_called(self, researcher, make_study, endpoint, settings):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8", "::1/128"]
        judge = saved_earlier(researcher, endpoint.url(host="localhost"))
        run = run_judge(judge, make_study(n_items=2))
        assert run.status == "done"
        assert Judgment.objects.filter(rater=judge.rater, status="ok").count() == 2
        assert len(endpoint.calls) == 2


class TestRedirectsAndErrorBodies:
    @pytest.fixture(autouse=True)
    def loopback_allowed(self, settings):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8", "::1/128"]

    def test_a_redirect_to_another_host_is_not_followed(self, researcher, make_study, endpoint):
        elsewhere = RecordingServer()
        try:
            endpoint.mode = "redirect"
            endpoint.redirect_to = f"http://localhost:{elsewhere.port}/v1/chat/completions"
            judge = judge_create(
                owner=researcher, name="r", base_url=endpoint.url(), model="m", api_key=KEY, max_retries=0
            )
            run_judge(judge, make_study(n_items=1))
            (failure,) = failures(judge)
            assert f"redirected to http://localhost:{elsewhere.port}; redirects are not followed" in failure
            assert elsewhere.calls == []
            assert len(endpoint.calls) == 1
        finally:
            elsewhere.stop()

    def test_an_error_page_is_shown_as_one_short_scrubbed_line(self, researcher, make_study, endpoint):
        endpoint.mode = "error"
        endpoint.error_body = (
            "<html><body>\n<h1>Internal admin console</h1>\n"
            f"Authorization: Bearer {KEY}\n"
            "db password=hunter2-internal\napi_key: sk-internal-service-999999999\n"
            + "x" * 5000
            + "\nEND-OF-INTERNAL-PAGE</body></html>"
        )
        judge = judge_create(owner=researcher, name="e", base_url=endpoint.url(), model="m", api_key=KEY, max_retries=0)
        run_judge(judge, make_study(n_items=1))
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.status == "failed"
        stored = json.dumps(judgment.provenance)
        error = judgment.provenance["parse"]["error"]
        assert error.startswith("HTTP 400: <html><body> <h1>Internal admin console</h1>")
        # The endpoint's part is one short line; the retry policy appends how many tries it took.
        endpoint_part = error.split(" (gave up after")[0]
        assert "\n" not in error and len(endpoint_part) <= 200
        for secret in (KEY, "hunter2-internal", "sk-internal-service-999999999", "END-OF-INTERNAL-PAGE", "x" * 200):
            assert secret not in stored
        assert "[redacted]" in error


class TestHostileAnswers:
    """A 200 from an endpoint a researcher controls is no more trusted than its error pages."""

    @pytest.fixture(autouse=True)
    def loopback_allowed(self, settings):
        settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8", "::1/128"]

    def test_a_body_nested_thousands_deep_fails_the_call_not_the_worker(self, researcher, make_study, endpoint):
        endpoint.mode = "raw"
        endpoint.raw_body = b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        judge = judge_create(owner=researcher, name="d", base_url=endpoint.url(), model="m", max_retries=0)
        run = run_judge(judge, make_study(n_items=1))
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.status == "failed"
        assert "not a valid chat completion" in judgment.provenance["parse"]["error"]
        assert run.status in {"done", "failed"}

    def test_an_endless_body_is_not_read_past_the_cap(self, researcher, make_study, endpoint, monkeypatch):
        from judging.backends import chat

        monkeypatch.setattr(chat, "MAX_RESPONSE_BYTES", 64 * 1024)
        endpoint.mode = "raw"
        endpoint.raw_body = b'{"choices": [{"message": {"content": "' + b"x" * (1024 * 1024) + b'"}}]}'
        judge = judge_create(owner=researcher, name="f", base_url=endpoint.url(), model="m", max_retries=0)
        run_judge(judge, make_study(n_items=1))
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.status == "failed"
        assert "longer than" in judgment.provenance["parse"]["error"]
