# SPDX-License-Identifier: GPL-3.0-or-later
"""Which environment variable a judge's key may come from, and stored keys across a secret rotation.

A researcher may name only a variable the operator declared (FUNNYBONE_JUDGE_KEY_ENVS or the
FUNNYBONE_JUDGE_KEY_ prefix); SECRET_KEY, DATABASE_URL and the like are refused when saved, and a
judge saved before the rule fails at run time without sending anything. manage.py may name any.
"""

import json

import pytest
from django.core.management import call_command

from annotation.models import Judgment, Rater
from judging.keys import ApiKeyUnavailable, encrypt_api_key, resolve_api_key
from judging.models import GenerationRun, GeneratorConfig, JudgeConfig, JudgeRun
from judging.services.generation import generation_run_create, process_generation_run
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create
from judging.study_file import judges_load

from .recording_server import RecordingServer

pytestmark = pytest.mark.django_db

SERVER_SECRET = "server-secret-key-value-never-to-leave"
DB_URL = "postgres://admin:db-password-never-to-leave@db.internal/funnybone"
LAB_KEY = "sk-lab-key-1234567890"


@pytest.fixture
def endpoint():
    server = RecordingServer()
    yield server
    server.stop()


@pytest.fixture
def server_environment(monkeypatch):
    """The worker's environment as on a real deployment: server secrets beside a key for judges."""
    monkeypatch.setenv("SECRET_KEY", SERVER_SECRET)
    monkeypatch.setenv("DATABASE_URL_FOR_TEST", DB_URL)
    monkeypatch.setenv("LAB_OPENAI_KEY", LAB_KEY)
    monkeypatch.setenv("FUNNYBONE_JUDGE_KEY_LAB", LAB_KEY)


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


def judge_payload(endpoint, **overrides):
    return {"name": "sneaky", "base_url": endpoint.url(), "model": "m", "backoff_seconds": 0, **overrides}


def legacy_judge(owner, endpoint, api_key_env: str) -> JudgeConfig:
    """A judge saved before the rule, straight into the database as an old release could have."""
    rater = Rater.objects.create(kind=Rater.Kind.LLM, name="legacy")
    return JudgeConfig.objects.create(
        owner=owner,
        rater=rater,
        name="legacy",
        base_url=endpoint.url(),
        model="m",
        api_key_env=api_key_env,
        max_retries=0,
        backoff_seconds=0,
    )


