"""`manage.py judge` and the judges section of a study file."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment
from judging.models import JudgeConfig, JudgeRun
from judging.study_file import judge_entry_problems, judges_dump, judges_load

pytestmark = pytest.mark.django_db


def judge_cli(*args):
    out, err = StringIO(), StringIO()
    call_command("judge", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


class TestJudgeCommand:
    def test_a_baseline_run_prints_the_summary(self, make_study):
        study = make_study(n_items=3)
        out, err = judge_cli(study.slug, "--baseline", "random", "--trials", "2", "--inline")
        summary = json.loads(out)
        assert (summary["judged"], summary["failed"], summary["unparseable"], summary["units"]) == (6, 0, 0, 6)
        assert summary["tokens"] == 0
        assert summary["status"] == "done"
        assert "6/6 units" in err

    def test_an_llm_judge_is_created_once_and_reused(self, make_study, fault_server):
        study = make_study(n_items=2)
        url = fault_server.url("garbage", "ok")
        first, err = judge_cli(study.slug, "--base-url", url, "--model", "m", "--inline", "--temperature", "0.3")
        assert "Created judge" in err
        second, err = judge_cli(study.slug, "--base-url", url, "--model", "m", "--inline")
        assert "Reusing judge" in err
        assert JudgeConfig.objects.filter(base_url=url).count() == 1
        assert json.loads(first)["judged"] == 2
        # The second run asked nothing: it says so instead of repeating the first run's counts.
        assert (json.loads(second)["judged"], json.loads(second)["already"], json.loads(second)["calls"]) == (0, 2, 0)
        assert Judgment.objects.filter(study=study).count() == 2
        assert JudgeConfig.objects.get(base_url=url).temperature == 0.3

    def test_two_names_on_one_model_are_two_judges_each_with_its_own_prompt(self, make_study, fault_server):
        study = make_study(n_items=2)
        url = fault_server.url("ok")
        judge_cli(study.slug, "--base-url", url, "--model", "m", "--name", "direct", "--inline")
        judge_cli(
            study.slug,
            "--base-url",
            url,
            "--model",
            "m",
            "--name",
            "stepwise",
            "--template",
            "funniness-digit",
            "--inline",
        )
        judges = {j.name: j for j in JudgeConfig.objects.filter(base_url=url)}
        assert sorted(judges) == ["direct", "stepwise"]
        assert judges["stepwise"].templates == {"ordinal": {"name": "funniness-digit", "version": 1}}
        assert not judges["direct"].templates
        _, err = judge_cli(study.slug, "--base-url", url, "--model", "m", "--name", "direct", "--inline")
        assert "Reusing judge 'direct'" in err

    def test_another_model_under_a_judges_name_is_its_next_version(self, make_study, fault_server):
        study = make_study(n_items=1)
        judge_cli(study.slug, "--base-url", fault_server.url("ok"), "--model", "m", "--name", "mine", "--inline")
        out, _ = judge_cli(
            study.slug, "--base-url", fault_server.url("ok"), "--model", "other", "--name", "mine", "--inline"
        )
        versions = list(JudgeConfig.objects.filter(name="mine").order_by("version"))
        assert [(v.version, v.model, v.is_current) for v in versions] == [(1, "m", False), (2, "other", True)]
        assert json.loads(out)["judged"] == 1
        assert Judgment.objects.filter(study=study).count() == 2

    def test_both_orders_reports_position_consistency(self, make_study, fault_server):
        study = make_study(task_type="pairwise", n_items=2, n_candidates=2)
        out, _ = judge_cli(
            study.slug, "--base-url", fault_server.url("ok"), "--model", "m", "--both-orders", "--inline"
        )
        summary = json.loads(out)
        assert summary["units"] == 4
        assert summary["position_consistency"] == 0.0

    def test_without_wait_it_only_queues(self, make_study):
        study = make_study(n_items=1)
        out, _ = judge_cli(study.slug, "--baseline", "length")
        assert out == ""
        assert JudgeRun.objects.get(study=study).status == "queued"

    def test_it_needs_a_model_or_a_baseline(self, make_study):
        with pytest.raises(CommandError, match="--base-url and --model"):
            judge_cli(make_study(n_items=1).slug)

    def test_an_unknown_study_is_an_error(self, db):
        with pytest.raises(CommandError, match="No study"):
            judge_cli("no-such-study", "--baseline", "random")


class TestStudyFileJudges:
    ENTRIES = [
        {"baseline": "random"},
        {
            "name": "local critic",
            "base_url": "http://127.0.0.1:8080/v1",
            "model": "smollm2",
            "api_key_env": "LOCAL_KEY",
            "temperature": 0.1,
            "trials": 3,
            "both_orders": True,
            "templates": {"pairwise": "humorrank-pairwise"},
        },
    ]

    def test_loading_twice_updates_instead_of_duplicating(self, researcher):
        first = judges_load(owner=researcher, entries=self.ENTRIES)
        second = judges_load(owner=researcher, entries=[{**self.ENTRIES[1], "trials": 5}])
        assert second[0].pk == first[1].pk
        assert JudgeConfig.objects.get(pk=first[1].pk).trials == 5
        assert JudgeConfig.objects.filter(owner=researcher).count() == 2

    def test_dump_and_load_round_trip(self, researcher, other_researcher):
        judges = judges_load(owner=researcher, entries=self.ENTRIES)
        copies = judges_load(owner=other_researcher, entries=judges_dump(judges))
        assert [(c.name, c.baseline, c.model, c.trials, c.both_orders) for c in copies] == [
            (j.name, j.baseline, j.model, j.trials, j.both_orders) for j in judges
        ]

    def test_problems_are_named_per_entry(self):
        problems = judge_entry_problems(
            [{"model": "m"}, {"baseline": "coin"}, "text", {"base_url": "x", "model": "m", "colour": 1}]
        )
        assert problems == [
            "judges[1]: an LLM judge needs base_url and model (or give baseline:).",
            "judges[2]: baseline must be random, constant or length.",
            "judges[3]: must be a mapping of settings.",
            "judges[4]: unknown setting(s) colour.",
        ]


class TestStudyFileWithJudges:
    """The judges: section travels with annotation's study files (registered by the judging app)."""

    def _write(self, tmp_path, judges_yaml):
        path = tmp_path / "study.yaml"
        path.write_text(
            "name: Judged study\n"
            "task_type: ordinal\n"
            "items:\n"
            "  - {id: a, text: A joke}\n"
            "  - {id: b, text: Another joke}\n" + judges_yaml,
            encoding="utf-8",
        )
        return path

    def test_load_study_creates_the_judges_it_names(self, researcher, tmp_path):
        from annotation.study_files import load_study_file
        from judging.models import JudgeConfig

        path = self._write(
            tmp_path,
            "judges:\n  - {baseline: length}\n  - {name: local, base_url: 'http://127.0.0.1:9/v1', model: tiny}\n",
        )
        load_study_file(path, researcher)
        assert set(JudgeConfig.objects.filter(owner=researcher).values_list("name", flat=True)) >= {"local"}
        assert JudgeConfig.objects.filter(owner=researcher, baseline="length").exists()

    def test_a_key_in_the_file_is_refused_and_nothing_is_written(self, researcher, tmp_path):
        from annotation.models import Study
        from annotation.study_files import StudyFileError, load_study_file
        from judging.models import JudgeConfig

        path = self._write(
            tmp_path, "judges:\n  - {name: leaky, base_url: 'http://127.0.0.1:9/v1', model: m, api_key: sk-secret}\n"
        )
        with pytest.raises(StudyFileError) as excinfo:
            load_study_file(path, researcher)
        assert "api_key_env" in str(excinfo.value)
        assert "sk-secret" not in str(excinfo.value)
        assert not Study.objects.exists()
        assert not JudgeConfig.objects.filter(name="leaky").exists()

    def test_a_typo_in_a_top_level_key_is_still_caught(self, researcher, tmp_path):
        from annotation.study_files import StudyFileError, load_study_file

        path = self._write(tmp_path, "judgs: []\n")
        with pytest.raises(StudyFileError, match="judges"):
            load_study_file(path, researcher)
