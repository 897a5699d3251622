"""API v1: who may do what, pages everywhere, a token downloads what it exported, a typed schema,
and the older addresses marked deprecated with a link to their successor."""

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament
from ratings.exports.services import export_create
from ratings.models import Export
from ratings.tasks import export_study_task
from tests.api.conftest import contest, items_csv, token_client

pytestmark = pytest.mark.django_db


# Every GET of v1 that names one researcher's object: the URL, filled from ``world``.
OWNED_READS = [
    "/api/v1/studies/{study}/",
    "/api/v1/studies/{study}/progress/",
    "/api/v1/studies/{study}/items/",
    "/api/v1/studies/{study}/imports/",
    "/api/v1/studies/{study}/imports/{import}/",
    "/api/v1/studies/{study}/judgments/",
    "/api/v1/studies/{study}/reports/agreement/",
    "/api/v1/studies/{study}/exports/",
    "/api/v1/exports/{export}/",
    "/api/v1/exports/{export}/download/",
    "/api/v1/judges/{judge}/",
    "/api/v1/runs/{run}/",
    "/api/v1/tournaments/{tournament}/",
    "/api/v1/tournaments/{tournament}/standings/",
]
LISTS = [
    "/api/v1/studies/",
    "/api/v1/judges/",
    "/api/v1/prompt-templates/",
    "/api/v1/runs/",
    "/api/v1/tournaments/",
    "/api/v1/generators/",
    "/api/v1/generation-runs/",
]
# Writes on one object, each harmless to repeat: (method, URL, body).
OWNED_WRITES = [
    ("patch", "/api/v1/studies/{study}/", {"description": "changed"}),
    ("post", "/api/v1/studies/{study}/close/", None),
    ("post", "/api/v1/studies/{study}/exports/", {"format": "csv"}),
    ("post", "/api/v1/runs/{run}/cancel/", None),
    ("post", "/api/v1/tournaments/{tournament}/cancel/", None),
]


class TestAuthorizationMatrix:
    @pytest.mark.parametrize("url", OWNED_READS)
    def test_the_owner_reads_with_a_token(self, world, researcher, url):
        response = token_client(researcher).get(url.format(**world))
        assert response.status_code == 200, response.content

    @pytest.mark.parametrize("url", OWNED_READS)
    def test_the_owner_reads_with_the_session(self, world, researcher, url):
        client = APIClient()
        client.force_login(researcher)
        assert client.get(url.format(**world)).status_code == 200

    @pytest.mark.parametrize("url", OWNED_READS)
    def test_another_researcher_is_told_it_does_not_exist(self, world, other_researcher, url):
        assert token_client(other_researcher).get(url.format(**world)).status_code == 404

    @pytest.mark.parametrize("url", OWNED_READS + LISTS)
    def test_anonymous_requests_are_401_not_a_login_redirect(self, world, url):
        response = APIClient().get(url.format(**world))
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Token")

    @pytest.mark.parametrize("url", OWNED_READS + LISTS)
    def test_a_wrong_token_is_401(self, world, url):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
        assert client.get(url.format(**world)).status_code == 401

    @pytest.mark.parametrize(("method", "url", "body"), OWNED_WRITES)
    def test_writes_on_anothers_objects_are_404_and_change_nothing(
        self, world, researcher, other_researcher, method, url, body
    ):
        before = Export.objects.count()
        response = getattr(token_client(other_researcher), method)(url.format(**world), body, format="json")
        assert response.status_code == 404
        assert Export.objects.count() == before
        assert token_client(researcher).get(f"/api/v1/studies/{world['study']}/").json()["state"] == "open"

    @pytest.mark.parametrize(("method", "url", "body"), OWNED_WRITES)
    def test_the_owner_writes_with_a_token(self, world, researcher, method, url, body):
        response = getattr(token_client(researcher), method)(url.format(**world), body, format="json")
        assert response.status_code in (200, 202), response.content

    @pytest.mark.parametrize(("method", "url", "body"), OWNED_WRITES)
    def test_a_session_write_needs_the_csrf_token(self, world, researcher, method, url, body):
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(researcher)
        response = getattr(client, method)(url.format(**world), body, format="json")
        assert response.status_code == 403
        assert "CSRF" in response.json()["detail"]

    @pytest.mark.parametrize("url", LISTS)
    def test_lists_hold_only_your_own(self, world, other_researcher, url):
        body = token_client(other_researcher).get(url).json()
        if url.endswith("prompt-templates/"):
            assert all(t["shared"] for t in body["results"])  # the built-ins, read-only to everyone
        else:
            assert body["count"] == 0

    def test_another_researchers_study_cannot_be_the_source_of_a_run_or_tournament(self, world, other_researcher):
        client = token_client(other_researcher)
        judge, _ = judge_find_or_create(owner=other_researcher, baseline="random")
        run = client.post("/api/v1/runs/", {"study": world["study"], "judge": judge.pk}, format="json")
        assert run.status_code == 404
        cup = client.post(
            "/api/v1/tournaments/",
            {"name": "stolen", "source_study": world["study"], "judge": judge.pk},
            format="json",
        )
        assert cup.status_code == 404


