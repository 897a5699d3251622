"""The generation pages and API: generators with write-only keys, starting and watching generation runs."""

import pytest
from django.test import Client

from annotation.models import Candidate
from judging.models import GenerationRun, GeneratorConfig
from judging.services.generation import generation_run_create, generator_create, process_generation_run

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]

SECRET = "sk-generator-secret-4242"


def generator_form(**overrides):
    return {
        "name": "alpha",
        "base_url": "http://127.0.0.1:8080/v1",
        "model": "joker-1",
        "api_key": SECRET,
        "temperature": "0.7",
        "max_tokens": "120",
        "timeout_seconds": "30",
        "max_retries": "2",
        "backoff_seconds": "0",
        "concurrency": "2",
        "rate_limit_per_minute": "0",
        "user_text": "Write a joke about: {{ prompt }}",
        **overrides,
    }


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def otto(other_researcher):
    client = Client()
    client.force_login(other_researcher)
    return client


@pytest.fixture
def make_generator(researcher, fault_server):
    def make(name, *steps, owner=None, **settings):
        return generator_create(
            owner=owner or researcher,
            name=name,
            base_url=fault_server.url(*(steps or ("ok",))),
            model=f"{name}-model",
            backoff_seconds=0.0,
            timeout_seconds=2,
            **settings,
        )

    return make


class TestGeneratorPages:
    def test_a_researcher_creates_a_generator_whose_key_is_never_shown(self, rita, researcher):
        response = rita.post("/judging/generators/", generator_form())
        assert response.status_code == 302
        generator = GeneratorConfig.objects.get(owner=researcher, name="alpha")
        assert generator.has_api_key and generator.api_key_encrypted
        assert SECRET not in generator.api_key_encrypted
        for url in ("/judging/generators/", f"/judging/generators/{generator.pk}/"):
            page = rita.get(url).content.decode()
            assert SECRET not in page
            assert "stored (encrypted)" in page

    def test_the_new_generator_form_suggests_temperature_0_7_and_a_prompt(self, rita):
        page = rita.get("/judging/generators/").content.decode()
        assert 'name="temperature" value="0.7"' in page
        assert "{{ prompt }}" in page

    def test_editing_keeps_the_key_and_an_env_var_replaces_it(self, rita, make_generator):
        generator = make_generator("alpha", api_key=SECRET)
        rita.post(f"/judging/generators/{generator.pk}/", generator_form(api_key="", temperature="1.1"))
        generator.refresh_from_db()
        assert (generator.temperature, generator.key_source) == (1.1, "stored (encrypted)")
        rita.post(f"/judging/generators/{generator.pk}/", generator_form(api_key="", api_key_env="JOKER_KEY"))
        generator.refresh_from_db()
        assert generator.key_source == "environment variable JOKER_KEY"
        assert generator.api_key_encrypted == ""

    def test_a_generator_without_a_model_is_refused(self, rita):
        response = rita.post("/judging/generators/", generator_form(model=""))
        assert response.status_code == 200
        assert not GeneratorConfig.objects.exists()

    def test_a_duplicate_name_is_refused_with_a_message(self, rita, make_generator):
        make_generator("alpha")
        response = rita.post("/judging/generators/", generator_form())
        assert "already have a generator named" in response.content.decode()
        assert GeneratorConfig.objects.count() == 1

    def test_someone_elses_generator_is_not_found(self, otto, make_generator):
        generator = make_generator("alpha")
        assert otto.get(f"/judging/generators/{generator.pk}/").status_code == 404
        assert otto.post(f"/judging/generators/{generator.pk}/", generator_form(name="stolen")).status_code == 404
        generator.refresh_from_db()
        assert generator.name == "alpha"

    def test_creating_a_generator_needs_the_csrf_token(self, csrf_client, researcher):
        csrf_client.force_login(researcher)
        assert csrf_client.post("/judging/generators/", generator_form()).status_code == 403
        assert not GeneratorConfig.objects.exists()


