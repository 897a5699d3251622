"""The short annotator lease in a real Chromium: an open page keeps its item, a closed one lets it go."""

import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Item, Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.places import take_place
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LEASE = 3  # seconds; the page beats every second


@pytest.fixture(autouse=True)
def short_lease(settings):
    cache.clear()
    settings.FUNNYBONE_LEASE_SECONDS = LEASE


def to_first_item(page, live_server, study, pid: str) -> int:
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID={pid}")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    return int(page.locator("input[name=assignment]").input_value())


def test_an_open_page_keeps_its_item_past_the_lease_and_its_answer_counts(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=1, quota_per_item=1, completion_code="KEPT-IT")
    page = browser_page
    beats = []
    page.on("response", lambda r: beats.append(r.status) if r.url.endswith("/lease/") else None)
    held = to_first_item(page, live_server, study, "reader-1")

    # Three leases' time on one item: the page's heartbeat keeps it.
    deadline = time.monotonic() + 3 * LEASE
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        # Meanwhile a second worker finds the only item taken, not free.
        assert Assignment.objects.get(pk=held).lease_expires_at > timezone.now()
    assert next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="second")).reason == "waiting"
    assert len(beats) >= 3 and set(beats) == {204}
    assert page.locator(".lease-lost").count() == 0

    page.keyboard.press("2")
    page.wait_for_url("**/done/")
    assert page.locator("#completion-code").inner_text() == "KEPT-IT"
    judgment = Judgment.objects.get()
    assert (judgment.assignment_id, judgment.rater.external_id) == (held, "reader-1")


def test_a_closed_pages_item_goes_to_another_worker_after_the_lease(live_server, chromium, researcher):
    study = build_study(researcher, n_items=1, quota_per_item=1, completion_code="SECOND-DONE")
    first_context, second_context = chromium.new_context(), chromium.new_context()
    try:
        first = first_context.new_page()
        abandoned = to_first_item(first, live_server, study, "walks-away")
        item_id = Assignment.objects.get(pk=abandoned).item_id
        first_context.close()  # the worker closes the tab: no more heartbeats

        second = second_context.new_page()
        second.set_default_timeout(15_000)
        second.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=comes-later")
        second.get_by_role("button", name="I agree").click()
        second.get_by_role("button", name="Start").click()
        second.wait_for_url("**/item/")
        if second.locator("input[name=assignment]").count() == 0:
            # Still leased to the closed page: the waiting page asks again by itself once the lease lapsed.
            assert second.get_by_role("heading", name="More items may free up").is_visible()
            second.locator("input[name=assignment]").wait_for(state="attached", timeout=40_000)
        second.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
        taken = Assignment.objects.get(pk=int(second.locator("input[name=assignment]").input_value()))
        assert taken.item_id == item_id and taken.rater.external_id == "comes-later"
        second.keyboard.press("1")
        second.wait_for_url("**/done/")
        assert second.locator("#completion-code").inner_text() == "SECOND-DONE"
        assert Assignment.objects.get(pk=abandoned).state != Assignment.State.DONE
    finally:
        second_context.close()


def test_a_page_whose_item_went_to_someone_else_is_told_so(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=2, quota_per_item=1)
    page = browser_page
    held = to_first_item(page, live_server, study, "dozed-off")
    # As if the laptop slept past the lease and someone else took and answered the item.
    Assignment.objects.filter(pk=held).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    other = enroll_crowdworker(study=study, participant_id="took-it")
    # Taken the way the answer path takes a lapsed item's place: under the item's lock, the
    # expired lease released and its place given to the other worker.
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=Assignment.objects.get(pk=held).item_id)
        assert take_place(item, study.quota_per_item, timezone.now())
        Assignment.objects.create(
            study=study,
            item_id=item.pk,
            rater=other.rater,
            state=Assignment.State.DONE,
            leased_at=timezone.now(),
            lease_expires_at=timezone.now(),
        )
    alert = page.locator(".lease-lost")
    alert.wait_for(timeout=10_000)
    assert "went to someone else" in alert.inner_text()
    alert.get_by_role("link", name="Go to the next item").click()
    page.wait_for_url("**/item/")
    assert int(page.locator("input[name=assignment]").input_value()) != held