class TestPagination:
    @pytest.mark.parametrize("url", LISTS)
    def test_every_list_is_a_page_with_a_count(self, world, researcher, url):
        body = token_client(researcher).get(url).json()
        assert set(body) == {"count", "next", "previous", "results"}

    def test_a_page_links_to_the_next_and_the_limit_is_capped(self, researcher, make_study):
        for n in range(3):
            make_study(name=f"study {n}", open_=False)
        client = token_client(researcher)
        first = client.get("/api/v1/studies/?limit=2").json()
        assert first["count"] == 3 and len(first["results"]) == 2
        second = client.get(first["next"]).json()
        assert len(second["results"]) == 1 and second["next"] is None
        names = {s["name"] for s in first["results"] + second["results"]}
        assert names == {"study 0", "study 1", "study 2"}

    def test_a_limit_above_the_ceiling_is_cut_to_it(self, researcher, make_study):
        study = make_study(n_items=3)
        body = token_client(researcher).get(f"/api/v1/studies/{study.pk}/items/?limit=999999").json()
        assert body["count"] == 3 and len(body["results"]) == 3

    def test_runs_are_paged_and_filtered_by_study(self, world, researcher):
        client = token_client(researcher)
        body = client.get(f"/api/v1/runs/?study={world['study']}&limit=1").json()
        assert body["count"] == 1 and body["results"][0]["id"] == world["run"]
        assert client.get("/api/v1/runs/?study=999999").json()["count"] == 0


class TestTokenDownload:
    def test_a_token_client_downloads_the_export_the_api_hands_it(self, researcher, make_study):
        study = make_study(n_items=2, quota_per_item=1)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        while (nxt := next_assignment(enrollment=enrollment)).assignment:
            judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 3})
        client = token_client(researcher)
        queued = client.post(f"/api/v1/studies/{study.pk}/exports/", {"format": "csv"}, format="json")
        assert queued.status_code == 202
        assert queued.json()["download_url"] is None
        export_study_task.apply(args=[queued.json()["id"]])
        status = client.get(queued.json()["status_url"]).json()
        assert status["status"] == "done"
        download = client.get(status["download_url"], HTTP_ACCEPT="text/csv")
        assert download.status_code == 200
        assert download["Content-Disposition"].startswith("attachment")
        rows = b"".join(download.streaming_content).decode().splitlines()
        assert len(rows) == 3  # the header and one row per judgment

    def test_an_unfinished_export_is_404_with_a_reason(self, researcher, make_study):
        study = make_study()
        export = export_create(study=study, user=researcher, fmt="csv")
        response = token_client(researcher).get(f"/api/v1/exports/{export.pk}/download/")
        assert response.status_code == 404
        assert response.json()["detail"] == "This export is not ready."