class TestGenerationPages:
    def test_the_runs_page_offers_generation_and_starts_a_run(self, rita, researcher, make_study, make_generator):
        study = make_study(n_items=2)
        alpha, beta = make_generator("alpha"), make_generator("beta")
        page = rita.get(f"/judging/studies/{study.pk}/runs/").content.decode()
        assert "Generate candidates" in page
        assert f'action="/judging/studies/{study.pk}/generate/"' in page
        response = rita.post(f"/judging/studies/{study.pk}/generate/", {"generators": [alpha.pk, beta.pk]})
        run = GenerationRun.objects.get(study=study)
        assert response["Location"] == f"/judging/generations/{run.pk}/"
        assert run.units.count() == 4
        assert run.created_by == researcher

    def test_watching_a_run_until_the_tournament_link_is_useful(self, rita, make_study, make_generator):
        study = make_study(n_items=2)
        run = generation_run_create(
            study=study, generators=[make_generator("alpha"), make_generator("beta")], enqueue=False
        )
        page = rita.get(f"/judging/generations/{run.pk}/").content.decode()
        assert 'hx-trigger="every 1s"' in page
        assert "0 of 4 candidates finished" in page
        process_generation_run(run_id=run.pk)
        partial = rita.get(f"/judging/generations/{run.pk}/", headers={"HX-Request": "true"}).content.decode()
        assert "4 of 4 candidates finished" in partial
        assert "every 1s" not in partial
        assert "<html" not in partial
        runs_page = rita.get(f"/judging/studies/{study.pk}/runs/").content.decode()
        assert f"/judging/studies/{study.pk}/tournaments/new/" in runs_page

    def test_a_pairwise_study_is_refused_with_a_clear_reason(self, rita, make_study, make_generator):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        alpha = make_generator("alpha")
        assert "cannot take generated ones" in rita.get(f"/judging/studies/{study.pk}/runs/").content.decode()
        response = rita.post(f"/judging/studies/{study.pk}/generate/", {"generators": [alpha.pk]})
        assert response.status_code == 400
        assert "take at most 2 candidates" in response.content.decode()
        assert not GenerationRun.objects.exists()

    def test_the_page_says_why_a_candidate_failed(self, rita, make_study, make_generator):
        run = generation_run_create(
            study=make_study(n_items=1), generators=[make_generator("broken", "503", max_retries=0)], enqueue=False
        )
        process_generation_run(run_id=run.pk)
        page = rita.get(f"/judging/generations/{run.pk}/").content.decode()
        assert "broken on item-0" in page
        assert "HTTP 503" in page

    def test_cancelling_then_resuming(self, rita, make_study, make_generator):
        run = generation_run_create(study=make_study(n_items=1), generators=[make_generator("alpha")], enqueue=False)
        rita.post(f"/judging/generations/{run.pk}/cancel/")
        run.refresh_from_db()
        assert run.status == "cancelled"
        assert "Resume the generation" in rita.get(f"/judging/generations/{run.pk}/").content.decode()
        rita.post(f"/judging/generations/{run.pk}/resume/")
        run.refresh_from_db()
        assert run.status == "queued"

    def test_someone_elses_study_and_runs_are_not_found(self, otto, make_study, make_generator, other_researcher):
        study = make_study(n_items=1)
        run = generation_run_create(study=study, generators=[make_generator("alpha")], enqueue=False)
        theirs = make_generator("mine", owner=other_researcher)
        assert otto.post(f"/judging/studies/{study.pk}/generate/", {"generators": [theirs.pk]}).status_code == 404
        assert otto.get(f"/judging/generations/{run.pk}/").status_code == 404
        assert otto.post(f"/judging/generations/{run.pk}/cancel/").status_code == 404
        assert otto.post(f"/judging/generations/{run.pk}/resume/").status_code == 404
        run.refresh_from_db()
        assert run.status == "queued"
        assert GenerationRun.objects.count() == 1

    def test_another_researchers_generator_cannot_be_chosen(self, rita, make_study, make_generator, other_researcher):
        study = make_study(n_items=1)
        theirs = make_generator("theirs", owner=other_researcher)
        response = rita.post(f"/judging/studies/{study.pk}/generate/", {"generators": [theirs.pk]})
        assert response.status_code == 400
        assert not GenerationRun.objects.exists()

    def test_starting_a_generation_needs_the_csrf_token(self, csrf_client, researcher, make_study, make_generator):
        study = make_study(n_items=1)
        csrf_client.force_login(researcher)
        response = csrf_client.post(f"/judging/studies/{study.pk}/generate/", {"generators": [make_generator("a").pk]})
        assert response.status_code == 403
        assert not GenerationRun.objects.exists()


