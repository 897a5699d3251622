"""Study files: one YAML or JSON file describing a study, its task and its items."""

import json
import textwrap

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Candidate, Item, Study
from annotation.study_files import (
    StudyFileError,
    load_study_file,
    read_study_file,
    study_file_data,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


JEST_YAML = """
    name: JEST funniness
    description: Experts rate setup/response pairs.
    protocol: jest
    task_type: ordinal
    config:
      points: [0, 1, 2, 3]
      labels: [Not funny, Somewhat funny, Funny, Very funny]
      language: en
    quota_per_item: 7
    item_order: shared_random
    attention_check_rate: 0.1
    attention_check_policy: flag
    attention_check_max_failures: 1
    min_seconds_per_item: 2.5
    consent_text: You agree to rate texts.
    instructions_text: Rate how funny a typical adult would find it.
    completion_code: JEST2025
    state: open
    judges:
      - name: gpt-judge
        base_url: http://127.0.0.1:8080/v1
        model: some-model
        api_key_env: FUNNYBONE_JUDGE_KEY_LAB
    items:
      - id: t1
        prompt: I bought a ceiling fan.
        text: It just stands there clapping.
        metadata: {source: invented, added: 2024-05-01}
      - id: check-1
        text: Rate this 3.
        gold: 3
        attention_check: true
"""


class TestLoadingYaml:
    def test_it_creates_the_study_settings_and_items(self, tmp_path, researcher):
        study = load_study_file(write(tmp_path, "jest.yaml", JEST_YAML), researcher)
        assert (study.name, study.protocol, study.task_type, study.owner) == (
            "JEST funniness",
            "jest",
            "ordinal",
            researcher,
        )
        assert study.config["language"] == "en"
        assert (study.quota_per_item, study.item_order, study.attention_check_rate) == (7, "shared_random", 0.1)
        assert (study.attention_check_max_failures, study.min_seconds_per_item) == (1, 2.5)
        assert (study.completion_code, study.state) == ("JEST2025", "open")
        first, check = study.items.order_by("position")
        assert first.metadata == {"source": "invented", "added": "2024-05-01"}
        assert (check.is_attention_check, check.gold) == (True, {"rating": 3})

    def test_read_study_file_keeps_the_judges_for_the_judging_app(self, tmp_path):
        data = read_study_file(write(tmp_path, "jest.yaml", JEST_YAML))
        assert data["judges"] == [
            {
                "name": "gpt-judge",
                "base_url": "http://127.0.0.1:8080/v1",
                "model": "some-model",
                "api_key_env": "FUNNYBONE_JUDGE_KEY_LAB",
            }
        ]

    def test_it_takes_items_from_a_csv_file_next_to_the_study_file(self, tmp_path, researcher):
        write(
            tmp_path,
            "items.csv",
            "id,candidate.a,candidate.a.model,candidate.b,candidate.b.model,gold\nh1,Joke one,m1,Joke two,m2,tie\n",
        )
        path = write(
            tmp_path,
            "rank.yaml",
            """
            name: HumorRank check
            task_type: pairwise
            config: {labels: [A, B, Tie], allow_tie: true}
            items_file: items.csv
        """,
        )
        study = load_study_file(path, researcher)
        item = study.items.get()
        assert item.gold == {"choice": "tie"}
        assert list(item.candidates.values_list("key", "provenance")) == [
            ("a", {"model": "m1"}),
            ("b", {"model": "m2"}),
        ]


class TestEachTaskType:
    """The scalar gold of each task type family becomes that type's value shape."""

    @pytest.mark.parametrize(
        ("task_type", "config", "item", "stored_gold"),
        [
            (
                "ordinal",
                {"points": [1, 2, 3, 4, 5], "labels": ["1", "2", "3", "4", "5"]},
                {"text": "x", "gold": 5},
                {"rating": 5},
            ),
            (
                "binary",
                {
                    "options": [{"value": "good", "label": "Fully explains"}, {"value": "bad", "label": "Does not"}],
                    "positive": "good",
                },
                {"text": "x", "gold": "bad"},
                {"label": "bad"},
            ),
            (
                "pairwise",
                {"labels": ["Explanation 1", "Explanation 2", "Equally good"], "allow_tie": True},
                {
                    "text": "joke",
                    "gold": "human",
                    "candidates": [{"key": "llm", "text": "e1"}, {"key": "human", "text": "e2"}],
                },
                {"choice": "human"},
            ),
            (
                "pick_one",
                {},
                {
                    "prompt": "p",
                    "gold": "c2",
                    "candidates": [{"key": "c1", "text": "a"}, {"key": "c2", "text": "b"}, {"key": "c3", "text": "c"}],
                },
                {"choice": "c2"},
            ),
            (
                "vote_allocation",
                {"max_votes": 3, "allow_repeat": True},
                {
                    "prompt": "p",
                    "gold": ["r1", "r1", "r2"],
                    "candidates": [{"key": "r1", "text": "a"}, {"key": "r2", "text": "b"}],
                },
                {"votes": {"r1": 2, "r2": 1}},
            ),
            ("micro_edit", {}, {"text": "Mayor opens new <bridge/>", "gold": "banana"}, {"replacement": "banana"}),
            (
                "explanation",
                {},
                {"text": "A pun", "gold": "It plays on two meanings."},
                {"text": "It plays on two meanings."},
            ),
        ],
    )
    def test_it_loads_a_json_study_of_each_task_type(self, tmp_path, researcher, task_type, config, item, stored_gold):
        data = {"name": f"{task_type} study", "task_type": task_type, "config": config, "items": [{"id": "i1", **item}]}
        path = tmp_path / "study.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        study = load_study_file(path, researcher)
        assert study.task_type == task_type
        assert study.items.get().gold == stored_gold


class TestRejectingStudyFiles:
    def problems(self, tmp_path, researcher, text, name="study.yaml"):
        with pytest.raises(StudyFileError) as caught:
            load_study_file(write(tmp_path, name, text), researcher)
        assert Study.objects.count() == 0
        assert Item.objects.count() == 0
        assert Candidate.objects.count() == 0
        return caught.value.problems

    def test_a_misspelt_top_level_key_with_a_suggestion(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Typo
            task_type: ordinal
            quota_per_itme: 3
            items: [{id: a, text: x}]
        """,
        )
        assert problems[0].startswith("Unknown key 'quota_per_itme' (did you mean 'quota_per_item'?)")

    def test_a_misspelt_item_key_and_candidate_key_named_by_item(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Typos
            task_type: pairwise
            items:
              - id: p1
                promt: Cats
                candidates:
                  - {key: a, text: one}
                  - {key: b, txt: two}
        """,
        )
        assert "Item 1: unknown key 'promt' (did you mean 'prompt'?); allowed keys" in problems[0]
        assert any(
            p.startswith("Item 1 (id 'p1'), candidate 2: unknown key 'txt' (did you mean 'text'?)") for p in problems
        )

    def test_a_misspelt_config_setting(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Config typo
            task_type: vote_allocation
            config: {max_vote: 3}
            items: [{id: a, prompt: p, candidates: [{key: x, text: 1}, {key: y, text: 2}]}]
        """,
        )
        assert problems == [
            "config: unknown setting 'max_vote' (did you mean 'max_votes'?) for vote_allocation; "
            "known settings: max_votes, allow_repeat, language, question, source_study."
        ]

    def test_an_invalid_config_value(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Bad scale
            task_type: ordinal
            config: {points: [0, 1, 2], labels: [a, b]}
        """,
        )
        assert problems == ["config: A scale needs one label per point."]

    def test_an_unknown_task_type(self, tmp_path, researcher):
        problems = self.problems(tmp_path, researcher, "name: X\ntask_type: ranking\n")
        assert problems[0].startswith("task_type: Unknown task type 'ranking'")

    def test_settings_of_the_wrong_type_or_range_all_at_once(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Ranges
            task_type: ordinal
            quota_per_item: 0
            attention_check_rate: 1.5
            item_order: alphabetical
            completion_redirect_url: not a url
            state: running
        """,
        )
        assert "quota_per_item: Must be at least 1: each item needs at least one judgment." in problems
        assert any(
            p.startswith("attention_check_rate: Must be a share from 0 up to (not including) 1") for p in problems
        )
        assert "item_order: Must be one of random_per_rater, shared_random, as_listed." in problems
        assert "completion_redirect_url: Must be a web address starting with http:// or https://." in problems
        assert "state: must be one of draft, open, closed, not 'running'." in problems

    def test_an_unquoted_yes_read_by_yaml_as_a_boolean_gold(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Booleans
            task_type: binary
            config:
              options: [{value: "yes", label: Funny}, {value: "no", label: Not funny}]
              positive: "yes"
            items: [{id: a, text: x, gold: yes}]
        """,
        )
        assert problems == [
            "Item 1 (id 'a'): gold answer: true was read as a yes/no value; quote it in YAML (gold: \"yes\")."
        ]

    def test_gold_outside_the_labels_and_duplicate_ids(self, tmp_path, researcher):
        problems = self.problems(
            tmp_path,
            researcher,
            """
            name: Gold
            task_type: binary
            items:
              - {id: a, text: x, gold: hilarious}
              - {id: a, text: y}
        """,
        )
        assert problems == [
            "Item 1 (id 'a'): gold answer: Unknown label 'hilarious'; expected one of funny, not_funny.",
            "Item 2 (id 'a'): duplicate item id 'a'; Item 1 (id 'a') already uses it.",
        ]

    def test_opening_a_study_without_items(self, tmp_path, researcher):
        problems = self.problems(tmp_path, researcher, "name: Empty\ntask_type: ordinal\nstate: open\n")
        assert problems == ["state: a study needs items before it can be open."]

    def test_a_missing_items_file_and_a_broken_one(self, tmp_path, researcher):
        problems = self.problems(tmp_path, researcher, "name: F\ntask_type: ordinal\nitems_file: nowhere.csv\n")
        assert problems == ["items_file: nowhere.csv not found (paths are relative to the study file)."]
        write(tmp_path, "bad.csv", "id,text,gold\nj1,x,9\n")
        problems = self.problems(tmp_path, researcher, "name: F\ntask_type: ordinal\nitems_file: bad.csv\n")
        assert problems == ["items_file bad.csv: Row 2: gold answer: The rating 9 is outside the scale (0, 1, 2, 3)."]

    def test_a_file_that_is_not_yaml_or_not_a_mapping(self, tmp_path, researcher):
        problems = self.problems(tmp_path, researcher, "name: [unclosed\n")
        assert problems[0].startswith("study.yaml, line 2: not valid YAML")
        problems = self.problems(tmp_path, researcher, "- just\n- a list\n")
        assert problems == ["study.yaml: the file must hold one study, written as name: value pairs."]

    def test_invalid_json(self, tmp_path, researcher):
        problems = self.problems(tmp_path, researcher, '{"name": "x",}', name="study.json")
        assert problems[0].startswith("study.json, line 1: not valid JSON")


class TestReplacing:
    def test_loading_the_same_name_twice_needs_replace(self, tmp_path, researcher):
        path = write(tmp_path, "s.yaml", "name: Same\ntask_type: ordinal\nitems: [{id: a, text: x}]\n")
        load_study_file(path, researcher)
        with pytest.raises(StudyFileError) as caught:
            load_study_file(path, researcher)
        assert "use --replace" in caught.value.problems[0]
        assert Study.objects.count() == 1

    def test_replace_updates_settings_and_swaps_items_keeping_the_entry_link(self, tmp_path, researcher):
        first = load_study_file(
            write(tmp_path, "s.yaml", "name: Same\ntask_type: ordinal\nitems: [{id: a, text: x}]\n"), researcher
        )
        path = write(
            tmp_path, "s2.yaml", "name: Same\ntask_type: ordinal\nquota_per_item: 5\nitems: [{id: b, text: y}]\n"
        )
        again = load_study_file(path, researcher, replace=True)
        assert again.pk == first.pk and again.entry_token == first.entry_token
        assert again.quota_per_item == 5
        assert list(again.items.values_list("external_id", flat=True)) == ["b"]

    def test_replace_refuses_a_study_with_judgments(self, tmp_path, researcher, make_study):
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker
        from annotation.services.judgments import judgment_submit

        study = make_study(name="Judged")
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        assignment = next_assignment(enrollment=enrollment).assignment
        judgment_submit(assignment=assignment, rater=enrollment.rater, value={"rating": 1})
        path = write(tmp_path, "s.yaml", "name: Judged\ntask_type: ordinal\nitems: [{id: z, text: x}]\n")
        with pytest.raises(StudyFileError) as caught:
            load_study_file(path, researcher, replace=True)
        assert caught.value.problems == ["name: the study 'Judged' already has judgments; it cannot be replaced."]
        assert study.items.count() == 4


class TestWritingAStudyFileBack:
    def test_a_dumped_study_loads_again_unchanged(self, tmp_path, researcher, other_researcher):
        original = load_study_file(write(tmp_path, "jest.yaml", JEST_YAML), researcher)
        dumped = tmp_path / "dumped.yaml"
        dumped.write_text(yaml.safe_dump(study_file_data(original)), encoding="utf-8")
        copy = load_study_file(dumped, other_researcher)
        assert study_file_data(copy) == study_file_data(original)


class TestLoadStudyCommand:
    def test_it_loads_a_file_for_the_named_owner(self, tmp_path, researcher, capsys):
        call_command("load_study", str(write(tmp_path, "jest.yaml", JEST_YAML)), owner="rita")
        assert Study.objects.get().owner == researcher
        assert "Loaded study 'JEST funniness'" in capsys.readouterr().out

    def test_it_lists_every_problem_and_fails(self, tmp_path, researcher, capsys):
        path = write(
            tmp_path, "bad.yaml", "name: Bad\ntask_type: ordinal\nquota: 3\nitems: [{id: a, text: x, gold: 8}]\n"
        )
        with pytest.raises(CommandError, match="2 problems; nothing was written"):
            call_command("load_study", str(path), owner="rita")
        err = capsys.readouterr().err
        assert "Unknown key 'quota'" in err
        assert "Item 1 (id 'a'): gold answer: The rating 8 is outside the scale" in err
        assert Study.objects.count() == 0

    def test_check_only_writes_nothing(self, tmp_path, researcher, capsys):
        call_command("load_study", str(write(tmp_path, "jest.yaml", JEST_YAML)), owner="rita", check=True)
        assert Study.objects.count() == 0
        assert "the study file is valid" in capsys.readouterr().out

    def test_a_judge_naming_an_undeclared_key_variable_is_a_clear_error_not_a_traceback(
        self, tmp_path, researcher, settings, capsys
    ):
        settings.FUNNYBONE_JUDGE_KEY_ENVS = []
        path = write(tmp_path, "jest.yaml", JEST_YAML.replace("FUNNYBONE_JUDGE_KEY_LAB", "SECRET_KEY"))
        with pytest.raises(CommandError, match="1 problem; nothing was written"):
            call_command("load_study", str(path), owner="rita")
        err = capsys.readouterr().err
        assert "judges[1]: " in err and "SECRET_KEY" in err
        assert Study.objects.count() == 0

    def test_it_needs_an_owner_when_there_is_no_single_superuser(self, tmp_path, researcher):
        with pytest.raises(CommandError, match="--owner"):
            call_command("load_study", str(write(tmp_path, "jest.yaml", JEST_YAML)))

    def test_it_names_an_unknown_owner(self, tmp_path, researcher):
        with pytest.raises(CommandError, match="no user named 'nobody'"):
            call_command("load_study", str(write(tmp_path, "jest.yaml", JEST_YAML)), owner="nobody")


class TestTheDocumentedExamples:
    """The examples in docs/study-files.md must keep working as written."""

    def blocks(self, language):
        from pathlib import Path

        text = (Path(__file__).resolve().parents[2] / "docs" / "study-files.md").read_text(encoding="utf-8")
        return [block.split("```", 1)[0] for block in text.split(f"```{language}\n")[1:]]

    def test_the_complete_yaml_example_loads(self, tmp_path, researcher):
        example = next(b for b in self.blocks("yaml") if b.startswith("# studies/jest.yaml"))
        study = load_study_file(write(tmp_path, "jest.yaml", example), researcher)
        assert (study.name, study.state, study.items.count()) == ("JEST funniness ratings", "open", 3)

    def test_the_csv_example_imports_into_a_pairwise_study(self, tmp_path, researcher):
        write(tmp_path, "items.csv", self.blocks("csv")[0])
        path = write(tmp_path, "s.yaml", "name: Headlines\ntask_type: pairwise\nitems_file: items.csv\n")
        study = load_study_file(path, researcher)
        assert study.items.get(external_id="h002").gold == {"choice": "tie"}