class TestStudyFile:
    def test_a_study_file_with_its_items_file_creates_an_open_study(self, researcher, tmp_path):
        from django.core.files.uploadedfile import SimpleUploadedFile

        study_file = yaml.safe_dump(
            {"name": "From a file", "task_type": "ordinal", "state": "open", "items_file": "../../etc/items.csv"}
        )
        response = token_client(researcher).post(
            "/api/v1/studies/from-study-file/",
            {
                "study_file": SimpleUploadedFile("study.yaml", study_file.encode()),
                "items_file": SimpleUploadedFile("items.csv", b"id,text\na,One joke.\nb,Another.\n"),
            },
            format="multipart",
        )
        assert response.status_code == 201, response.content
        body = response.json()
        assert body["state"] == "open"
        items = token_client(researcher).get(f"/api/v1/studies/{body['id']}/items/").json()
        assert [i["id"] for i in items["results"]] == ["a", "b"]

    def test_every_problem_is_listed_and_nothing_is_written(self, researcher):
        from django.core.files.uploadedfile import SimpleUploadedFile

        from annotation.models import Study

        study_file = b"name: Broken\ntask_type: nope\ncolour: red\nitems_file: items.csv\n"
        response = token_client(researcher).post(
            "/api/v1/studies/from-study-file/",
            {"study_file": SimpleUploadedFile("study.yaml", study_file)},
            format="multipart",
        )
        assert response.status_code == 400
        errors = " ".join(response.json()["errors"])
        assert "items_file" in errors
        assert Study.objects.count() == 0

    def test_a_file_that_is_not_yaml_is_a_400_naming_the_line(self, researcher):
        from django.core.files.uploadedfile import SimpleUploadedFile

        response = token_client(researcher).post(
            "/api/v1/studies/from-study-file/",
            {"study_file": SimpleUploadedFile("study.yaml", b"name: [unclosed\n")},
            format="multipart",
        )
        assert response.status_code == 400
        assert "study.yaml" in response.json()["errors"][0]


class TestTournaments:
    def test_create_run_and_read_the_standings(self, researcher):
        source = contest(researcher)
        judge, _ = judge_find_or_create(owner=researcher, baseline="length")
        client = token_client(researcher)
        created = client.post(
            "/api/v1/tournaments/", {"name": "length cup", "source_study": source.pk, "judge": judge.pk}, format="json"
        )
        assert created.status_code == 201, created.content
        process_tournament(tournament_id=created.json()["id"])
        standings = client.get(created.json()["standings_url"]).json()
        assert standings["status"] == "done"
        assert standings["leaderboard"]["ranking"] == ["terse", "wordy"]

    def test_a_source_without_two_contestants_is_a_400(self, researcher, make_study):
        judge, _ = judge_find_or_create(owner=researcher, baseline="length")
        study = make_study()
        response = token_client(researcher).post(
            "/api/v1/tournaments/", {"name": "x", "source_study": study.pk, "judge": judge.pk}, format="json"
        )
        assert response.status_code == 400
        assert "two contestants" in str(response.json())


class TestSchema:
    def test_it_validates_and_every_answer_is_typed(self, tmp_path):
        out = tmp_path / "schema.yaml"
        call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
        schema = yaml.safe_load(out.read_text())
        assert schema["paths"] and all(path.startswith("/api/v1/") for path in schema["paths"])
        untyped = []
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                assert operation.get("operationId"), (method, path)
                for code, answer in operation["responses"].items():
                    if code == "204":
                        continue
                    content = answer.get("content") or {}
                    schemas = [c.get("schema") for c in content.values()]
                    if not schemas or not all(schemas) or any(s == {} or s == {"type": "object"} for s in schemas):
                        untyped.append(f"{method.upper()} {path} {code}")
        assert untyped == []

    def test_every_operation_declares_the_refusals_it_can_give(self, tmp_path):
        out = tmp_path / "schema.yaml"
        call_command("spectacular", "--file", str(out))
        schema = yaml.safe_load(out.read_text())
        for path, operations in schema["paths"].items():
            if path == "/api/v1/schema/":
                continue
            for method, operation in operations.items():
                expected = {"401", "403"} | ({"404"} if "{" in path else set())
                assert expected <= set(operation["responses"]), (method, path)

    def test_lists_are_described_as_pages(self, tmp_path):
        out = tmp_path / "schema.yaml"
        call_command("spectacular", "--file", str(out))
        schema = yaml.safe_load(out.read_text())
        for path in LISTS:
            ref = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
            assert ref.split("/")[-1].startswith("Paginated"), path

    def test_it_is_served_at_the_v1_address(self, client):
        response = client.get("/api/v1/schema/")
        assert response.status_code == 200
        assert b"/api/v1/studies/" in response.content


