"""Export pages: owner only, CSRF-protected, small studies answered at once, large ones in the background."""

import io
import json

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from openpyxl import load_workbook

from annotation.models import Rater
from ratings.models import Export
from ratings.tasks import export_study_task
from tests.conftest import build_study
from tests.ratings.export_helpers import rate_as_crowd

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.ratings.export_urls")]


@pytest.fixture(autouse=True)
def fast_passwords_and_media(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def study(researcher):
    study = build_study(researcher, n_items=3, quota_per_item=2)
    rate_as_crowd(
        study,
        {
            "p1": {"item-0": {"rating": 3}, "item-1": {"rating": 1}, "item-2": {"rating": 0}},
            "p2": {"item-0": {"rating": 2}, "item-1": {"rating": 1}, "item-2": {"rating": 1}},
        },
    )
    return study


def login(client, username):
    assert client.login(username=username, password=f"{username}-password-123")
    return client


def post(client, study, data):
    """POST the export form the way a browser does: the token comes from the page."""
    page = client.get(reverse("exports:page", args=[study.slug]))
    assert page.status_code == 200
    return client.post(
        reverse("exports:request", args=[study.slug]),
        {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
    )


class TestExportPage:
    def test_the_owner_sees_the_form_with_the_raters(self, csrf_client, study):
        response = login(csrf_client, "rita").get(reverse("exports:page", args=[study.slug]))
        assert response.status_code == 200
        body = response.content.decode()
        assert 'name="format"' in body
        assert "p1" in body and "p2" in body

    def test_another_researcher_gets_a_404(self, csrf_client, study, other_researcher):
        response = login(csrf_client, "otto").get(reverse("exports:page", args=[study.slug]))
        assert response.status_code == 404

    def test_too_many_raters_to_list_are_not_read_and_a_posted_subset_is_refused(self, csrf_client, study, monkeypatch):
        monkeypatch.setattr("ratings.export_views.SUBSET_CHOICES_MAX", 1)
        client = login(csrf_client, "rita")
        with CaptureQueriesContext(connection) as captured:
            body = client.get(reverse("exports:page", args=[study.slug])).content.decode()
        assert 'name="rater"' not in body and "more than 1 raters, too many to list" in body
        enrollments = [q["sql"] for q in captured.captured_queries if '"annotation_enrollment"' in q["sql"]]
        assert len(enrollments) == 1 and enrollments[0].endswith("LIMIT 2")
        p1 = Rater.objects.get(external_id="p1")
        response = post(client, study, {"format": "xlsx", "rater": [p1.pk]})
        assert response.status_code == 400 and "rater" in response.context["form"].errors

    def test_an_anonymous_visitor_is_sent_to_log_in(self, csrf_client, study):
        response = csrf_client.get(reverse("exports:page", args=[study.slug]))
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]


class TestExportRequest:
    def test_a_post_without_the_csrf_token_is_refused(self, csrf_client, study):
        response = login(csrf_client, "rita").post(reverse("exports:request", args=[study.slug]), {"format": "csv"})
        assert response.status_code == 403

    def test_a_get_is_not_allowed(self, csrf_client, study):
        response = login(csrf_client, "rita").get(reverse("exports:request", args=[study.slug]))
        assert response.status_code == 405

    def test_a_small_study_streams_the_workbook_at_once(self, csrf_client, study):
        response = post(login(csrf_client, "rita"), study, {"format": "xlsx"})
        assert response.status_code == 200
        assert response["Content-Disposition"].startswith("attachment;")
        assert ".xlsx" in response["Content-Disposition"]
        workbook = load_workbook(io.BytesIO(b"".join(response.streaming_content)))
        assert workbook["Items"]["B2"].value == "item-0"
        assert not Export.objects.exists()

    def test_a_small_study_streams_the_csv_at_once(self, csrf_client, study):
        response = post(login(csrf_client, "rita"), study, {"format": "csv"})
        assert response.status_code == 200
        lines = b"".join(response.streaming_content).decode().splitlines()
        assert lines[0].startswith("study,judgment_id,item,")
        assert len(lines) == 1 + 6

    def test_a_small_study_streams_the_raw_csv_at_once(self, csrf_client, study):
        response = post(login(csrf_client, "rita"), study, {"format": "csv_raw"})
        assert response.status_code == 200
        assert ".raw.csv" in response["Content-Disposition"]
        lines = b"".join(response.streaming_content).decode().splitlines()
        assert lines[0].startswith("study,judgment_id,item,")
        assert len(lines) == 1 + 6

    def test_a_small_study_sends_the_parquet_file_at_once(self, csrf_client, study):
        response = post(login(csrf_client, "rita"), study, {"format": "parquet"})
        assert response.status_code == 200
        assert ".parquet" in response["Content-Disposition"]
        frame = pd.read_parquet(io.BytesIO(b"".join(response.streaming_content)))
        assert len(frame) == 6
        assert sorted(frame["numeric"]) == [0.0, 1.0, 1.0, 1.0, 2.0, 3.0]

    def test_a_subset_of_raters_is_passed_to_the_workbook(self, csrf_client, study):
        p1 = study.enrollments.get(rater__external_id="p1").rater
        response = post(login(csrf_client, "rita"), study, {"format": "xlsx", "rater": [p1.pk]})
        workbook = load_workbook(io.BytesIO(b"".join(response.streaming_content)))
        meta = {row[0].value: row[1].value for row in workbook["Metadata"].iter_rows(min_row=2)}
        assert meta["Rater subset"] == f"R{p1.pk}"

    def test_an_unknown_format_is_a_form_error(self, csrf_client, study):
        response = post(login(csrf_client, "rita"), study, {"format": "docx"})
        assert response.status_code == 400
        assert not Export.objects.exists()

    def test_another_researcher_cannot_request_an_export(self, csrf_client, study, other_researcher):
        own = build_study(other_researcher, name="Otto's study", n_items=1)
        client = login(csrf_client, "otto")
        client.get(reverse("exports:page", args=[own.slug]))  # a valid CSRF token of his own
        response = client.post(
            reverse("exports:request", args=[study.slug]),
            {"format": "csv", "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
        )
        assert response.status_code == 404


class TestLargeStudy:
    @pytest.fixture(autouse=True)
    def small_inline_limit(self, settings):
        settings.FUNNYBONE_EXPORT_INLINE_MAX = 2

    def test_a_large_study_gets_a_queued_export_and_a_status_page(
        self, csrf_client, study, django_capture_on_commit_callbacks
    ):
        client = login(csrf_client, "rita")
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            response = post(client, study, {"format": "xlsx"})
        export = Export.objects.get()
        assert response.status_code == 302
        assert response["Location"] == reverse("exports:status", args=[export.pk])
        assert export.status == Export.Status.QUEUED
        assert export.rows_expected == 6
        assert len(callbacks) == 1  # the task is sent only once the request commits
        status = client.get(response["Location"])
        assert "waiting for a worker" in status.content.decode()
        page = client.get(reverse("exports:page", args=[study.slug]))
        assert f'id="export-{export.pk}"' in page.content.decode()

    def test_htmx_gets_the_status_fragment_that_polls(self, csrf_client, study, django_capture_on_commit_callbacks):
        client = login(csrf_client, "rita")
        client.get(reverse("exports:page", args=[study.slug]))
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(
                reverse("exports:request", args=[study.slug]),
                {"format": "csv"},
                headers={"HX-Request": "true", "X-CSRFToken": client.cookies["csrftoken"].value},
            )
        assert response.status_code == 202
        body = response.content.decode()
        assert "<html" not in body
        assert 'hx-trigger="every 2s"' in body

    def test_a_finished_export_stops_polling_and_offers_the_download(
        self, csrf_client, study, django_capture_on_commit_callbacks
    ):
        client = login(csrf_client, "rita")
        with django_capture_on_commit_callbacks(execute=False):
            post(client, study, {"format": "jsonl"})
        export = Export.objects.get()
        export_study_task.apply(args=[export.pk])
        fragment = client.get(reverse("exports:status", args=[export.pk]), headers={"HX-Request": "true"})
        body = fragment.content.decode()
        assert "hx-trigger" not in body
        assert reverse("exports:download", args=[export.pk]) in body
        download = client.get(reverse("exports:download", args=[export.pk]))
        assert download.status_code == 200
        lines = b"".join(download.streaming_content).decode().splitlines()
        assert [json.loads(line)["study"] for line in lines] == [study.slug] * 6
        assert download["Content-Disposition"].startswith("attachment;")

    def test_only_the_owner_can_see_or_download_an_export(
        self, csrf_client, study, other_researcher, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=False):
            post(login(csrf_client, "rita"), study, {"format": "csv"})
        export = Export.objects.get()
        export_study_task.apply(args=[export.pk])
        csrf_client.logout()
        client = login(csrf_client, "otto")
        assert client.get(reverse("exports:status", args=[export.pk])).status_code == 404
        assert client.get(reverse("exports:download", args=[export.pk])).status_code == 404

    def test_an_unfinished_export_cannot_be_downloaded(self, csrf_client, study, django_capture_on_commit_callbacks):
        client = login(csrf_client, "rita")
        with django_capture_on_commit_callbacks(execute=False):
            post(client, study, {"format": "csv"})
        export = Export.objects.get()
        assert client.get(reverse("exports:download", args=[export.pk])).status_code == 404


class TestApi:
    def test_the_owner_queues_an_export_and_polls_it(self, client, study, django_capture_on_commit_callbacks):
        login(client, "rita")
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(
                reverse("exports:api_create", args=[study.slug]), {"format": "csv"}, content_type="application/json"
            )
        assert response.status_code == 202
        created = response.json()
        assert created["status"] == "queued"
        assert created["download_url"] is None
        export_study_task.apply(args=[created["id"]])
        polled = client.get(created["status_url"]).json()
        assert polled["status"] == "done"
        assert polled["rows_written"] == 6
        assert polled["download_url"].endswith(reverse("exports:download", args=[created["id"]]))

    def test_another_researcher_gets_a_404(self, client, study, other_researcher):
        login(client, "otto")
        response = client.post(
            reverse("exports:api_create", args=[study.slug]), {"format": "csv"}, content_type="application/json"
        )
        assert response.status_code == 404

    def test_a_subset_must_name_raters_of_the_study(self, client, study):
        login(client, "rita")
        response = client.post(
            reverse("exports:api_create", args=[study.slug]),
            {"format": "xlsx", "rater_subset": [999999]},
            content_type="application/json",
        )
        assert response.status_code == 400
        assert "R999999" in response.json()["rater_subset"][0]
