# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a judge may send requests: http(s) only, no credentials in the URL, and on a
shared server only the hosts in FUNNYBONE_JUDGE_URL_ALLOWLIST."""

import pytest
from django.core.exceptions import ValidationError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judging.forms import JudgeForm
from judging.models import JudgeConfig
from judging.services.judges import judge_create, judge_update

pytestmark = pytest.mark.django_db


def make(owner, base_url: str, name: str = "gpt judge"):
    return judge_create(owner=owner, name=name, base_url=base_url, model="some-model")


def judge_page_form(**settings) -> dict:
    """The judge page's defaults, as a browser would post them (an unticked checkbox is not sent), and ``settings``."""
    blank = JudgeForm(instance=JudgeConfig())
    data = {name: blank[name].value() for name in blank.fields}
    data = {name: value for name, value in data.items() if value is not None and value is not False}
    return {**data, **settings}


class TestSchemes:
    @pytest.mark.parametrize(
        "url",
        [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "ftp://models.example.org/v1",
            "gopher://127.0.0.1:6379/_FLUSHALL",
            "//models.example.org/v1",
            "models.example.org/v1",
        ],
    )
    def test_it_refuses_anything_but_http_and_https(self, researcher, url):
        with pytest.raises(ValidationError, match="http"):
            make(researcher, url)

    def test_it_refuses_credentials_in_the_url(self, researcher):
        with pytest.raises(ValidationError, match="credentials"):
            make(researcher, "https://user:secret@models.example.org/v1")

    @pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1\r\nX-Injected: 1", "http://127.0.0.1:8080/v\t1"])
    def test_it_refuses_line_breaks_and_control_characters(self, researcher, url):
        with pytest.raises(ValidationError, match="line breaks") as caught:
            make(researcher, url)
        assert list(caught.value.message_dict) == ["base_url"]
        assert not JudgeConfig.objects.exists()


class TestBaseUrlWithLineBreaks:
    """A CRLF in the base URL was accepted at save, on the judge page and by the API."""

    def test_the_judge_page_names_the_field(self, client, researcher):
        client.force_login(researcher)
        data = judge_page_form(name="crlf", base_url="http://127.0.0.1:8080/v1\r\nX-Injected: 1", model="m")
        response = client.post("/judging/judges/", data)
        assert response.status_code == 200
        assert response.context["form"].errors["base_url"] == [
            "The base URL must not contain spaces, line breaks, tabs or other control characters."
        ]
        assert not JudgeConfig.objects.filter(name="crlf").exists()

    def test_the_api_answers_400_naming_the_field(self, researcher):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=researcher)[0].key}")
        body = {"name": "crlf", "base_url": "http://127.0.0.1:8080/v1\r\nX-Injected: 1", "model": "m"}
        response = client.post("/api/v1/judges/", body, format="json")
        assert response.status_code == 400
        assert "line breaks" in str(response.json()["base_url"])
        assert not JudgeConfig.objects.filter(name="crlf").exists()


class TestAllowlist:
    def test_an_empty_allowlist_allows_any_http_host(self, researcher, settings):
        # Any host name; addresses are another rule (tests/security/test_outbound_calls.py).
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = []
        assert make(researcher, "http://models.example.org:8000/v1").base_url == "http://models.example.org:8000/v1"

    def test_it_refuses_a_host_not_on_the_list_and_says_why(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["api.openai.com", "127.0.0.1:8080"]
        with pytest.raises(ValidationError) as refused:
            make(researcher, "http://169.254.169.254/latest/meta-data")
        message = " ".join(refused.value.messages)
        assert "169.254.169.254:80" in message
        assert "FUNNYBONE_JUDGE_URL_ALLOWLIST" in message
        assert "api.openai.com" in message

    def test_a_bare_host_allows_any_port_on_it(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["api.openai.com"]
        assert make(researcher, "https://api.openai.com/v1", "a").pk
        assert make(researcher, "https://API.OpenAI.com:8443/v1", "b").pk

    def test_host_and_port_allow_only_that_port(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["127.0.0.1:8080"]
        assert make(researcher, "http://127.0.0.1:8080/v1", "a").pk
        with pytest.raises(ValidationError, match="127.0.0.1:8081"):
            make(researcher, "http://127.0.0.1:8081/v1", "b")
        with pytest.raises(ValidationError, match="127.0.0.1:80 "):
            make(researcher, "http://127.0.0.1/v1", "c")

    def test_the_default_port_of_the_scheme_counts(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["models.example.org:443"]
        assert make(researcher, "https://models.example.org/v1").pk

    def test_an_ipv6_host_is_written_in_brackets(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["[::1]:8080"]
        assert make(researcher, "http://[::1]:8080/v1").pk

    def test_a_lookalike_host_is_refused(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["api.openai.com"]
        for url in ("https://api.openai.com.evil.example/v1", "https://evil.example/api.openai.com/v1"):
            with pytest.raises(ValidationError, match="not on this server's list"):
                make(researcher, url)

    def test_moving_an_existing_judge_off_the_list_is_refused(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["127.0.0.1:8080"]
        judge = make(researcher, "http://127.0.0.1:8080/v1")
        with pytest.raises(ValidationError, match="not on this server's list"):
            judge_update(judge=judge, base_url="http://internal.example:8080/v1")
        judge.refresh_from_db()
        assert judge.base_url == "http://127.0.0.1:8080/v1"

    def test_baselines_need_no_url_and_are_not_affected(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["127.0.0.1:8080"]
        assert judge_create(owner=researcher, name="", baseline="random").pk

    def test_the_judge_page_shows_the_refusal(self, client, researcher, settings):
        settings.FUNNYBONE_JUDGE_URL_ALLOWLIST = ["127.0.0.1:8080"]
        client.force_login(researcher)
        data = judge_page_form(name="outside", base_url="http://10.0.0.5:8080/v1", model="m")
        response = client.post("/judging/judges/", data)
        assert "not on this server&#x27;s list of allowed judge hosts" in response.content.decode()
        assert not JudgeConfig.objects.filter(name="outside").exists()