class TestGenerationApi:
    def test_generators_are_created_read_and_changed_without_echoing_the_key(self, rita):
        created = rita.post(
            "/api/judging/generators/",
            {"name": "api-gen", "base_url": "http://127.0.0.1:8080/v1", "model": "m", "api_key": SECRET},
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        body = created.json()
        assert (body["temperature"], body["has_api_key"], body["key_source"]) == (0.7, True, "stored (encrypted)")
        assert "api_key" not in body
        assert "{{ prompt }}" in body["user_text"]
        patched = rita.patch(
            f"/api/judging/generators/{body['id']}/", {"max_tokens": 99}, content_type="application/json"
        )
        listed = rita.get("/api/judging/generators/")
        for response in (created, patched, listed, rita.get(f"/api/judging/generators/{body['id']}/")):
            assert SECRET not in response.content.decode()
        assert patched.json()["max_tokens"] == 99
        assert patched.json()["has_api_key"] is True

    def test_a_bad_base_url_is_a_400(self, rita):
        response = rita.post(
            "/api/judging/generators/",
            {"name": "bad", "base_url": "ftp://example.org", "model": "m"},
            content_type="application/json",
        )
        assert response.status_code == 400
        assert "http(s)" in response.content.decode()

    def test_generation_runs_create_list_progress_cancel_and_resume(self, rita, make_study, make_generator):
        study = make_study(n_items=3)
        alpha, beta = make_generator("alpha"), make_generator("beta", "500", "ok")
        created = rita.post(
            "/api/judging/generation-runs/",
            {"study": study.pk, "generators": [alpha.pk, beta.pk]},
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        run_id = created.json()["id"]
        assert created.json()["progress"]["total"] == 6
        assert {g["name"] for g in created.json()["generators"]} == {"alpha", "beta"}
        process_generation_run(run_id=run_id)
        detail = rita.get(f"/api/judging/generation-runs/{run_id}/").json()
        assert detail["status"] == "done"
        assert (detail["progress"]["generated"], detail["progress"]["failed"]) == (6, 0)
        assert detail["progress"]["tokens"] > 0
        assert Candidate.objects.filter(item__study=study).count() == 6
        assert [r["id"] for r in rita.get(f"/api/judging/generation-runs/?study={study.pk}").json()] == [run_id]
        assert rita.post(f"/api/judging/generation-runs/{run_id}/cancel/").json()["status"] == "done"
        assert rita.post(f"/api/judging/generation-runs/{run_id}/resume/").json()["status"] == "done"

    def test_other_researchers_studies_generators_and_runs_are_not_found(
        self, otto, make_study, make_generator, other_researcher
    ):
        study = make_study(n_items=1)
        alpha = make_generator("alpha")
        theirs = make_generator("theirs", owner=other_researcher)
        body = {"study": study.pk, "generators": [theirs.pk]}
        assert otto.post("/api/judging/generation-runs/", body, content_type="application/json").status_code == 404
        assert otto.get(f"/api/judging/generators/{alpha.pk}/").status_code == 404
        run = generation_run_create(study=study, generators=[alpha], enqueue=False)
        assert otto.get(f"/api/judging/generation-runs/{run.pk}/").status_code == 404
        assert otto.post(f"/api/judging/generation-runs/{run.pk}/cancel/").status_code == 404
        assert [g["name"] for g in otto.get("/api/judging/generators/").json()] == ["theirs"]
        assert otto.get("/api/judging/generation-runs/").json() == []

    def test_a_pairwise_study_is_a_400_that_says_why(self, rita, make_study, make_generator):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        response = rita.post(
            "/api/judging/generation-runs/",
            {"study": study.pk, "generators": [make_generator("alpha").pk]},
            content_type="application/json",
        )
        assert response.status_code == 400
        assert "bare prompts" in response.content.decode()


class TestGenerationSchema:
    def test_the_generation_endpoints_are_in_the_schema(self, tmp_path):
        from django.core.management import call_command

        out = tmp_path / "schema.yaml"
        call_command(
            "spectacular", "--urlconf", "tests.judging.schema_urls", "--validate", "--fail-on-warn", "--file", str(out)
        )
        text = out.read_text()
        for operation in (
            "generators_list",
            "generators_create",
            "generators_retrieve",
            "generators_update",
            "generation_runs_list",
            "generation_runs_create",
            "generation_runs_retrieve",
            "generation_runs_cancel",
            "generation_runs_resume",
        ):
            assert f"operationId: {operation}" in text
        assert "/api/judging/generation-runs/{id}/resume/" in text
