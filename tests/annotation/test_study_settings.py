"""One declaration per study setting: the page, the API, a study file and the service agree.

And the JSON Schema built from those declarations accepts the study files we
document and ship, and refuses a bad one where the loader would.
"""

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.demo.builder import demo_studies
from annotation.importers.items import CANDIDATE_KEYS, ITEM_KEYS
from annotation.models import Study
from annotation.protocols.humorrank import SOURCE_LINK
from annotation.rater_steps import RATER_STEP_KEYS
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from annotation.study_file_schema import study_file_schema
from annotation.study_files import STUDY_KEYS, StudyFileError, load_study_data, study_file_data
from annotation.study_settings import SETTINGS, study_settings_problems
from annotation.task_types import TASK_TYPES

DOCS = Path(__file__).resolve().parents[2] / "docs"

# The same bad value, and the one message every way in must give for it.
BAD_VALUES = [
    ("quota_per_item", 0, "Must be at least 1: each item needs at least one judgment."),
    (
        "attention_check_rate",
        1.5,
        "Must be a share from 0 up to (not including) 1, e.g. 0.1 for one item in ten.",
    ),
    ("item_order", "alphabetical", "Must be one of random_per_rater, shared_random, as_listed."),
    ("completion_redirect_url", "not a url", "Must be a web address starting with http:// or https://."),
    ("completion_code", "C" * 5000, "Must be at most 64 characters (this has 5,000)."),
    ("min_seconds_per_item", -2, "Must be at least 0."),
    (
        "allocation_min_worth",
        0,
        "Must be a share of the scale's range from 0.0001 up to (not including) 1, e.g. 0.005.",
    ),
]
IDS = [name for name, _, _ in BAD_VALUES]


def page_form(**overrides):
    data = {
        "name": "Settings",
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


class TestTheSameMessageEverywhere:
    @pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=IDS)
    def test_the_service_refuses_it_by_name(self, researcher, name, value, message):
        with pytest.raises(ValidationError) as caught:
            study_create(owner=researcher, name="Settings", task_type="ordinal", **{name: value})
        assert caught.value.message_dict == {name: [message]}
        assert Study.objects.count() == 0

    @pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=IDS)
    def test_the_study_page_shows_it_under_the_field(self, client, researcher, name, value, message):
        client.force_login(researcher)
        response = client.post(reverse("researcher:study_new"), page_form(**{name: value}))
        assert response.status_code == 400
        assert response.context["form"].errors == {name: [message]}
        assert Study.objects.count() == 0

    @pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=IDS)
    def test_the_api_answers_it_by_field(self, researcher, name, value, message):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
        body = {"name": "Settings", "task_type": "ordinal", name: value}
        response = api.post(reverse("api:study_create"), body, format="json")
        assert response.status_code == 400
        assert response.json() == {"detail": f"{name}: {message}", name: [message]}
        assert Study.objects.count() == 0

    @pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=IDS)
    def test_a_study_file_names_the_key(self, researcher, tmp_path, name, value, message):
        with pytest.raises(StudyFileError) as caught:
            load_study_data(
                {"name": "Settings", "task_type": "ordinal", name: value}, owner=researcher, base_dir=tmp_path
            )
        assert caught.value.problems == [f"{name}: {message}"]
        assert Study.objects.count() == 0

    def test_an_update_is_checked_the_same_way_as_a_create(self, researcher):
        study = study_create(owner=researcher, name="Settings", task_type="ordinal")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
        response = api.patch(reverse("api:study_update", args=[study.pk]), {"quota_per_item": 0}, format="json")
        message = "Must be at least 1: each item needs at least one judgment."
        assert response.json() == {"detail": f"quota_per_item: {message}", "quota_per_item": [message]}
        study.refresh_from_db()
        assert study.quota_per_item == 3

    def test_a_number_that_is_not_finite_is_refused_in_a_study_file(self, researcher, tmp_path):
        data = yaml.safe_load("name: X\ntask_type: ordinal\nmin_seconds_per_item: .nan\nattention_check_rate: .inf\n")
        with pytest.raises(StudyFileError) as caught:
            load_study_data(data, owner=researcher, base_dir=tmp_path)
        assert caught.value.problems == [
            "attention_check_rate: Must be a finite number.",
            "min_seconds_per_item: Must be a finite number.",
        ]

    def test_a_quota_beyond_the_database_column_is_refused_before_saving(self, researcher):
        assert study_settings_problems({"quota_per_item": 2**31}) == {"quota_per_item": ["Must be at most 2147483647."]}

    def test_good_values_pass_and_empty_optional_text_is_fine(self):
        assert (
            study_settings_problems(
                {
                    "quota_per_item": 1,
                    "per_rater_cap": None,
                    "attention_check_rate": 0.99,
                    "item_order": "as_listed",
                    "completion_redirect_url": "",
                    "description": "",
                    "completion_code": "ABC123",
                }
            )
            == {}
        )


