# SPDX-License-Identifier: GPL-3.0-or-later
"""The study builder and the judge form in a real Chromium.

A study of each task type is built through the builder's sections, its preview
(the annotator's own item card) checked as it updates; a judge is created on its
page and its "Test connection" asks llama.cpp's server one real question.
"""

import pytest
from django.test import Client

from annotation.builder import config_field_name
from annotation.models import Assignment, Enrollment, Judgment, Study
from annotation.task_types import TASK_TYPES
from judging.local_model import LOCAL_MODEL
from judging.models import JudgeConfig
from tests.judging.conftest import llama_server  # noqa: F401 - the session's llama.cpp server fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def logged_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_a_study_of_each_task_type_is_built_with_its_preview(browser_page, live_server, researcher, task_type):
    page = browser_page
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/studies/new/")
    page.get_by_role("link", name=f"Blank: {TASK_TYPES[task_type].title}").click()
    preview = page.locator("#builder-preview #item-card")
    preview.wait_for()
    page.locator("#id_name").fill(f"Built {task_type}")
    question = f"Preview check for {task_type}"
    page.locator(f"#id_{config_field_name('question')}").fill(question)
    page.locator("#builder-preview h1", has_text=question).wait_for()
    # Nothing in the preview can be sent, and it is the rater's own form.
    assert preview.evaluate("el => el.closest('[inert]') !== null")
    assert page.locator("#builder-preview form.answer-form").count() == 1
    # A setting that makes no sense is named under its field as it is left.
    page.locator("#id_quota_per_item").fill("0")
    page.locator("#id_quota_per_item").blur()
    page.locator("#id_quota_per_item_errors", has_text="Must be at least 1").wait_for()
    page.locator("#id_quota_per_item").fill("4")
    page.locator("#id_quota_per_item").blur()
    page.locator("#id_quota_per_item_errors:empty").wait_for(state="attached")
    if task_type == "best_worst":
        # On a phone a joke takes the row's full width, its two choices under it.
        page.set_viewport_size({"width": 375, "height": 800})
        joke = page.locator("#builder-preview .best-worst-joke").first
        assert joke.bounding_box()["width"] > 250
    page.get_by_role("button", name="Create study").click()
    page.wait_for_url("**/items/")
    study = Study.objects.get()
    assert (study.task_type, study.config["question"], study.quota_per_item) == (task_type, question, 4)
    for model in (Enrollment, Assignment, Judgment):
        assert model.objects.count() == 0


def test_a_judge_is_created_and_its_connection_tested_against_llama_cpp(
    browser_page,
    live_server,
    researcher,
    llama_server,  # noqa: F811
):
    page = browser_page
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/judging/judges/")
    page.locator("#id_name").fill("Local SmolLM2")
    page.locator("#id_base_url").fill(llama_server.base_url)
    page.locator("#id_model").fill(LOCAL_MODEL)
    # No key is stored yet, so there is none to remove.
    assert page.locator("#id_remove_api_key").count() == 0
    page.get_by_role("button", name="Create judge").click()
    page.get_by_role("heading", name="Test connection").wait_for()
    assert JudgeConfig.objects.get().base_url == llama_server.base_url
    page.get_by_label("Ask about an item of").select_option("ordinal")
    page.get_by_role("button", name="Test connection").click()
    result = page.locator("#connection-result pre.raw-answer")
    result.wait_for(timeout=120_000)
    assert result.inner_text().strip()
    verdict = page.locator("#connection-result .message").inner_text()
    assert "answer was read" in verdict or "could not be read" in verdict
    for model in (Assignment, Judgment):
        assert model.objects.count() == 0
