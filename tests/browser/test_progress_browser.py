"""The crowd progress label in a real Chromium while other workers hold items: it counts what is still ahead."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Assignment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


def others_hold(study, n: int) -> list[Assignment]:
    """``n`` other workers each lease an item and leave it open."""
    return [
        next_assignment(enrollment=enroll_crowdworker(study=study, participant_id=f"other-{k}")).assignment
        for k in range(n)
    ]


def walk_in(page, live_server, study, pid: str) -> None:
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID={pid}")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")


def label(page):
    return page.locator("label[for=item-progress-meter]")


def test_the_waiting_page_counts_the_items_others_hold_not_zero_of_zero(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=3, quota_per_item=1)
    others_hold(study, 3)
    page = browser_page
    walk_in(page, live_server, study, "latecomer")
    expect(page.get_by_role("heading", name="More items may free up")).to_be_visible()
    expect(label(page)).to_have_text("0 of 3 done")


def test_items_whose_leases_lapsed_count_as_free_before_and_after_an_answer(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=10, quota_per_item=1)
    held = others_hold(study, 9)
    # The nine walked away: their leases lapsed, and nobody has released them yet (that happens lazily).
    Assignment.objects.filter(pk__in=[a.pk for a in held]).update(
        lease_expires_at=timezone.now() - timedelta(minutes=5)
    )
    page = browser_page
    walk_in(page, live_server, study, "fresh-worker")
    expect(label(page)).to_have_text("0 of 10 done")
    page.keyboard.press("2")
    expect(label(page)).to_have_text("1 of 10 done")
