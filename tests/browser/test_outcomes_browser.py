"""Every way a participant's visit can end, in a real Chromium: each outcome shows its own code.

Completed, no work left, ended by attention checks, declined consent, and a late answer whose
item went to someone else: the page says what happened and gives that outcome's code (and no
other), with the link back to the recruitment site.
"""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from annotation.models import Assignment, Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import ItemSpec, items_create, study_set_state
from tests.annotation.test_completion_codes import ALL_CODES, CODES, fill_up
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PREFIX = {"DONE-1": "completion", "EMPTY-2": "no_work", "CHECKS-3": "failed_checks", "NOCONSENT-4": "declined"}


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


def enter(page, live_server, study, pid: str) -> None:
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID={pid}")


def start(page, live_server, study, pid: str) -> None:
    enter(page, live_server, study, pid)
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")


def answer_until_done(page, rating: str, *, limit: int = 20) -> None:
    """Press the same rating on every item until the study sends the participant to its end page."""
    for _ in range(limit):
        if page.url.endswith("/done/"):
            return
        current = page.locator("input[name=assignment]").input_value()
        page.locator(f"button[name=rating][value='{rating}']").click()
        page.wait_for_function(
            "previous => location.pathname.endsWith('/done/') || "
            "(document.querySelector('input[name=assignment]') || {}).value !== previous",
            arg=current,
        )
    page.wait_for_url("**/done/")


def shows_only(page, code: str) -> None:
    """The visible page gives this outcome's code, message and way back, and no other outcome's code."""
    text = page.locator("main").inner_text()
    assert code in text
    assert CODES[f"{PREFIX[code]}_message"] in text
    redirect = CODES[f"{PREFIX[code]}_redirect_url"]
    assert page.locator(f'a[href="{redirect}"]').count() >= 1
    for other in ALL_CODES:
        if other != code:
            assert other not in page.content()


def test_a_worker_who_answers_everything_gets_the_completion_code(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=2, **CODES)
    start(browser_page, live_server, study, "finisher")
    answer_until_done(browser_page, "2")
    shows_only(browser_page, "DONE-1")
    assert Judgment.objects.filter(study=study, rater__external_id="finisher").count() == 2


def test_a_full_study_says_so_before_consent_with_the_no_work_code(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=1, quota_per_item=1, **CODES)
    fill_up(study)
    enter(browser_page, live_server, study, "too-late")
    assert browser_page.get_by_role("button", name="I agree").count() == 0
    assert "No items left" in browser_page.locator("main").inner_text()
    shows_only(browser_page, "EMPTY-2")


def test_a_worker_ended_by_attention_checks_gets_their_own_code(live_server, browser_page, researcher):
    study = build_study(
        researcher, n_items=4, attention_check_rate=0.5, attention_check_policy="end", open_=False, **CODES
    )
    items_create(
        study=study,
        items=[ItemSpec(external_id="check", text="Please press 0.", gold={"rating": 0}, is_attention_check=True)],
    )
    study_set_state(study=study, state="open")
    start(browser_page, live_server, study, "careless")
    answer_until_done(browser_page, "3")  # 3 on the check that asks for 0 ends the session
    assert "Your session has ended" in browser_page.locator("main").inner_text()
    shows_only(browser_page, "CHECKS-3")


def test_a_worker_who_declines_gets_the_declined_code(live_server, browser_page, researcher):
    study = build_study(researcher, **CODES)
    enter(browser_page, live_server, study, "no-thanks")
    browser_page.get_by_role("button", name="I do not agree").click()
    browser_page.wait_for_url("**/declined/")
    assert "You chose not to take part" in browser_page.locator("main").inner_text()
    shows_only(browser_page, "NOCONSENT-4")


def test_a_late_answer_is_told_what_happened_and_moves_on(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=1, quota_per_item=1, **CODES)
    start(browser_page, live_server, study, "dawdler")
    mine = int(browser_page.locator("input[name=assignment]").input_value())
    # The lease ran out while the page sat open, and someone quicker took the item and answered it.
    Assignment.objects.filter(pk=mine).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    quicker = enroll_crowdworker(study=study, participant_id="quicker")
    taken = next_assignment(enrollment=quicker).assignment
    assert taken is not None and taken.item_id == Assignment.objects.get(pk=mine).item_id
    judgment_submit(assignment=taken, rater=quicker.rater, value={"rating": 1})

    browser_page.locator("button[name=rating][value='2']").click()
    browser_page.wait_for_url("**/done/")
    text = browser_page.locator("main").inner_text()
    assert "handed to someone else" in text
    shows_only(browser_page, "EMPTY-2")
    assert not Judgment.objects.filter(assignment_id=mine).exists()
