"""The judge pages and the judging API: creating judges, starting and watching runs, ownership."""

import pytest
from django.test import Client

from judging.models import JudgeConfig, JudgeRun, PromptTemplate
from judging.services.judges import ensure_baseline_judges
from judging.services.runs import process_run, run_create
from judging.services.templates import ensure_builtin_templates

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def otto(other_researcher):
    client = Client()
    client.force_login(other_researcher)
    return client


class TestJudgePages:
    def test_a_researcher_creates_an_llm_judge_with_a_write_only_key(self, rita, researcher):
        ensure_builtin_templates()
        preference = PromptTemplate.objects.get(owner=None, name="explanation-preference")
        response = rita.post(
            "/judging/judges/",
            {
                "name": "gpt critic",
                "base_url": "http://127.0.0.1:8080/v1",
                "model": "some-model",
                "api_key": "sk-typed-in-the-form-123",
                "temperature": "0.1",
                "max_tokens": "300",
                "structured_output": "on",
                "timeout_seconds": "30",
                "max_retries": "3",
                "backoff_seconds": "1",
                "concurrency": "4",
                "rate_limit_per_minute": "0",
                "trials": "1",
                "input_cost_per_million": "0",
                "output_cost_per_million": "0",
                "template_pairwise": str(preference.pk),
            },
        )
        assert response.status_code == 302
        judge = JudgeConfig.objects.get(owner=researcher, name="gpt critic")
        assert judge.rater.kind == "llm"
        assert judge.templates == {"pairwise": {"name": "explanation-preference", "version": 1}}
        assert judge.has_api_key
        page = rita.get(f"/judging/judges/{judge.pk}/").content.decode()
        assert "sk-typed-in-the-form-123" not in page
        assert 'type="password"' in page

    def test_an_llm_judge_without_a_model_is_refused(self, rita):
        response = rita.post(
            "/judging/judges/",
            {
                "name": "incomplete",
                "max_tokens": "10",
                "timeout_seconds": "5",
                "max_retries": "3",
                "backoff_seconds": "1",
                "concurrency": "1",
                "rate_limit_per_minute": "0",
                "trials": "1",
                "temperature": "0",
                "input_cost_per_million": "0",
                "output_cost_per_million": "0",
            },
        )
        assert response.status_code == 200
        assert "needs a base URL and a model" in response.content.decode()

    def test_the_baseline_button_adds_three_judges(self, rita, researcher):
        rita.post("/judging/judges/baselines/")
        assert JudgeConfig.objects.filter(owner=researcher).exclude(baseline="").count() == 3

    def test_someone_elses_judge_is_not_found(self, otto, researcher):
        judge = ensure_baseline_judges(owner=researcher)[0]
        assert otto.get(f"/judging/judges/{judge.pk}/").status_code == 404

    def test_editing_a_template_saves_a_new_version(self, rita):
        rita.get("/judging/templates/")
        response = rita.post(
            "/judging/templates/funny-or-not/",
            {"description": "mine", "system_text": "", "user_text": "Funny? {{ text }} Answer {{ label_values }}."},
        )
        assert response.status_code == 302
        assert list(PromptTemplate.objects.filter(name="funny-or-not").values_list("version", flat=True)) == [2, 1]


class TestRunPages:
    def test_starting_a_run_from_a_study_and_watching_it(self, rita, researcher, make_study):
        study = make_study(n_items=3)
        judge = ensure_baseline_judges(owner=researcher)[0]
        response = rita.post(f"/judging/studies/{study.pk}/runs/", {"judge": judge.pk, "trials": "2"})
        run = JudgeRun.objects.get(study=study)
        assert response.status_code == 302
        assert response["Location"] == f"/judging/runs/{run.pk}/"
        page = rita.get(f"/judging/runs/{run.pk}/").content.decode()
        assert 'hx-trigger="every 1s"' in page
        assert "0 of 6 units finished" in page
        process_run(run_id=run.pk)
        partial = rita.get(f"/judging/runs/{run.pk}/", headers={"HX-Request": "true"}).content.decode()
        assert "6 of 6 units finished" in partial
        assert "every 1s" not in partial
        assert "<html" not in partial

    def test_cancelling_a_run(self, rita, researcher, make_study):
        study = make_study(n_items=2)
        run = run_create(study=study, judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)
        rita.post(f"/judging/runs/{run.pk}/cancel/")
        run.refresh_from_db()
        assert run.status == "cancelled"
        assert "Resume the run" in rita.get(f"/judging/runs/{run.pk}/").content.decode()

    def test_someone_elses_run_is_not_found(self, otto, researcher, make_study):
        run = run_create(study=make_study(n_items=1), judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)
        assert otto.get(f"/judging/runs/{run.pk}/").status_code == 404
        assert otto.post(f"/judging/runs/{run.pk}/cancel/").status_code == 404


