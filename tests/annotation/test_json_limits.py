"""Deep, huge or bomb-shaped JSON and YAML: a clear message naming the place, never a 500 or minutes of CPU."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.json_limits import DataTooComplex, LimitPassed, load_json, load_yaml
from annotation.models import Item, Study
from annotation.study_files import StudyFileError, load_study_file

DEEP = "[" * 50_000 + "]" * 50_000
HUGE_NUMBER = "9" * 5000


def billion_laughs(levels: int = 9) -> str:
    """Nine lists of nine aliases, each to the list before: a few hundred bytes standing for 9**9 values."""
    lines = ["    lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels):
        lines.append(f"    lol{n}: &lol{n} [" + ", ".join([f"*lol{n - 1}"] * 9) + "]")
    return "\n".join(lines)


def study_yaml(metadata_block: str) -> str:
    return f"name: bomb\ntask_type: ordinal\nitems:\n  - id: a\n    text: A joke\n    metadata:\n{metadata_block}\n"


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def post_json(api, url: str, body: str):
    return api.post(url, data=body, content_type="application/json")


class TestTheParsers:
    def test_deep_json_is_refused_without_a_recursion_error(self):
        with pytest.raises(DataTooComplex, match="Nested more than 32 levels"):
            load_json(DEEP)

    def test_a_long_integer_is_named_by_its_path(self):
        with pytest.raises(DataTooComplex) as caught:
            load_json('{"items": [{"metadata": {"n": ' + HUGE_NUMBER + "}}]}")
        assert caught.value.path == "items[0].metadata.n"
        assert "a number with 5,000 digits; numbers may have at most 30 digits" in str(caught.value)

    def test_a_yaml_alias_bomb_is_refused_while_loading(self):
        with pytest.raises(LimitPassed, match="more than 1,000,000 values"):
            load_yaml("m:\n" + billion_laughs())

    def test_a_yaml_alias_inside_its_own_value_is_refused(self):
        with pytest.raises(LimitPassed, match=r"the alias \*x is inside the value it names"):
            load_yaml("a: &x [1, *x]")

    def test_ordinary_anchors_and_merge_keys_still_work(self):
        assert load_yaml("base: &b {x: 1}\nitem:\n  <<: *b\n  y: 2\nmore: [*b, *b]\n") == {
            "base": {"x": 1},
            "item": {"x": 1, "y": 2},
            "more": [{"x": 1}, {"x": 1}],
        }

    def test_the_limits_follow_the_settings(self, settings):
        settings.FUNNYBONE_JSON_MAX_DEPTH = 3
        settings.FUNNYBONE_JSON_MAX_INT_DIGITS = 4
        assert load_json("[[[1234]]]") == [[[1234]]]
        with pytest.raises(DataTooComplex, match="nested more than 3 levels"):
            load_json("[[[[1]]]]")
        with pytest.raises(LimitPassed, match="at most 4 digits"):
            load_yaml("n: 12345")


@pytest.mark.django_db
class TestStudyFiles:
    def test_deep_json_is_a_problem_naming_the_file(self, tmp_path, researcher):
        path = tmp_path / "study.json"
        path.write_text('{"name": "deep", "task_type": "ordinal", "config": {"x": ' + DEEP + "}}")
        with pytest.raises(StudyFileError) as caught:
            load_study_file(path, researcher)
        assert caught.value.problems == ["study.json, config: nested more than 32 levels deep; flatten the data."]
        assert Study.objects.count() == 0

    def test_load_study_on_deep_json_prints_the_problem_not_a_recursion_error(self, tmp_path, researcher, capsys):
        path = tmp_path / "study.json"
        path.write_text('{"name": "deep", "task_type": "ordinal", "items": [{"id": "a", "metadata": ' + DEEP + "}]}")
        with pytest.raises(CommandError, match="1 problem; nothing was written"):
            call_command("load_study", str(path), "--owner", researcher.username)
        err = capsys.readouterr().err
        assert "study.json, items: nested more than 32 levels deep" in err
        assert "RecursionError" not in err

    def test_a_yaml_alias_bomb_in_item_metadata_is_refused_with_its_line(self, tmp_path, researcher):
        path = tmp_path / "study.yaml"
        path.write_text(study_yaml(billion_laughs()))
        with pytest.raises(StudyFileError) as caught:
            load_study_file(path, researcher)
        (problem,) = caught.value.problems
        assert problem.startswith("study.yaml, line 13: holds more than 1,000,000 values")
        assert Item.objects.count() == 0

    @pytest.mark.parametrize(
        ("name", "text", "problem"),
        [
            (
                "study.yaml",
                "name: big\ntask_type: ordinal\nquota_per_item: " + HUGE_NUMBER + "\n",
                "study.yaml, line 3: a number with 5,000 digits",
            ),
            (
                "study.json",
                '{"name": "big", "task_type": "ordinal", "quota_per_item": ' + HUGE_NUMBER + "}",
                "study.json, quota_per_item: a number with 5,000 digits",
            ),
        ],
    )
    def test_a_5000_digit_integer_is_a_problem_naming_where(self, tmp_path, researcher, name, text, problem):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(StudyFileError) as caught:
            load_study_file(path, researcher)
        assert caught.value.problems[0].startswith(problem)


@pytest.mark.django_db
class TestApi:
    def test_deep_config_is_a_400_naming_config(self, api):
        response = post_json(
            api, reverse("api:study_create"), '{"name": "x", "task_type": "ordinal", "config": ' + DEEP + "}"
        )
        assert response.status_code == 400
        assert "nested more than 32 levels" in response.json()["config"][0].lower()
        assert Study.objects.count() == 0

    def test_a_5000_digit_number_is_a_400_naming_the_field(self, api):
        body = '{"name": "x", "task_type": "ordinal", "quota_per_item": ' + HUGE_NUMBER + "}"
        response = post_json(api, reverse("api:study_create"), body)
        assert response.status_code == 400
        message = "A number with 5,000 digits; numbers may have at most 30 digits."
        assert response.json() == {"detail": f"quota_per_item: {message}", "quota_per_item": [message]}

    @pytest.mark.parametrize(
        ("metadata", "message"),
        [
            ('{"n": ' + HUGE_NUMBER + "}", "[0].metadata.n: a number with 5,000 digits"),
            ('{"deep": ' + "[" * 40 + "]" * 40 + "}", "nested more than 32 levels"),
        ],
    )
    def test_item_metadata_over_the_limits_is_a_400_naming_the_item(self, api, make_study, metadata, message):
        study = make_study(open_=False)
        body = '{"items": [{"id": "n1", "text": "A joke", "metadata": ' + metadata + "}]}"
        response = post_json(api, reverse("api:item_import", args=[study.pk]), body)
        assert response.status_code == 400
        assert message in response.json()["items"][0]
        assert not study.items.filter(external_id="n1").exists()

    def test_a_deep_config_sent_as_a_form_field_is_a_400(self, api):
        response = api.post(
            reverse("api:study_create"), {"name": "x", "task_type": "ordinal", "config": DEEP}, format="multipart"
        )
        assert response.status_code == 400
        assert "nested more than 32 levels" in response.json()["config"][0]

    def test_a_judge_with_a_5000_digit_setting_is_a_400_naming_it(self, api):
        body = '{"name": "j", "base_url": "http://127.0.0.1:9/v1", "model": "m", "max_tokens": ' + HUGE_NUMBER + "}"
        response = post_json(api, "/api/judging/judges/", body)
        assert response.status_code == 400
        assert list(response.json()) == ["detail", "max_tokens"]

    def test_a_deep_response_schema_is_a_400_naming_it(self, api):
        body = json.dumps({"name": "t", "task_type": "ordinal", "user_text": "{{ text }}"})[:-1]
        response = post_json(api, "/api/judging/templates/", body + ', "response_schema": ' + DEEP + "}")
        assert response.status_code == 400
        assert list(response.json()) == ["detail", "response_schema"]


@pytest.mark.django_db
class TestStudyPages:
    url = reverse("researcher:study_new")

    def form(self, **overrides):
        data = {
            "name": "Pairs",
            "task_type": "ordinal",
            "config": "",
            "quota_per_item": 3,
            "item_order": "random_per_rater",
            "attention_check_rate": 0,
            "attention_check_policy": "flag",
            "attention_check_max_failures": 0,
            "min_seconds_per_item": 0,
        }
        return {**data, **overrides}

    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            ({"config": '{"points": ' + DEEP + "}"}, "points: nested more than 32 levels deep"),
            ({"config": '{"points": [' + HUGE_NUMBER + "]}"}, "points[0]: a number with 5,000 digits"),
            ({"quota_per_item": HUGE_NUMBER}, "Must be a whole number."),
        ],
    )
    def test_the_new_study_form_explains_and_creates_nothing(self, client, researcher, overrides, message):
        client.force_login(researcher)
        response = client.post(self.url, self.form(**overrides))
        assert response.status_code == 400
        assert message in response.content.decode()
        assert Study.objects.count() == 0
