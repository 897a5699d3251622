"""The entry link as the study page shows it, opened in a real Chromium: refused, and the owner's preview run."""

import pytest
from django.core.cache import cache
from django.test import Client

from annotation.models import Judgment, Rater
from annotation.selectors.researcher import study_progress
from tests.conftest import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLACEHOLDER_QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


def logged_in(page, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def test_a_participant_opening_the_unfilled_link_is_told_what_it_is_for(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=2)
    page = browser_page
    response = page.goto(f"{live_server.url}/s/{study.entry_token}/{PLACEHOLDER_QUERY}")
    assert response.status == 400
    assert page.get_by_role("heading", name="This link needs your participant id").is_visible()
    assert "{{%PROLIFIC_PID%}}" in page.locator("main").inner_text()
    assert page.get_by_role("button", name="Try as a participant").count() == 0
    assert not Rater.objects.exists()


def test_the_owner_tries_the_study_as_a_participant_and_nothing_counts(live_server, browser_page, researcher):
    study = build_study(researcher, n_items=2, quota_per_item=1, completion_code="PREVIEW-OK")
    page = browser_page
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/s/{study.entry_token}/{PLACEHOLDER_QUERY}")
    page.get_by_role("button", name="Try as a participant").click()
    page.wait_for_url("**/consent/")
    assert page.locator(".preview-banner").is_visible()
    page.get_by_role("button", name="I agree").click()
    page.wait_for_url("**/instructions/")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    assert "not counted" in page.locator(".preview-banner").inner_text()
    first = page.locator("input[name=assignment]").input_value()
    page.locator("#item-card form button[type=submit]").first.click()
    page.wait_for_function(
        "prev => { const f = document.querySelector('input[name=assignment]'); return !!f && f.value !== prev; }",
        arg=first,
    )
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    assert page.locator(".preview-banner").is_visible()
    page.keyboard.press("1")
    page.wait_for_url("**/done/")
    assert "PREVIEW-OK" in page.locator(".completion-code").inner_text()
    assert Judgment.objects.filter(rater__kind=Rater.Kind.PREVIEW).count() == 2
    progress = study_progress(study=study)
    assert (progress.raters_total, progress.judgments_done) == (0, 0)


def test_squatters_cannot_starve_a_worker_once_their_leases_run_out(live_server, browser_page, researcher):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment, Enrollment
    from annotation.services.assignment import next_assignment
    from annotation.services.enrollment import enroll_crowdworker

    study = build_study(researcher, n_items=2, quota_per_item=1, completion_code="REAL-DONE")
    for n in range(5):  # made-up ids, each opening an item and walking away
        next_assignment(enrollment=enroll_crowdworker(study=study, participant_id=f"made-up-{n}"))
    page = browser_page
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=REAL-1")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    assert page.get_by_role("heading", name="More items may free up").is_visible()
    assert Enrollment.objects.get(rater__external_id="REAL-1").completed_at is None

    Assignment.objects.filter(study=study, state=Assignment.State.LEASED).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    # The page asks again by itself (htmx polling) and the freed item appears without a click.
    page.locator("input[name=assignment]").wait_for(state="attached", timeout=40_000)
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    first = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("1")
    page.wait_for_function(
        "prev => { const f = document.querySelector('input[name=assignment]'); return !f || f.value !== prev; }",
        arg=first,
    )
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    if "/done/" not in page.url:
        page.keyboard.press("1")
    page.wait_for_url("**/done/")
    assert page.locator("#completion-code").inner_text() == "REAL-DONE"
