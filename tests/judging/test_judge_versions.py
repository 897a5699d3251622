"""Judges are versioned by what produced their answers: a changed setting is judged afresh, never merged."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Judgment
from judging.models import JudgeConfig, JudgeRun
from judging.selectors import run_progress
from judging.services.judges import judge_update
from judging.services.runs import process_run, run_create
from ratings.alignment.study import study_judges
from ratings.selectors import analysable_judgments

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]


def judge_cli(*args):
    out, err = StringIO(), StringIO()
    call_command("judge", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


def judgments_of(judge: JudgeConfig):
    return Judgment.objects.filter(rater=judge.rater).order_by("item_id")


class TestTheCommandLine:
    def test_a_new_temperature_is_a_new_version_judged_afresh(self, make_study, fault_server):
        study = make_study(n_items=3)
        url = fault_server.url("ok")
        first, _ = judge_cli(study.slug, "--base-url", url, "--model", "m", "--name", "critic", "--inline")
        before = fault_server.requests
        second, err = judge_cli(
            study.slug, "--base-url", url, "--model", "m", "--name", "critic", "--temperature", "0.9", "--inline"
        )
        assert "as version 2" in err
        # The run called the endpoint for every item and reports only its own work.
        assert fault_server.requests - before == 3
        assert (second["judged"], second["already"], second["calls"], second["judge"]["version"]) == (3, 0, 3, 2)
        assert second["tokens"] > 0
        v1, v2 = JudgeConfig.objects.filter(name="critic").order_by("version")
        assert (v1.temperature, v1.is_current, v2.temperature, v2.is_current) == (0.1, False, 0.9, True)
        assert v1.rater_id != v2.rater_id and v2.previous_version_id == v1.pk
        # Each version's judgments carry the settings that produced them; the old ones are untouched.
        assert [j.provenance["judge"]["temperature"] for j in judgments_of(v1)] == [0.1, 0.1, 0.1]
        assert [j.provenance["judge"]["temperature"] for j in judgments_of(v2)] == [0.9, 0.9, 0.9]
        assert {j.provenance["run"] for j in judgments_of(v1)} == {first["run"]}

    def test_another_template_is_a_new_version_whose_answers_use_it(self, make_study, fault_server):
        study = make_study(task_type="binary", n_items=2)
        url = fault_server.url("ok")
        judge_cli(study.slug, "--base-url", url, "--model", "m", "--name", "critic", "--inline")
        summary, _ = judge_cli(
            study.slug, "--base-url", url, "--model", "m", "--name", "critic", "--template", "explanation-quality-stepwise",
            "--inline",
        )  # fmt: skip
        assert (summary["judged"], summary["already"]) == (2, 0)
        v1, v2 = JudgeConfig.objects.filter(name="critic").order_by("version")
        assert v2.templates == {"binary": {"name": "explanation-quality-stepwise", "version": 1}}
        assert {j.provenance["template"]["name"] for j in judgments_of(v2)} == {"explanation-quality-stepwise"}
        assert {j.provenance["template"]["name"] for j in judgments_of(v1)} == {"funny-or-not"}
        # Naming the same template again changes nothing: the run finds every unit already judged.
        again, err = judge_cli(
            study.slug, "--base-url", url, "--model", "m", "--name", "critic", "--template", "explanation-quality-stepwise",
            "--inline",
        )  # fmt: skip
        assert "(version 2)" in err
        assert (again["judged"], again["already"], again["calls"], again["tokens"]) == (0, 2, 0, 0)
        assert JudgeConfig.objects.filter(name="critic").count() == 2

    def test_more_trials_make_a_new_version(self, make_study, fault_server):
        study = make_study(n_items=2)
        url = fault_server.url("ok")
        judge_cli(study.slug, "--base-url", url, "--model", "m", "--inline")
        summary, _ = judge_cli(study.slug, "--base-url", url, "--model", "m", "--trials", "2", "--inline")
        assert (summary["units"], summary["judged"], summary["already"], summary["judge"]["version"]) == (4, 4, 0, 2)

    def test_settings_that_do_not_shape_answers_change_in_place(self, make_study, fault_server):
        study = make_study(n_items=2)
        url = fault_server.url("ok")
        judge_cli(study.slug, "--base-url", url, "--model", "m", "--inline")
        summary, _ = judge_cli(
            study.slug, "--base-url", url, "--model", "m", "--concurrency", "2", "--timeout", "5", "--inline"
        )
        judge = JudgeConfig.objects.get(base_url=url)
        assert (judge.version, judge.concurrency, judge.timeout_seconds) == (1, 2, 5.0)
        assert (summary["judged"], summary["already"]) == (0, 2)


class TestTheServices:
    def test_a_judge_that_never_ran_changes_in_place(self, make_llm_judge):
        judge = make_llm_judge("ok")
        pk = judge.pk
        judge_update(judge=judge, temperature=0.7)
        assert (judge.pk, judge.version, JudgeConfig.objects.count()) == (pk, 1, 1)

    def test_an_older_version_cannot_be_changed(self, make_llm_judge, make_study):
        judge = make_llm_judge("ok")
        process_run(run_id=run_create(study=make_study(n_items=1), judge=judge, enqueue=False).pk)
        old = JudgeConfig.objects.get(pk=judge.pk)
        judge_update(judge=judge, temperature=0.7)
        old.refresh_from_db()
        with pytest.raises(Exception, match="version 1"):
            judge_update(judge=old, temperature=0.3)

    def test_renaming_renames_every_version_and_their_raters(self, make_llm_judge, make_study):
        judge = make_llm_judge("ok", name="first")
        process_run(run_id=run_create(study=make_study(n_items=1), judge=judge, enqueue=False).pk)
        judge_update(judge=judge, temperature=0.7)
        judge_update(judge=judge, name="second")
        assert sorted(JudgeConfig.objects.values_list("name", "version", "rater__name")) == [
            ("second", 1, "second"),
            ("second", 2, "second v2"),
        ]

    def test_alignment_sees_each_version_as_its_own_rater(self, make_llm_judge, make_study):
        study = make_study(n_items=3)
        judge = make_llm_judge("ok")
        process_run(run_id=run_create(study=study, judge=judge, enqueue=False).pk)
        v1_rater = judge.rater_id
        judge_update(judge=judge, temperature=0.8)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        assert run_progress(run=run).judged == 3
        raters = {info.id: info for info in study_judges(study=study)}
        assert set(raters) == {v1_rater, judge.rater_id}
        for rater_id in raters:
            assert analysable_judgments(study=study, group="judges", rater_ids=[rater_id]).count() == 3


class TestThePagesAndTheApi:
    FORM = {
        "name": "critic",
        "base_url": "",
        "model": "m",
        "temperature": "0.1",
        "max_tokens": "512",
        "structured_output": "on",
        "timeout_seconds": "2",
        "max_retries": "1",
        "backoff_seconds": "0.05",
        "concurrency": "2",
        "rate_limit_per_minute": "0",
        "trials": "1",
        "seed": "0",
        "input_cost_per_million": "0",
        "output_cost_per_million": "0",
    }

    def test_the_form_makes_a_version_and_the_page_lists_both_with_their_counts(
        self, rita, make_study, make_llm_judge, fault_server
    ):
        study = make_study(n_items=2)
        judge = make_llm_judge("ok", name="critic")
        process_run(run_id=run_create(study=study, judge=judge, enqueue=False).pk)
        response = rita.post(
            f"/judging/judges/{judge.pk}/", {**self.FORM, "base_url": judge.base_url, "temperature": "0.6"}
        )
        v2 = JudgeConfig.objects.get(name="critic", version=2)
        assert response.status_code == 302 and response["Location"] == f"/judging/judges/{v2.pk}/"
        assert v2.temperature == 0.6
        # Judging with the new version from the study's page: its run is the new version's.
        response = rita.post(f"/judging/studies/{study.pk}/runs/", {"judge": v2.pk})
        run = JudgeRun.objects.get(pk=int(response["Location"].rstrip("/").split("/")[-1]))
        assert run.judge_id == v2.pk
        process_run(run_id=run.pk)
        page = rita.get(f"/judging/judges/{v2.pk}/").content.decode()
        table = page[page.index('id="judge-versions"') : page.index("</table>", page.index('id="judge-versions"'))]
        assert "v2</a> (current)" in table and "v1</a>" in table
        assert table.count("<td>2</td>") >= 2  # each version judged both items
        old_page = rita.get(f"/judging/judges/{judge.pk}/").content.decode()
        assert "kept as it was" in old_page and '<form method="post" action="/judging/judges/' not in old_page
        # Only current versions are offered for new runs.
        runs_page = rita.get(f"/judging/studies/{study.pk}/runs/").content.decode()
        assert f'value="{v2.pk}"' in runs_page and f'value="{judge.pk}"' not in runs_page

    def test_the_api_answers_a_change_with_the_new_version(self, rita, make_study, make_llm_judge):
        study = make_study(n_items=1)
        judge = make_llm_judge("ok", name="critic")
        process_run(run_id=run_create(study=study, judge=judge, enqueue=False).pk)
        response = rita.patch(f"/api/judging/judges/{judge.pk}/", {"temperature": 1.2}, content_type="application/json")
        body = response.json()
        assert response.status_code == 200
        assert (body["version"], body["previous_version"], body["is_current"], body["temperature"]) == (
            2,
            judge.pk,
            True,
            1.2,
        )
        assert body["id"] != judge.pk
        listed = rita.get("/api/judging/judges/").json()
        assert [(j["name"], j["version"]) for j in listed] == [("critic", 2)]
        old = rita.get(f"/api/judging/judges/{judge.pk}/").json()
        assert (old["version"], old["is_current"], old["temperature"]) == (1, False, 0.1)
        refused = rita.patch(f"/api/judging/judges/{judge.pk}/", {"seed": 3}, content_type="application/json")
        assert refused.status_code == 400 and "version 1" in str(refused.json())
        # A run asking for other trials goes through the same service: version 2 had not run, so it is
        # changed in place; once it has run, other trials make version 3.
        created = rita.post(
            "/api/judging/runs/", {"study": study.pk, "judge": body["id"], "trials": 2}, content_type="application/json"
        ).json()
        assert (created["judge"], created["judge_version"]) == (body["id"], 2)
        process_run(run_id=created["id"])
        again = rita.post(
            "/api/judging/runs/", {"study": study.pk, "judge": body["id"], "trials": 3}, content_type="application/json"
        ).json()
        assert again["judge_version"] == 3 and again["judge"] != body["id"]
