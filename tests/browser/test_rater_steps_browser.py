"""The steps around the items in a real Chromium: a qualification, practice with feedback, the demographics.

One crowdworker fails the qualification test and gets the screen-out code;
another passes, practises (seeing the expected answer and the explanation),
answers the demographics and the task, and gets the completion code.
"""

import pytest
from django.core.cache import cache

from annotation.models import Judgment, QualificationResult, QuestionAnswer
from annotation.rater_steps import rater_steps_save
from tests.annotation.test_rater_steps import STEPS
from tests.browser.test_accessibility import axe_problems
from tests.browser.test_outcomes_browser import answer_until_done, enter
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(researcher):
    study = build_study(
        researcher, n_items=2, screened_out_code="SCREEN-9", completion_code="DONE-1", name="Qualified study"
    )
    rater_steps_save(study=study, data={**STEPS, "questionnaire": {"before": ["demographics"]}})
    return study


def begin(page, live_server, study, pid: str) -> None:
    enter(page, live_server, study, pid)
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()


def rate(page, rating: str, *, step: str) -> None:
    page.wait_for_url(f"**/{step}/")
    page.locator(f"button[name=rating][value='{rating}']").click()
    page.wait_for_load_state()


def test_a_worker_who_fails_the_test_gets_the_screen_out_code(live_server, browser_page, study):
    page = browser_page
    begin(page, live_server, study, "failing-worker")
    page.wait_for_url("**/qualification/")
    assert "Test item 1 of 3" in page.locator("main").inner_text()
    problems = axe_problems(page, "qualification")
    for rating in ("0", "3", "3"):
        rate(page, rating, step="qualification")
    page.wait_for_url("**/done/")
    text = page.locator("main").inner_text()
    assert "SCREEN-9" in text and "DONE-1" not in page.content()
    assert page.locator("[data-outcome=screened_out]").count() == 1
    assert [*problems, *axe_problems(page, "screened out")] == []
    # Typing the item address does not get round the screen-out.
    page.goto(f"{live_server.url}/s/{study.entry_token}/item/")
    page.wait_for_url("**/done/")
    assert not QualificationResult.objects.get(rater__external_id="failing-worker").passed
    assert not Judgment.objects.filter(study=study).exists()


def test_a_worker_who_passes_practises_answers_the_demographics_and_the_task(live_server, browser_page, study):
    page = browser_page
    begin(page, live_server, study, "passing-worker")
    for rating in ("3", "0", "1"):
        rate(page, rating, step="qualification")
    rate(page, "0", step="practice")
    feedback = page.locator(".practice-feedback")
    feedback.wait_for()
    assert "Mildly funny: the twist is expected." in feedback.inner_text()
    assert page.locator(".expected-answer").inner_text().strip()
    problems = axe_problems(page, "practice feedback")
    page.get_by_role("link", name="Continue").click()
    page.wait_for_url("**/questions/")
    page.get_by_role("button", name="Continue").click()  # nothing answered: each question says so
    assert page.locator("#error-age_band").is_visible()
    problems += axe_problems(page, "questions with errors")
    page.get_by_label("25-34").check()
    page.get_by_label("Non-binary").check()
    page.locator("input[name=country]").fill("New Zealand")
    page.locator("input[name=first_language]").fill("Māori")
    page.get_by_label("Every week").check()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/item/")
    answer_until_done(page, "2")
    assert "DONE-1" in page.locator("main").inner_text()
    answers = dict(QuestionAnswer.objects.values_list("key", "value"))
    assert answers["age_band"] == "25-34" and answers["first_language"] == "Māori"
    assert Judgment.objects.filter(study=study).count() == 2
    assert problems == []
