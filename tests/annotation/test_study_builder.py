"""The study builder: task-type settings as fields, the live check's errors and preview, starting points."""

import pytest
from django.urls import reverse

from annotation.builder import FIELDS_SHOWN, StudyBuilder, config_field_name, starters
from annotation.models import Assignment, Enrollment, Judgment, Rater, Study
from annotation.task_types import TASK_TYPES

pytestmark = pytest.mark.django_db


def builder_post(task_type: str, config: dict | None = None, **overrides) -> dict:
    """What the builder page posts for a new study of ``task_type``, as drawn with ``config``."""
    kind = TASK_TYPES[task_type]
    builder = StudyBuilder(Study(), None, start_config=dict(config or kind.default_config), task_type_name=task_type)
    data = {FIELDS_SHOWN: task_type}
    for name in builder.field_names():
        value = builder[name].value()
        if value is True:
            data[name] = "on"
        elif value is not None and value is not False:
            data[name] = str(value)
    data.update(name="Built", task_type=task_type, **overrides)
    return data


def test_every_setting_of_every_task_type_is_a_field():
    for name, kind in TASK_TYPES.items():
        declared = [spec.key for spec in kind.config_fields]
        assert len(declared) == len(set(declared)), name
        # "question" is every type's setting (the task section), so pick-one's needs no field of its own.
        assert set(kind.default_config) <= {*declared, "question"}, name


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_the_builder_creates_each_task_type_from_its_fields(client, researcher, task_type):
    client.force_login(researcher)
    response = client.post(reverse("researcher:study_new"), builder_post(task_type))
    assert response.status_code == 302, response.context["form"].errors
    study = Study.objects.get()
    assert study.config == TASK_TYPES[task_type].config(TASK_TYPES[task_type].default_config)


def test_fields_change_the_config_and_the_preview_shows_it_without_writing(client, researcher):
    client.force_login(researcher)
    data = builder_post(
        "ordinal",
        **{
            config_field_name("points"): "1, 2, 3",
            config_field_name("labels"): "Unfunny\nSomewhat funny\nFunny",
            config_field_name("question"): "Rate this caption",
        },
    )
    response = client.post(reverse("researcher:builder_check_new"), data, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="item-card"' in page and "Rate this caption" in page and "3 — Funny" in page
    assert "inert" in page
    for model in (Study, Rater, Enrollment, Assignment, Judgment):
        assert model.objects.count() == 0


def test_a_bad_field_is_named_as_it_is_left(client, researcher):
    client.force_login(researcher)
    data = builder_post("ordinal", **{config_field_name("points"): "0, 1, two"})
    response = client.post(
        reverse("researcher:builder_check_new"),
        data,
        HTTP_HX_REQUEST="true",
        HTTP_HX_TRIGGER_NAME=config_field_name("points"),
    )
    page = response.content.decode()
    assert 'id="id_config_points_errors"' in page
    assert "“two” is not a whole number" in page
    # The labels no longer match the points only once the points read: one problem at a time.
    data = builder_post("ordinal", **{config_field_name("points"): "0, 1, 2"})
    page = client.post(reverse("researcher:builder_check_new"), data, HTTP_HX_REQUEST="true").content.decode()
    assert "A scale needs one label per point." in page
    assert "The preview appears once the task settings make sense." in page


def test_the_preview_speaks_the_language_asked_for(client, researcher):
    client.force_login(researcher)
    data = builder_post("pairwise", preview_language="ja")
    page = client.post(reverse("researcher:builder_check_new"), data, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-preview-language="ja"' in page
    assert "どちらが面白いですか" in page or "面白い" in page


def test_the_start_page_offers_templates_starters_and_a_study_file(client, researcher):
    client.force_login(researcher)
    page = client.get(reverse("researcher:study_new")).content.decode()
    assert "caption-contest" in page and reverse("researcher:study_upload") in page
    assert {s.task_type for s in starters()} == set(TASK_TYPES)
    drawn = client.get(reverse("researcher:study_new") + "?start=caption-contest").content.decode()
    assert "Somewhat funny" in drawn and 'value="1, 2, 3"' in drawn


def test_a_study_file_upload_names_its_problems_and_writes_nothing(client, researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(researcher)
    bad = SimpleUploadedFile("s.yaml", b"name: X\ntask_type: ordinal\nquota_per_item: 0\n")
    response = client.post(reverse("researcher:study_upload"), {"study_file": bad})
    assert response.status_code == 400
    assert "quota_per_item" in response.content.decode()
    assert Study.objects.count() == 0
    good = SimpleUploadedFile("s.yaml", b"name: From a file\ntask_type: ordinal\nquota_per_item: 2\n")
    response = client.post(reverse("researcher:study_upload"), {"study_file": good})
    assert response.status_code == 302
    assert Study.objects.get().quota_per_item == 2