class TestDeprecatedAddresses:
    def test_old_addresses_still_answer_with_a_deprecation_and_a_successor_link(self, world, researcher):
        client = token_client(researcher)
        study = world["study"]
        from annotation.models import Study

        slug = Study.objects.get(pk=study).slug
        cases = [
            ("patch", f"/api/studies/{study}/update/", {"description": "old"}, f"/api/v1/studies/{study}/"),
            ("get", "/api/judging/runs/", None, "/api/v1/runs/"),
            ("get", f"/analysis/api/{slug}/agreement", None, f"/api/v1/studies/{study}/reports/agreement/"),
            ("post", f"/exports/api/study/{slug}/", {"format": "csv"}, f"/api/v1/studies/{study}/exports/"),
        ]
        for method, url, body, successor in cases:
            response = getattr(client, method)(url, body, format="json")
            assert response.status_code in (200, 202), (url, response.content)
            assert response["Deprecation"].startswith("@"), url
            assert response["Link"] == f'<http://testserver{successor}>; rel="successor-version"', url

    def test_v1_answers_carry_no_deprecation(self, world, researcher):
        response = token_client(researcher).get("/api/v1/studies/")
        assert "Deprecation" not in response

    def test_a_stranger_learns_no_study_id_from_the_link(self, world, other_researcher):
        from annotation.models import Study

        slug = Study.objects.get(pk=world["study"]).slug
        response = token_client(other_researcher).get(f"/analysis/api/{slug}/agreement")
        assert response.status_code == 404
        assert "Deprecation" in response and "Link" not in response

    def test_the_old_import_answer_points_at_the_old_status_address(self, researcher, make_study):
        study = make_study(open_=False)
        response = token_client(researcher).post(
            f"/api/studies/{study.pk}/items/import/", {"file": items_csv()}, format="multipart"
        )
        assert response.status_code == 201
        assert f"/api/studies/{study.pk}/imports/" in response.json()["status_url"]


class TestAlignmentReport:
    def test_a_token_reads_the_figures_the_page_shows_from_the_same_stored_report(self, researcher, client):
        from ratings.models import StudyReport
        from tests.ratings.alignment_helpers import build_ordinal

        study, raters = build_ordinal(researcher)
        api = token_client(researcher)
        url = f"/api/v1/studies/{study.pk}/reports/alignment/"
        body = api.get(url).json()
        assert body["computing"] is False and body["current"] is True and body["status"] == "done"
        kappas = {row["label"]: row for row in body["result"]["overall"]["judges"]}
        assert set(kappas) >= {"twin", "contrarian", "gappy"}
        client.force_login(researcher)
        page = client.get(reverse("alignment:report", args=[study.slug]))
        assert page.status_code == 200 and page.context["report"].result == body["result"]
        assert StudyReport.objects.filter(study=study, kind=StudyReport.Kind.ALIGNMENT).count() == 1

        only_twin = api.get(url, {"judges": str(raters["twin"].pk)}).json()
        assert [row["label"] for row in only_twin["result"]["overall"]["judges"]] == ["twin"]

    def test_unknown_ids_are_404_naming_them_and_no_token_is_401_not_a_login_redirect(self, researcher):
        from tests.ratings.alignment_helpers import build_ordinal

        study, _ = build_ordinal(researcher)
        url = f"/api/v1/studies/{study.pk}/reports/alignment/"
        missing = token_client(researcher).get(url, {"judges": "999999"})
        assert missing.status_code == 404 and missing.json()["detail"] == "Not in this study: judge 999999."
        assert APIClient().get(url).status_code == 401
