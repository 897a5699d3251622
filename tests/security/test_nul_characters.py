"""NUL characters (PostgreSQL stores none) in links, answers and API queries: a 400 or a form error, never a 500.

These faults are PostgreSQL's (SQLite stores a NUL happily), so the tests run there.
"""

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.models import Enrollment, Judgment
from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
from tests.annotation.test_annotator_flow import assignment_from, begin, csrf_from, url
from tests.conftest import require_postgres

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def on_postgres():
    require_postgres()
    cache.clear()  # the entry rate limit counts in the cache
    yield
    cache.clear()


@pytest.fixture
def visitor():
    return Client(raise_request_exception=False)


@pytest.fixture
def api(researcher):
    client = Client(raise_request_exception=False)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=researcher).key}"
    return client


def free_text_study(researcher, task_type: str, text: str):
    study = study_create(owner=researcher, name=f"{task_type} study", task_type=task_type)
    items_create(study=study, items=[ItemSpec(external_id="h1", text=text)])
    study_set_state(study=study, state="open")
    return study


class TestTheCrowdEntryLink:
    @pytest.mark.parametrize("param", ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"])
    def test_a_nul_in_a_prolific_parameter_is_a_400_page(self, visitor, make_study, param):
        study = make_study()
        query = {"PROLIFIC_PID": "worker-1", "STUDY_ID": "s", "SESSION_ID": "x", param: "ab\x00c"}
        response = visitor.get(url(study), query)
        assert response.status_code == 400
        assert f"NUL characters are not allowed in the query parameter {param}." in response.content.decode()
        assert not Enrollment.objects.exists()

    def test_a_nul_in_the_link_itself_is_a_400_page(self, visitor, make_study):
        response = visitor.get("/s/abc%00def/", {"PROLIFIC_PID": "worker-1"})
        assert response.status_code == 400
        assert "NUL characters are not allowed in the address." in response.content.decode()

    def test_a_nul_in_the_session_cookie_is_a_400_page(self, visitor, make_study):
        study = make_study()
        visitor.cookies["sessionid"] = "abcdefgh\x00ijkl"
        response = visitor.get(url(study, "item"))
        assert response.status_code == 400
        assert "NUL characters are not allowed in the cookie sessionid." in response.content.decode()

    def test_an_ordinary_link_still_enrols(self, visitor, make_study):
        assert visitor.get(url(make_study()), {"PROLIFIC_PID": "worker-1"}).status_code == 302


class TestWrittenAnswers:
    @pytest.mark.parametrize(
        ("task_type", "text", "field", "answer"),
        [
            ("explanation", "Why is this funny?", "text", "It is funny because\x00 of the pun."),
            ("micro_edit", "Cat <sits/> on the mat", "replacement", "dan\x00ces"),
        ],
    )
    def test_a_nul_in_the_answer_is_a_form_error(self, visitor, researcher, task_type, text, field, answer):
        study = free_text_study(researcher, task_type, text)
        begin(visitor, study)
        page = visitor.get(url(study, "item"))
        posted = {field: answer, "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        response = visitor.post(url(study, "item"), posted)
        assert response.status_code == 422
        assert "Your answer contains a NUL character (0x00); please remove it." in response.content.decode()
        assert not Judgment.objects.exists()


class TestApiQueries:
    def test_a_nul_in_any_query_parameter_is_a_400(self, api, make_study):
        study = make_study()
        response = api.get(f"/api/studies/{study.pk}/items/", {"foo": "\x00"})
        assert response.status_code == 400
        assert response.json() == {"detail": "NUL characters are not allowed in the query parameter foo."}

    def test_a_nul_in_a_filter_the_view_reads_is_a_400(self, api):
        response = api.get("/api/judging/templates/", {"name": "funny\x00"})
        assert response.status_code == 400
        assert "query parameter name" in response.json()["detail"]

    def test_a_nul_inside_a_json_value_is_a_400_naming_the_field(self, api):
        body = (
            '{"name": "t", "task_type": "ordinal", "user_text": "{{ text }}", '
            '"response_schema": {"type": "object", "description": "a\\u0000b"}}'
        )
        response = api.post("/api/judging/templates/", body, content_type="application/json")
        assert response.status_code == 400
        message = "description: a NUL character (0x00) at position 2; remove it."
        assert response.json() == {"detail": f"response_schema: {message}", "response_schema": [message]}