class TestTheSettingsComeFromTheDeclarations:
    def test_the_form_the_api_and_the_file_list_the_same_settings(self):
        from annotation.api.serializers import StudySettingsInput
        from annotation.builder import StudyBuilder, unclaimed_settings

        names = [setting.name for setting in SETTINGS]
        form_fields = [n for n in StudyBuilder(Study()).field_names() if n in names]
        api_fields = [n for n in StudySettingsInput().fields if n in names]
        # The builder shows each setting once, in a section of its own choosing; none is left to "Other settings".
        assert sorted(form_fields) == sorted(names) and len(form_fields) == len(names)
        assert api_fields == names
        assert unclaimed_settings() == ()
        assert set(names) <= set(STUDY_KEYS)

    def test_the_page_shows_a_studys_current_settings(self, client, researcher):
        study = study_create(owner=researcher, name="Shown", task_type="ordinal", quota_per_item=9)
        client.force_login(researcher)
        response = client.get(reverse("researcher:study_detail", args=[study.pk]))
        assert response.context["form"]["quota_per_item"].value() == 9
        assert response.context["form"]["completion_code"].value() == study.completion_code


def validator() -> jsonschema.Draft7Validator:
    schema = study_file_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(data) -> dict[str, str]:
    return {"/".join(map(str, e.absolute_path)): e.validator for e in validator().iter_errors(data)}


def docs_example() -> dict:
    text = (DOCS / "study-files.md").read_text(encoding="utf-8")
    return yaml.safe_load(re.search(r"```yaml\n(# studies/jest\.yaml\n.*?)```", text, re.S).group(1))


def demo_study_file(demo) -> dict:
    """A demo study (annotation/demo/data) written as the study file that would create it."""

    def entry(spec: ItemSpec) -> dict:
        item = {"id": spec.external_id, "prompt": spec.prompt, "text": spec.text, "metadata": spec.metadata}
        if spec.gold is not None:
            item["gold"] = spec.gold
        if spec.is_attention_check:
            item["attention_check"] = True
        if spec.candidates:
            item["candidates"] = [
                {"key": c.key, "text": c.text, "context": c.context, "provenance": c.provenance}
                for c in spec.candidates
            ]
        return item

    return {
        "name": demo.name,
        "task_type": demo.task_type,
        "config": demo.config,
        **demo.settings,
        "items": [entry(spec) for spec in demo.items],
    }


class TestStudyFileSchema:
    def test_the_documented_example_is_valid(self):
        assert errors(docs_example()) == {}

    @pytest.mark.parametrize("demo", demo_studies(), ids=lambda demo: demo.slug)
    def test_every_demo_study_is_valid(self, demo):
        assert errors(demo_study_file(demo)) == {}

    def test_a_downloaded_study_file_is_valid(self, researcher):
        study = study_create(owner=researcher, name="Round trip", task_type="pairwise", per_rater_cap=5)
        items = [ItemSpec(external_id="p1", candidates=[CandidateSpec("a", "One"), CandidateSpec("b", "Two")])]
        items_create(study=study, items=items)
        assert errors(json.loads(json.dumps(study_file_data(study)))) == {}

    def test_a_study_linked_to_its_contest_loads_back_from_its_download(self, researcher, tmp_path):
        # HumorRank studies and tournaments keep their contest's slug in the config.
        study = study_create(owner=researcher, name="Linked", task_type="pairwise", config={SOURCE_LINK: "the-contest"})
        data = {**study_file_data(study), "name": "Linked again"}
        assert errors(data) == {}
        copy = load_study_data(data, owner=researcher, base_dir=tmp_path)
        assert copy.config[SOURCE_LINK] == "the-contest"

    def test_a_bad_file_is_refused_where_the_loader_refuses_it(self):
        bad = {
            **docs_example(),
            "quota_per_item": 0,
            "attention_check_rate": 1.5,
            "item_order": "alphabetical",
            "completion_redirect_url": "not a url",
            "completion_code": "C" * 5000,
            "quota_per_itme": 3,
            "config": {"points": [0, 1], "pointz": 1},
        }
        bad["items"] = [*bad["items"], {"id": "x", "txet": "typo"}]
        assert errors(bad) == {
            "": "additionalProperties",
            "quota_per_item": "minimum",
            "attention_check_rate": "exclusiveMaximum",
            "item_order": "enum",
            "completion_redirect_url": "pattern",
            "completion_code": "maxLength",
            "config": "additionalProperties",
            "items/3": "additionalProperties",
        }

    def test_a_file_needs_a_name_and_a_known_task_type_and_not_both_item_sources(self):
        found = {e.validator for e in validator().iter_errors({"task_type": "ranking", "items": [], "items_file": "x"})}
        assert found == {"required", "enum", "not"}

    def test_it_covers_every_key_task_type_and_item_field_the_loader_knows(self):
        schema = study_file_schema()
        assert set(schema["properties"]) == {*STUDY_KEYS, "judges", *RATER_STEP_KEYS}
        assert schema["properties"]["task_type"]["enum"] == list(TASK_TYPES)
        item = schema["properties"]["items"]["items"]
        assert set(item["properties"]) == set(ITEM_KEYS)
        assert set(item["properties"]["candidates"]["items"]["properties"]) == set(CANDIDATE_KEYS)
        ordinal = next(r for r in schema["allOf"] if r["if"]["properties"]["task_type"]["const"] == "ordinal")
        assert ordinal["then"]["properties"]["config"]["properties"]["points"] == {"default": [0, 1, 2, 3]}

    def test_the_command_prints_it(self):
        out = io.StringIO()
        call_command("study_schema", stdout=out)
        printed = json.loads(out.getvalue())
        assert printed["title"] == "Funnybone study file"
        assert printed["properties"]["quota_per_item"]["minimum"] == 1