class TestResearchersNameOnlyDeclaredVariables:
    @pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL"])
    def test_the_api_refuses_a_server_variable_and_names_the_field(self, rita, endpoint, name):
        response = rita.post("/api/judging/judges/", judge_payload(endpoint, api_key_env=name), "application/json")
        assert response.status_code == 400
        assert name in response.json()["api_key_env"][0]
        assert "FUNNYBONE_JUDGE_KEY_ENVS" in response.json()["api_key_env"][0]
        assert not JudgeConfig.objects.filter(name="sneaky").exists()

    def test_the_api_refuses_it_for_a_generator_too(self, rita, endpoint):
        payload = {"name": "gen", "base_url": endpoint.url(), "model": "m", "api_key_env": "SECRET_KEY"}
        response = rita.post("/api/judging/generators/", payload, "application/json")
        assert response.status_code == 400
        assert "SECRET_KEY" in response.json()["api_key_env"][0]
        assert not GeneratorConfig.objects.exists()

    def test_patching_an_existing_judge_to_a_server_variable_is_refused(self, rita, researcher, endpoint):
        judge = judge_create(owner=researcher, name="mine", base_url=endpoint.url(), model="m")
        response = rita.patch(
            f"/api/judging/judges/{judge.pk}/", {"api_key_env": "SECRET_KEY"}, content_type="application/json"
        )
        assert response.status_code == 400
        assert "SECRET_KEY" in response.json()["api_key_env"][0]
        judge.refresh_from_db()
        assert judge.api_key_env == ""

    def test_the_judge_page_shows_the_refusal_on_the_field(self, rita, endpoint):
        from judging.forms import JudgeForm

        blank = JudgeForm(instance=JudgeConfig())
        data = {name: blank[name].value() for name in blank.fields}
        # The defaults, as a browser would post them (an unticked checkbox is not sent).
        data = {name: value for name, value in data.items() if value is not None and value is not False}
        data.update(name="sneaky", base_url=endpoint.url(), model="m", api_key_env="DATABASE_URL")
        response = rita.post("/judging/judges/", data)
        page = response.content.decode()
        assert "DATABASE_URL is not a variable the operator declared for judge keys" in page
        assert response.context["form"].errors["api_key_env"]
        assert not JudgeConfig.objects.filter(name="sneaky").exists()

    def test_the_judge_form_says_which_variables_may_be_named(self, rita, settings):
        settings.FUNNYBONE_JUDGE_KEY_ENVS = ["LAB_OPENAI_KEY", "LAB_ANTHROPIC_KEY"]
        page = rita.get("/judging/judges/").content.decode()
        assert "one of: LAB_OPENAI_KEY, LAB_ANTHROPIC_KEY" in page
        assert "FUNNYBONE_JUDGE_KEY_" in page

    def test_a_study_file_naming_a_server_variable_is_refused(self, researcher, endpoint):
        from django.core.exceptions import ValidationError

        entry = {"name": "from file", "base_url": endpoint.url(), "model": "m", "api_key_env": "SECRET_KEY"}
        with pytest.raises(ValidationError) as refused:
            judges_load(owner=researcher, entries=[entry])
        assert "SECRET_KEY is not a variable the operator declared" in " ".join(refused.value.messages)
        assert not JudgeConfig.objects.filter(name="from file").exists()

    def test_a_declared_variable_is_sent(self, rita, researcher, endpoint, settings, server_environment, make_study):
        settings.FUNNYBONE_JUDGE_KEY_ENVS = ["LAB_OPENAI_KEY"]
        response = rita.post(
            "/api/judging/judges/", judge_payload(endpoint, api_key_env="LAB_OPENAI_KEY"), "application/json"
        )
        assert response.status_code == 201, response.json()
        run = run_create(study=make_study(n_items=2), judge=JudgeConfig.objects.get(name="sneaky"), enqueue=False)
        process_run(run_id=run.pk)
        assert JudgeRun.objects.get(pk=run.pk).status == "done"
        assert endpoint.keys_seen() == [f"Bearer {LAB_KEY}"] * 2

    def test_a_variable_named_with_the_judge_prefix_is_declared(self, rita, endpoint, server_environment):
        response = rita.post(
            "/api/judging/judges/", judge_payload(endpoint, api_key_env="FUNNYBONE_JUDGE_KEY_LAB"), "application/json"
        )
        assert response.status_code == 201
        assert resolve_api_key(JudgeConfig.objects.get(name="sneaky")) == LAB_KEY

    def test_the_list_itself_is_not_a_key(self, rita, endpoint):
        response = rita.post(
            "/api/judging/judges/", judge_payload(endpoint, api_key_env="FUNNYBONE_JUDGE_KEY_ENVS"), "application/json"
        )
        assert response.status_code == 400


