"""The researcher's REST API: own studies only, token or session auth, a schema without warnings."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.importers import INLINE_MAX_BYTES
from annotation.models import Item, ItemImport, Rater, Study
from annotation.services.assignment import assignment_for_judge, next_assignment
from annotation.services.enrollment import enroll_crowdworker, expert_rater
from annotation.services.judgments import judgment_submit
from annotation.services.studies import study_create
from annotation.tasks import import_items_task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


@pytest.fixture
def draft(researcher):
    return study_create(owner=researcher, name="API draft", task_type="ordinal")


@pytest.fixture
def ottos_study(make_study, other_researcher):
    return make_study(owner=other_researcher, name="Otto's study")


def judged_study(make_study):
    """Two items, one crowd judgment each, plus one unparseable LLM answer."""
    study = make_study(n_items=2, quota_per_item=1)
    enrollment = enroll_crowdworker(study=study, participant_id="p1")
    while (nxt := next_assignment(enrollment=enrollment)).assignment:
        judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 2})
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name="model-x")
    assignment = assignment_for_judge(study=study, rater=judge, item=study.items.first())
    judgment_submit(assignment=assignment, rater=judge, value=None, status="unparseable")
    return study


class TestSchema:
    def test_it_generates_and_validates_without_warnings(self, tmp_path):
        out = tmp_path / "schema.yaml"
        call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
        text = out.read_text()
        for operation in ("studies_create", "items_import", "judgments_list", "studies_progress"):
            assert f"operationId: {operation}" in text

    def test_it_is_served_at_api_schema(self, client):
        response = client.get("/api/schema/")
        assert response.status_code == 200
        assert b"Funnybone API" in response.content


class TestAuthentication:
    def test_anonymous_requests_get_401(self):
        assert APIClient().get(reverse("api:study_list")).status_code == 401

    def test_a_token_from_the_management_command_works(self, researcher, capsys):
        call_command("drf_create_token", "rita")
        key = Token.objects.get(user=researcher).key
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.get(reverse("api:study_list")).status_code == 200

    def test_an_expert_annotator_account_is_refused(self):
        expert = get_user_model().objects.create_user("eve", password="eve-password-123")
        expert_rater(user=expert)
        client = APIClient()
        client.force_authenticate(expert)
        response = client.get(reverse("api:study_list"))
        assert response.status_code == 403
        assert response.json()["detail"] == "Only researchers can use the API."

    def test_session_requests_need_the_csrf_token(self, researcher):
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(researcher)
        response = client.post(reverse("api:study_create"), {"name": "X", "task_type": "ordinal"}, format="json")
        assert response.status_code == 403
        assert "CSRF" in response.json()["detail"]
        assert Study.objects.count() == 0


class TestStudyListApi:
    def test_it_lists_only_own_studies_paginated(self, api, draft, ottos_study):
        body = api.get(reverse("api:study_list")).json()
        assert body["count"] == 1
        assert [s["name"] for s in body["results"]] == ["API draft"]
        assert body["results"][0]["entry_url"] == f"http://testserver/s/{draft.entry_token}/"


class TestStudyCreateApi:
    url = reverse("api:study_create")

    def test_it_creates_a_draft_with_settings(self, api, researcher):
        payload = {
            "name": "Chumor preference",
            "task_type": "pairwise",
            "config": {"labels": ["Explanation 1", "Explanation 2", "Equally good"]},
            "quota_per_item": 3,
            "attention_check_rate": 0.1,
        }
        response = api.post(self.url, payload, format="json")
        assert response.status_code == 201, response.json()
        study = Study.objects.get()
        assert (study.owner, study.state, study.quota_per_item) == (researcher, "draft", 3)
        assert study.config["labels"][2] == "Equally good"
        assert response.json()["id"] == study.pk

    def test_it_explains_a_config_the_task_type_rejects(self, api):
        response = api.post(
            self.url, {"name": "X", "task_type": "vote_allocation", "config": {"max_votes": 99}}, format="json"
        )
        assert response.status_code == 400
        assert response.json() == {
            "detail": "max_votes must be a whole number from 1 to 20.",
            "errors": ["max_votes must be a whole number from 1 to 20."],
        }
        assert Study.objects.count() == 0

    def test_it_rejects_a_misspelt_config_setting(self, api):
        response = api.post(self.url, {"name": "X", "task_type": "ordinal", "config": {"point": [1, 2]}}, format="json")
        assert response.status_code == 400
        assert "unknown setting 'point' (did you mean 'points'?)" in response.json()["errors"][0]

    def test_it_rejects_an_unknown_task_type(self, api):
        response = api.post(self.url, {"name": "X", "task_type": "ranking"}, format="json")
        assert response.status_code == 400
        assert "task_type" in response.json()


class TestStudyDetailApi:
    def test_it_returns_an_own_study(self, api, draft):
        body = api.get(reverse("api:study_detail", args=[draft.pk])).json()
        assert (body["name"], body["task_type"], body["state"]) == ("API draft", "ordinal", "draft")

    def test_another_researchers_study_is_not_found(self, api, ottos_study):
        assert api.get(reverse("api:study_detail", args=[ottos_study.pk])).status_code == 404


class TestStudyUpdateApi:
    def test_it_changes_the_given_settings_only(self, api, draft):
        response = api.patch(reverse("api:study_update", args=[draft.pk]), {"quota_per_item": 5}, format="json")
        assert response.status_code == 200
        draft.refresh_from_db()
        assert (draft.quota_per_item, draft.name) == (5, "API draft")

    def test_it_refuses_a_config_change_once_judgments_exist(self, api, make_study):
        study = judged_study(make_study)
        response = api.patch(
            reverse("api:study_update", args=[study.pk]),
            {"config": {"points": [1, 2, 3], "labels": ["a", "b", "c"]}},
            format="json",
        )
        assert response.status_code == 400
        assert response.json() == {
            "detail": "The task configuration cannot change once judgments exist.",
            "errors": ["The task configuration cannot change once judgments exist."],
        }

    def test_an_attention_rate_of_one_is_refused(self, api, draft):
        response = api.patch(reverse("api:study_update", args=[draft.pk]), {"attention_check_rate": 1}, format="json")
        assert response.status_code == 400
        assert "attention_check_rate" in response.json()
        draft.refresh_from_db()
        assert draft.attention_check_rate == 0

    def test_another_researcher_cannot_change_the_study(self, api, ottos_study):
        response = api.patch(reverse("api:study_update", args=[ottos_study.pk]), {"name": "Mine now"}, format="json")
        assert response.status_code == 404
        ottos_study.refresh_from_db()
        assert ottos_study.name == "Otto's study"


class TestStudyOpenApi:
    def test_it_opens_a_study_with_items(self, api, make_study):
        study = make_study(open_=False)
        response = api.post(reverse("api:study_open", args=[study.pk]))
        assert (response.status_code, response.json()["state"]) == (200, "open")

    def test_it_refuses_a_study_without_items(self, api, draft):
        response = api.post(reverse("api:study_open", args=[draft.pk]))
        assert response.status_code == 400
        assert response.json() == {
            "detail": "Add items before opening the study.",
            "errors": ["Add items before opening the study."],
        }

    def test_another_researcher_cannot_open_the_study(self, api, make_study, other_researcher):
        study = make_study(owner=other_researcher, open_=False)
        assert api.post(reverse("api:study_open", args=[study.pk])).status_code == 404
        study.refresh_from_db()
        assert study.state == "draft"


class TestStudyCloseApi:
    def test_it_closes_an_open_study(self, api, make_study):
        study = make_study()
        assert api.post(reverse("api:study_close", args=[study.pk])).json()["state"] == "closed"

    def test_another_researcher_cannot_close_the_study(self, api, ottos_study):
        assert api.post(reverse("api:study_close", args=[ottos_study.pk])).status_code == 404
        ottos_study.refresh_from_db()
        assert ottos_study.state == "open"


class TestItemImportApi:
    def url(self, study):
        return reverse("api:item_import", args=[study.pk])

    def test_it_imports_a_json_list_of_items(self, api, draft):
        items = [{"id": "a", "text": "Joke", "gold": 2}, {"id": "b", "text": "Other", "metadata": {"src": "x"}}]
        response = api.post(self.url(draft), {"items": items}, format="json")
        assert response.status_code == 201
        assert response.json() == {
            "status": "done",
            "items_created": 2,
            "errors": [],
            "import_id": None,
            "status_url": None,
        }
        assert draft.items.get(external_id="a").gold == {"rating": 2}

    def test_a_bad_json_list_reports_every_item_and_imports_nothing(self, api, draft):
        items = [{"id": "a", "text": "Joke", "gold": 9}, {"id": "b", "txt": "typo"}]
        response = api.post(self.url(draft), {"items": items}, format="json")
        assert response.status_code == 400
        errors = response.json()["errors"]
        assert errors[0] == "Item 1 (id 'a'): gold answer: The rating 9 is outside the scale (0, 1, 2, 3)."
        assert errors[1].startswith("Item 2: unknown key 'txt' (did you mean 'text'?)")
        assert draft.items.count() == 0

    def test_it_imports_an_uploaded_csv(self, api, draft):
        upload = SimpleUploadedFile("items.csv", b"id,text\nj1,A joke\n")
        response = api.post(self.url(draft), {"file": upload}, format="multipart")
        assert response.status_code == 201
        body = response.json()
        assert (body["status"], body["items_created"]) == ("done", 1)
        assert body["status_url"].endswith(reverse("api:import_detail", args=[draft.pk, body["import_id"]]))

    def test_a_bad_upload_answers_400_with_row_errors(self, api, draft):
        upload = SimpleUploadedFile("items.csv", b"id,text\nj1,a\nj1,b\n")
        response = api.post(self.url(draft), {"file": upload}, format="multipart")
        assert response.status_code == 400
        assert response.json()["errors"] == ["Row 3: duplicate item id 'j1'; Row 2 already uses it."]
        assert draft.items.count() == 0

    def test_a_file_of_the_wrong_type_answers_400(self, api, draft):
        response = api.post(self.url(draft), {"file": SimpleUploadedFile("x.xls", b"x")}, format="multipart")
        assert response.status_code == 400
        assert response.json()["errors"][0].startswith("Old Excel files (.xls) cannot be read")

    def test_a_big_upload_is_queued_and_answers_202(self, api, draft, monkeypatch, django_capture_on_commit_callbacks):
        queued = []
        monkeypatch.setattr(import_items_task, "delay", queued.append)
        rows = "".join(f"j{i},{'A long joke about ducks. ' * 40}{i}\n" for i in range(1200))
        data = f"id,text\n{rows}".encode()
        assert len(data) > INLINE_MAX_BYTES
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(self.url(draft), {"file": SimpleUploadedFile("big.csv", data)}, format="multipart")
        assert response.status_code == 202
        body = response.json()
        assert (body["status"], queued) == ("queued", [body["import_id"]])
        assert draft.items.count() == 0

    def test_another_researcher_cannot_import_into_the_study(self, api, ottos_study):
        before = ottos_study.items.count()
        response = api.post(self.url(ottos_study), {"items": [{"id": "intruder", "text": "x"}]}, format="json")
        assert response.status_code == 404
        upload = SimpleUploadedFile("items.csv", b"id,text\nintruder,x\n")
        assert api.post(self.url(ottos_study), {"file": upload}, format="multipart").status_code == 404
        assert ottos_study.items.count() == before
        assert not Item.objects.filter(external_id="intruder").exists()
        assert ItemImport.objects.count() == 0


class TestItemImportDetailApi:
    def test_it_reports_an_imports_status(self, api, draft):
        upload = SimpleUploadedFile("items.csv", b"id,text\nj1,A joke\n")
        import_id = api.post(reverse("api:item_import", args=[draft.pk]), {"file": upload}, format="multipart").json()[
            "import_id"
        ]
        body = api.get(reverse("api:import_detail", args=[draft.pk, import_id])).json()
        assert (body["status"], body["items_created"], body["original_name"]) == ("done", 1, "items.csv")

    def test_another_researchers_import_is_not_found(self, api, other_researcher, ottos_study):
        item_import = ItemImport(study=ottos_study, original_name="x.csv", format="csv", created_by=other_researcher)
        item_import.file.save("x.csv", io.BytesIO(b"id\n"), save=False)
        item_import.save()
        assert api.get(reverse("api:import_detail", args=[ottos_study.pk, item_import.pk])).status_code == 404


class TestItemListApi:
    def test_it_lists_items_with_candidates_in_order(self, api, make_study):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2)
        body = api.get(reverse("api:item_list", args=[study.pk]), {"limit": 2}).json()
        assert body["count"] == 3
        assert [i["id"] for i in body["results"]] == ["item-0", "item-1"]
        assert [c["key"] for c in body["results"][0]["candidates"]] == ["c0", "c1"]
        assert body["results"][0]["candidates"][0]["provenance"] == {"model": "secret-model-0"}

    def test_another_researchers_items_are_not_found(self, api, ottos_study):
        assert api.get(reverse("api:item_list", args=[ottos_study.pk])).status_code == 404


class TestJudgmentListApi:
    def url(self, study):
        return reverse("api:judgment_list", args=[study.pk])

    def test_it_lists_every_judgment_with_its_rater(self, api, make_study):
        study = judged_study(make_study)
        body = api.get(self.url(study)).json()
        assert body["count"] == 3
        first = body["results"][0]
        assert (first["rater_kind"], first["rater_name"], first["value"]) == ("crowd", "p1", {"rating": 2})

    def test_it_filters_by_rater_kind_and_status(self, api, make_study):
        study = judged_study(make_study)
        assert api.get(self.url(study), {"rater_kind": "crowd"}).json()["count"] == 2
        llm = api.get(self.url(study), {"status": "unparseable"}).json()
        assert [j["rater_kind"] for j in llm["results"]] == ["llm"]

    def test_it_rejects_an_unknown_filter_value(self, api, make_study):
        response = api.get(self.url(make_study()), {"rater_kind": "robot"})
        assert response.status_code == 400
        assert "rater_kind" in response.json()

    def test_another_researchers_judgments_are_not_found(self, api, make_study, other_researcher):
        study = judged_study(lambda **kw: make_study(owner=other_researcher, **kw))
        assert api.get(self.url(study)).status_code == 404


class TestStudyProgressApi:
    def test_it_reports_overall_item_and_rater_progress(self, api, make_study):
        study = judged_study(make_study)
        body = api.get(reverse("api:study_progress", args=[study.pk])).json()
        assert (body["percent"], body["judgments_done"], body["judgments_needed"]) == (100.0, 2, 2)
        assert body["judge_judgments"] == 1
        assert [(r["name"], r["judgments"]) for r in body["raters"]] == [("p1", 2)]
        assert {i["item"] for i in body["items"]} == {"item-0", "item-1"}

    def test_another_researchers_progress_is_not_found(self, api, ottos_study):
        assert api.get(reverse("api:study_progress", args=[ottos_study.pk])).status_code == 404