class TestApi:
    def test_judges_crud_without_exposing_keys(self, rita):
        created = rita.post(
            "/api/judging/judges/",
            {"name": "api judge", "base_url": "http://127.0.0.1:8080/v1", "model": "m", "api_key": "sk-api-secret-999"},
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        body = created.json()
        assert "sk-api-secret-999" not in created.content.decode()
        assert body["has_api_key"] is True
        patched = rita.patch(
            f"/api/judging/judges/{body['id']}/", {"temperature": 0.7}, content_type="application/json"
        )
        assert patched.json()["temperature"] == 0.7
        assert patched.json()["has_api_key"] is True
        assert rita.delete(f"/api/judging/judges/{body['id']}/").status_code == 204

    def test_runs_create_list_progress_and_cancel(self, rita, researcher, make_study):
        study = make_study(n_items=4)
        judge = ensure_baseline_judges(owner=researcher)[2]
        created = rita.post(
            "/api/judging/runs/", {"study": study.pk, "judge": judge.pk}, content_type="application/json"
        )
        assert created.status_code == 201
        run_id = created.json()["id"]
        assert created.json()["progress"]["total"] == 4
        process_run(run_id=run_id)
        detail = rita.get(f"/api/judging/runs/{run_id}/").json()
        assert detail["status"] == "done"
        assert (detail["progress"]["judged"], detail["progress"]["finished"]) == (4, 4)
        assert [r["id"] for r in rita.get(f"/api/judging/runs/?study={study.pk}").json()] == [run_id]
        cancelled = rita.post(f"/api/judging/runs/{run_id}/cancel/").json()
        assert cancelled["status"] == "done"

    def test_a_judge_with_judgments_cannot_be_deleted(self, rita, researcher, make_study):
        judge = ensure_baseline_judges(owner=researcher)[0]
        run = run_create(study=make_study(n_items=1), judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        assert rita.delete(f"/api/judging/judges/{judge.pk}/").status_code == 409

    def test_other_researchers_studies_and_judges_are_not_found(self, otto, researcher, make_study):
        study = make_study(n_items=1)
        judge = ensure_baseline_judges(owner=researcher)[0]
        response = otto.post(
            "/api/judging/runs/", {"study": study.pk, "judge": judge.pk}, content_type="application/json"
        )
        assert response.status_code == 404
        assert otto.get("/api/judging/judges/").json() == []

    def test_templates_can_be_listed_and_versioned(self, rita):
        names = {t["name"] for t in rita.get("/api/judging/templates/").json()}
        assert {"humorrank-pairwise", "explanation-quality-stepwise", "funniness-digit"} <= names
        created = rita.post(
            "/api/judging/templates/",
            {"name": "humorrank-pairwise", "task_type": "pairwise", "user_text": "A: {{ a }} B: {{ b }}"},
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        assert created.json()["version"] == 2


class TestSchema:
    def test_the_judging_api_is_in_the_schema_without_warnings(self, tmp_path):
        from django.core.management import call_command

        out = tmp_path / "schema.yaml"
        call_command(
            "spectacular", "--urlconf", "tests.judging.schema_urls", "--validate", "--fail-on-warn", "--file", str(out)
        )
        text = out.read_text()
        for operation in ("judges_create", "judge_runs_create", "judge_runs_cancel", "prompt_templates_create"):
            assert f"operationId: {operation}" in text
        assert "api_key" in text  # accepted on input …
        assert "writeOnly: true" in text  # … and marked write-only