class TestJudgesSavedBeforeTheRule:
    def test_a_judge_naming_secret_key_fails_with_a_reason_and_sends_nothing(
        self, researcher, endpoint, server_environment, make_study
    ):
        judge = legacy_judge(researcher, endpoint, "SECRET_KEY")
        run = run_create(study=make_study(n_items=2), judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "failed"
        assert "SECRET_KEY is not a variable the operator declared for judge keys" in run.error
        assert "not sent" in run.error
        assert SERVER_SECRET not in run.error
        assert endpoint.calls == []

    def test_a_generator_naming_a_server_variable_fails_the_same_way(
        self, researcher, endpoint, server_environment, make_study
    ):
        generator = GeneratorConfig.objects.create(
            owner=researcher, name="old-gen", base_url=endpoint.url(), model="m", user_text="{{ prompt }}",
            api_key_env="DATABASE_URL_FOR_TEST",
        )  # fmt: skip
        run = generation_run_create(study=make_study(n_items=2), generators=[generator], enqueue=False)
        process_generation_run(run_id=run.pk)
        run = GenerationRun.objects.get(pk=run.pk)
        assert run.status == "failed"
        assert "DATABASE_URL_FOR_TEST is not a variable the operator declared" in run.error
        assert endpoint.calls == []

    def test_declaring_the_variable_later_lets_it_run(self, researcher, endpoint, settings, server_environment):
        judge = legacy_judge(researcher, endpoint, "LAB_OPENAI_KEY")
        with pytest.raises(ApiKeyUnavailable, match="LAB_OPENAI_KEY"):
            resolve_api_key(judge)
        settings.FUNNYBONE_JUDGE_KEY_ENVS = ["LAB_OPENAI_KEY"]
        assert resolve_api_key(judge) == LAB_KEY


class TestOperators:
    def test_manage_py_judge_may_name_any_variable(self, researcher, endpoint, make_study, monkeypatch):
        monkeypatch.setenv("OPS_ONLY_KEY", "sk-ops-only-0987654321")
        study = make_study(n_items=2)
        call_command(
            "judge", study.slug, "--base-url", endpoint.url(), "--model", "m", "--name", "ops",
            "--api-key-env", "OPS_ONLY_KEY", "--inline",
        )  # fmt: skip
        judge = JudgeConfig.objects.get(name="ops")
        assert judge.key_source == "environment variable OPS_ONLY_KEY"
        assert JudgeRun.objects.get(judge=judge).status == "done"
        assert endpoint.keys_seen() == ["Bearer sk-ops-only-0987654321"] * 2

    def test_manage_py_generate_may_name_any_variable(self, researcher, endpoint, make_study, monkeypatch):
        monkeypatch.setenv("OPS_ONLY_KEY", "sk-ops-only-0987654321")
        study = make_study(n_items=1)
        call_command(
            "generate", study.slug, "--base-url", endpoint.url(), "--model", "m", "--name", "ops-gen",
            "--api-key-env", "OPS_ONLY_KEY", "--inline",
        )  # fmt: skip
        assert GenerationRun.objects.get().status == "done"
        assert endpoint.keys_seen() == ["Bearer sk-ops-only-0987654321"]

    @pytest.fixture
    def operator_judge(self, researcher, endpoint, monkeypatch):
        monkeypatch.setenv("OPS_ONLY_KEY", "sk-ops-only-0987654321")
        return judge_create(
            owner=researcher, name="ops", base_url=endpoint.url(), model="m", api_key_env="OPS_ONLY_KEY",
            key_env_by_operator=True, max_retries=0,
        )  # fmt: skip

    def test_the_researcher_may_rename_an_operator_judge(self, rita, operator_judge):
        response = rita.patch(f"/api/judging/judges/{operator_judge.pk}/", {"name": "renamed"}, "application/json")
        assert response.status_code == 200
        assert resolve_api_key(JudgeConfig.objects.get(pk=operator_judge.pk)) == "sk-ops-only-0987654321"

    def test_pointing_an_operator_judge_elsewhere_from_the_web_is_refused(self, rita, operator_judge):
        other = RecordingServer()
        try:
            response = rita.patch(
                f"/api/judging/judges/{operator_judge.pk}/", {"base_url": other.url()}, "application/json"
            )
        finally:
            other.stop()
        assert response.status_code == 400
        assert "earlier base URL only" in response.json()["api_key_env"][0]

    def test_an_operator_judge_moved_behind_the_services_back_sends_nothing(self, operator_judge, make_study, endpoint):
        other = RecordingServer()
        try:
            JudgeConfig.objects.filter(pk=operator_judge.pk).update(base_url=other.url())
            run = run_create(
                study=make_study(n_items=1), judge=JudgeConfig.objects.get(pk=operator_judge.pk), enqueue=False
            )
            process_run(run_id=run.pk)
            run.refresh_from_db()
            assert run.status == "failed"
            assert "OPS_ONLY_KEY" in run.error
            assert other.calls == [] and endpoint.calls == []
        finally:
            other.stop()

    def test_a_grant_cannot_be_made_by_typing_it_as_a_key(self, researcher, endpoint, monkeypatch):
        # A typed key is encrypted under another derived key than grants: pasting a grant's text
        # (or anything else) as a key never makes a variable usable.
        monkeypatch.setenv("OPS_ONLY_KEY", "sk-ops-only-0987654321")
        judge = judge_create(
            owner=researcher, name="paste", base_url=endpoint.url(), model="m", api_key="operator-grant:x"
        )
        JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env="OPS_ONLY_KEY")
        with pytest.raises(ApiKeyUnavailable, match="OPS_ONLY_KEY"):
            resolve_api_key(JudgeConfig.objects.get(pk=judge.pk))


