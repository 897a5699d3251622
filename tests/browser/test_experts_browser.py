"""An expert panel in a real Chromium: the researcher invites, the expert creates an account from the link and rates, comes back later."""

import pytest
from django.core.cache import cache

from annotation.models import Invitation, Judgment, Rater
from tests.annotation.test_completion_codes import fill_up
from tests.browser.test_entry_links_browser import logged_in
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "giggle-quorum-2026"


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


def settled(page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


def rate_one(page, key: str) -> None:
    before = page.locator("input[name=assignment]").input_value()
    page.keyboard.press(key)
    page.wait_for_function(
        "prev => { const f = document.querySelector('input[name=assignment]'); return !f || f.value !== prev; }",
        arg=before,
    )
    settled(page)


def invite(page, live_server, researcher, study, name: str) -> str:
    """The researcher creates an invitation on the study page; its link, as the page shows it to copy."""
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/studies/{study.pk}/")
    page.locator("#invitations").get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create invitation").click()
    page.wait_for_url(f"**/studies/{study.pk}/#invitations")
    return page.locator("#invitations input[readonly]").first.input_value()


def test_an_invited_expert_creates_an_account_rates_and_resumes(live_server, chromium, researcher):
    study = build_study(researcher, n_items=4, quota_per_item=3, name="JEST-style panel")

    # The researcher creates the invitation on the study page and copies its link.
    desk = chromium.new_context()
    page = desk.new_page()
    page.set_default_timeout(15_000)
    link = invite(page, live_server, researcher, study, "Dr. Erin Expert")
    assert link == f"{live_server.url}/invite/{Invitation.objects.get().token}/"

    # A stranger opens it: no login form, but the study and a way to make an account.
    first_visit = chromium.new_context()
    expert = first_visit.new_page()
    expert.set_default_timeout(15_000)
    expert.goto(link)
    assert expert.get_by_role("heading", name="You are invited to rate for “JEST-style panel”").is_visible()
    assert "This invitation is for Dr. Erin Expert." in expert.locator("main").inner_text()
    assert expert.locator("input[name=name]").input_value() == "Dr. Erin Expert"
    expert.locator("input[name=username]").fill("erin")
    expert.locator("input[name=password1]").fill("short")
    expert.locator("input[name=password2]").fill("short")
    expert.get_by_role("button", name="Create account and start").click()
    assert "too short" in expert.locator("main").inner_text()  # Django's validators, on the page
    expert.locator("input[name=password1]").fill(PASSWORD)
    expert.locator("input[name=password2]").fill(PASSWORD)
    expert.get_by_role("button", name="Create account and start").click()
    expert.wait_for_url("**/consent/")
    expert.get_by_role("button", name="I agree").click()
    expert.get_by_role("button", name="Start").click()
    expert.wait_for_url("**/item/")
    settled(expert)
    assert expert.get_by_role("link", name="Pause").is_visible()
    rate_one(expert, "2")
    assert "1 of 4 done" in expert.locator(".item-progress").inner_text()
    first_visit.close()  # the expert stops for today

    rater = Rater.objects.get(user__username="erin")
    assert (rater.kind, rater.name) == (Rater.Kind.EXPERT, "Dr. Erin Expert")
    assert Judgment.objects.filter(rater=rater).count() == 1

    # Another day, another browser: the same link asks them to sign in and brings them back to their next item.
    second_visit = chromium.new_context()
    expert = second_visit.new_page()
    expert.set_default_timeout(15_000)
    expert.goto(link)
    expert.wait_for_url("**/accounts/login/**")
    expert.get_by_label("Username").fill("erin")
    expert.get_by_label("Password").fill(PASSWORD)
    expert.get_by_role("button", name="Log in").click()
    expert.wait_for_url("**/item/")
    settled(expert)
    assert "1 of 4 done" in expert.locator(".item-progress").inner_text()
    rate_one(expert, "3")
    assert "2 of 4 done" in expert.locator(".item-progress").inner_text()

    # Pausing lands on their studies, with the way back in.
    expert.get_by_role("link", name="Pause").click()
    expert.wait_for_url("**/expert/")
    row = expert.locator("tr", has_text="JEST-style panel")
    assert "2 of 4" in row.inner_text()
    row.get_by_role("link", name="Continue").click()
    expert.wait_for_url("**/item/")
    second_visit.close()

    # The researcher sees who accepted and how far they got.
    page.reload()
    row = page.locator("#invitations tbody tr").first
    assert "Dr. Erin Expert" in row.inner_text() and "2 of 4" in row.inner_text()
    desk.close()
    assert Judgment.objects.filter(rater=rater).count() == 2


def test_an_expert_invited_to_a_full_study_is_warned_of_and_told_so_in_expert_words(live_server, chromium, researcher):
    study = build_study(researcher, n_items=2, quota_per_item=1, name="Full panel", no_work_code="NOWORK-7")
    fill_up(study)

    # The researcher is warned as she creates the invitation, not after the expert made an account.
    desk = chromium.new_context()
    page = desk.new_page()
    page.set_default_timeout(15_000)
    link = invite(page, live_server, researcher, study, "Dr. Late Expert")
    assert "no place left for a new expert" in page.locator(".messages").inner_text()

    # She sends it anyway; the expert makes an account and is told, in an expert's words, that nothing is left.
    visit = chromium.new_context()
    expert = visit.new_page()
    expert.set_default_timeout(15_000)
    expert.goto(link)
    expert.locator("input[name=username]").fill("late")
    expert.locator("input[name=password1]").fill(PASSWORD)
    expert.locator("input[name=password2]").fill(PASSWORD)
    expert.get_by_role("button", name="Create account and start").click()
    expert.wait_for_url("**/done/")
    text = expert.locator("main").inner_text()
    assert expert.get_by_role("heading", name="No items left").is_visible()
    assert "nothing for you to rate" in text and "researcher who invited you" in text
    assert "site you came from" not in text and "Enough people" not in text
    visit.close()

    # Her table says what happened, not "0 of 2 · finished".
    page.reload()
    row = page.locator("#invitations tbody tr").first
    assert "Dr. Late Expert" in row.inner_text()
    assert "0 of 2 · nothing left to rate" in row.inner_text()
    desk.close()
