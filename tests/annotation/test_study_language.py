"""A study's ``language`` must be a language tag Funnybone knows, at every door: page, API and study file.

``xx<script>`` and a 2,000-character value were accepted and stored; the value ends up in the
annotator pages' lang attribute and picks their translation.
"""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.languages import language_problem
from annotation.models import Study
from annotation.services.studies import study_create
from tests.annotation.test_study_settings import page_form

pytestmark = pytest.mark.django_db

REFUSED = ["xx<script>", "e" * 2_000, "xx", "en us", 7]


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


class TestLanguageProblem:
    @pytest.mark.parametrize("language", ["en", "zh", "ja", "zh-Hans", "de-CH", "pt-BR", "", None])
    def test_a_known_language_tag_or_none_is_fine(self, language):
        assert language_problem(language) is None

    @pytest.mark.parametrize("language", REFUSED)
    def test_anything_else_is_refused_and_the_message_stays_short(self, language):
        problem = language_problem(language)
        assert problem is not None and "such as en, zh, ja or de" in problem
        assert len(problem) < 120


class TestTheStudyPage:
    @pytest.mark.parametrize("language", ["xx<script>", "e" * 2_000])
    def test_it_names_the_language_and_creates_nothing(self, client, researcher, language):
        client.force_login(researcher)
        form = page_form(name="Jokes", config=json.dumps({"language": language}))
        response = client.post(reverse("researcher:study_new"), form)
        assert response.status_code == 400
        errors = response.context["form"].errors["config"]
        assert len(errors) == 1 and errors[0].startswith("Language: ")
        assert Study.objects.count() == 0


class TestTheApi:
    @pytest.mark.parametrize("language", REFUSED)
    def test_creating_a_study_answers_400_naming_the_language(self, api, language):
        body = {"name": "X", "task_type": "ordinal", "config": {"language": language}}
        response = api.post("/api/v1/studies/", body, format="json")
        assert response.status_code == 400
        assert response.json()["errors"][0].startswith("config: language: ")
        assert Study.objects.count() == 0

    def test_changing_the_language_answers_400_and_keeps_the_old_one(self, api, researcher):
        study = study_create(owner=researcher, name="Y", task_type="ordinal", config={"language": "ja"})
        response = api.patch(
            reverse("api:study_update", args=[study.pk]), {"config": {"language": "xx<script>"}}, format="json"
        )
        assert response.status_code == 400
        study.refresh_from_db()
        assert study.config["language"] == "ja"


class TestTheStudyFile:
    def test_load_study_lists_the_language_and_writes_nothing(self, tmp_path, researcher, capsys):
        path = tmp_path / "study.yaml"
        path.write_text("name: Z\ntask_type: ordinal\nconfig:\n  language: xx<script>\nitems: [{id: a, text: x}]\n")
        with pytest.raises(CommandError, match="1 problem; nothing was written"):
            call_command("load_study", str(path), owner=researcher.username)
        assert "config: language: 'xx<script>' is not a language tag" in capsys.readouterr().err
        assert Study.objects.count() == 0