class TestKeyRotation:
    def test_a_key_stored_under_the_old_secret_still_decrypts(self, researcher, endpoint, settings):
        settings.FUNNYBONE_KEY_SECRET = "the old secret"
        judge = judge_create(owner=researcher, name="k", base_url=endpoint.url(), model="m", api_key=LAB_KEY)
        settings.FUNNYBONE_KEY_SECRET = "the new secret"
        settings.FUNNYBONE_KEY_SECRET_OLD = ["the old secret"]
        assert resolve_api_key(JudgeConfig.objects.get(pk=judge.pk)) == LAB_KEY

    def test_a_rotated_secret_key_keeps_keys_readable(self, researcher, endpoint, settings):
        settings.FUNNYBONE_KEY_SECRET = ""
        settings.SECRET_KEY = "the old django secret"
        judge = judge_create(owner=researcher, name="k", base_url=endpoint.url(), model="m", api_key=LAB_KEY)
        settings.SECRET_KEY = "the new django secret"
        settings.FUNNYBONE_KEY_SECRET_OLD = ["the old django secret"]
        assert resolve_api_key(JudgeConfig.objects.get(pk=judge.pk)) == LAB_KEY

    def test_new_keys_are_encrypted_under_the_current_secret(self, settings):
        settings.FUNNYBONE_KEY_SECRET = "the new secret"
        settings.FUNNYBONE_KEY_SECRET_OLD = ["the old secret"]
        token = encrypt_api_key(LAB_KEY)
        settings.FUNNYBONE_KEY_SECRET_OLD = []
        judge = JudgeConfig(api_key_encrypted=token)
        assert resolve_api_key(judge) == LAB_KEY

    def test_the_rotate_command_moves_every_key_to_the_current_secret(
        self, researcher, endpoint, settings, make_study, monkeypatch, capsys
    ):
        monkeypatch.setenv("OPS_ONLY_KEY", "sk-ops-only-0987654321")
        settings.FUNNYBONE_KEY_SECRET = "the old secret"
        typed = judge_create(owner=researcher, name="typed", base_url=endpoint.url(), model="m", api_key=LAB_KEY)
        granted = judge_create(
            owner=researcher, name="granted", base_url=endpoint.url(), model="m", api_key_env="OPS_ONLY_KEY",
            key_env_by_operator=True,
        )  # fmt: skip
        settings.FUNNYBONE_KEY_SECRET = "the new secret"
        settings.FUNNYBONE_KEY_SECRET_OLD = ["the old secret"]
        call_command("rotate_judge_keys")
        assert "2 judge keys" in capsys.readouterr().out
        settings.FUNNYBONE_KEY_SECRET_OLD = []  # the old secret is gone for good
        assert resolve_api_key(JudgeConfig.objects.get(pk=typed.pk)) == LAB_KEY
        assert resolve_api_key(JudgeConfig.objects.get(pk=granted.pk)) == "sk-ops-only-0987654321"

    def test_without_the_old_secret_the_run_says_to_enter_the_key_again(
        self, researcher, endpoint, settings, make_study
    ):
        settings.FUNNYBONE_KEY_SECRET = "the old secret"
        judge = judge_create(owner=researcher, name="k", base_url=endpoint.url(), model="m", api_key=LAB_KEY)
        settings.FUNNYBONE_KEY_SECRET = "the new secret"
        run = run_create(study=make_study(n_items=1), judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "failed"
        assert "enter it again" in run.error
        assert endpoint.calls == []
        assert not Judgment.objects.filter(rater=judge.rater).exists()
        assert LAB_KEY not in json.dumps(run.error)
