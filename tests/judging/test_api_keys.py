"""API keys never appear in pages, API answers, reprs, logs, exceptions, stored judgments or exports."""

import json
import logging

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Judgment
from judging.keys import ApiKeyUnavailable, decrypt_api_key, encrypt_api_key, resolve_api_key
from judging.models import JudgeConfig, JudgeRun
from judging.services.judges import judge_create, judge_update
from judging.services.runs import process_run, run_create
from judging.study_file import judges_dump, judges_load

from .conftest import SECRET_KEY_VALUE

pytestmark = pytest.mark.django_db


@pytest.fixture
def keyed_judge(researcher, fault_server):
    return judge_create(
        owner=researcher,
        name="keyed",
        base_url=fault_server.url("echo"),
        model="m",
        api_key=SECRET_KEY_VALUE,
        backoff_seconds=0.0,
    )


class TestStorage:
    def test_a_pasted_key_is_stored_encrypted(self, keyed_judge):
        stored = JudgeConfig.objects.get(pk=keyed_judge.pk)
        assert SECRET_KEY_VALUE not in stored.api_key_encrypted
        assert resolve_api_key(stored) == SECRET_KEY_VALUE
        assert stored.key_source == "stored (encrypted)"

    def test_a_key_from_the_environment_is_read_at_call_time(self, researcher, monkeypatch):
        judge = judge_create(
            owner=researcher, name="env", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="FB_TEST_KEY"
        )
        monkeypatch.setenv("FB_TEST_KEY", SECRET_KEY_VALUE)
        assert resolve_api_key(judge) == SECRET_KEY_VALUE
        assert judge.key_source == "environment variable FB_TEST_KEY"
        assert judge.api_key_encrypted == ""

    def test_a_key_encrypted_under_another_secret_is_refused_cleanly(self, settings):
        token = encrypt_api_key(SECRET_KEY_VALUE)
        settings.FUNNYBONE_KEY_SECRET = "a different secret"
        with pytest.raises(ApiKeyUnavailable) as caught:
            decrypt_api_key(token)
        assert SECRET_KEY_VALUE not in str(caught.value)

    def test_updating_without_a_key_keeps_it_and_empty_removes_it(self, keyed_judge):
        judge_update(judge=keyed_judge, temperature=0.5)
        assert resolve_api_key(keyed_judge) == SECRET_KEY_VALUE
        judge_update(judge=keyed_judge, api_key="")
        assert keyed_judge.key_source == "none"

    def test_reprs_do_not_show_it(self, keyed_judge):
        for text in (repr(keyed_judge), str(keyed_judge), repr(keyed_judge.__dict__.get("name"))):
            assert SECRET_KEY_VALUE not in text

    def test_credentials_in_the_base_url_are_refused(self, researcher):
        with pytest.raises(ValidationError, match="credentials"):
            judge_create(owner=researcher, name="x", base_url=f"http://user:{SECRET_KEY_VALUE}@127.0.0.1/v1", model="m")


class TestNothingLeaks:
    def test_a_server_echoing_the_key_leaves_no_trace(self, keyed_judge, make_study, caplog):
        caplog.set_level(logging.DEBUG)
        run = run_create(study=make_study(n_items=2), judge=keyed_judge, enqueue=False)
        process_run(run_id=run.pk)
        judgments = Judgment.objects.filter(rater=keyed_judge.rater)
        assert judgments.count() == 2
        for judgment in judgments:
            assert judgment.status == "failed"
            dumped = json.dumps(judgment.provenance)
            assert SECRET_KEY_VALUE not in dumped
            assert "[redacted]" in dumped
        assert SECRET_KEY_VALUE not in JudgeRun.objects.get(pk=run.pk).error
        assert SECRET_KEY_VALUE not in caplog.text

    def test_study_file_export_omits_it_and_import_refuses_one(self, keyed_judge, researcher):
        entries = judges_dump([keyed_judge])
        assert SECRET_KEY_VALUE not in json.dumps(entries)
        assert "api_key" not in entries[0]
        with pytest.raises(ValidationError, match="do not put an API key"):
            judges_load(
                owner=researcher,
                entries=[{"name": "x", "base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": "k"}],
            )

    def test_the_judge_pages_never_render_it(self, keyed_judge, client, researcher, settings):
        settings.ROOT_URLCONF = "tests.judging.urls"
        client.force_login(researcher)
        for url in ("/judging/judges/", f"/judging/judges/{keyed_judge.pk}/"):
            page = client.get(url)
            assert page.status_code == 200
            body = page.content.decode()
            assert SECRET_KEY_VALUE not in body
            assert keyed_judge.api_key_encrypted not in body
        assert "stored (encrypted)" in body

    def test_the_api_never_returns_it(self, keyed_judge, client, researcher, settings):
        settings.ROOT_URLCONF = "tests.judging.urls"
        client.force_login(researcher)
        listing = client.get("/api/judging/judges/")
        detail = client.get(f"/api/judging/judges/{keyed_judge.pk}/")
        for response in (listing, detail):
            assert response.status_code == 200
            assert SECRET_KEY_VALUE not in response.content.decode()
            assert keyed_judge.api_key_encrypted not in response.content.decode()
        assert detail.json()["has_api_key"] is True
        assert "api_key" not in detail.json()
