# SPDX-License-Identifier: GPL-3.0-or-later
"""The Content-Security-Policy in a real Chromium: the annotator and the reports work under it, unreported.

The browser_page fixture fails any test whose pages made Chromium refuse something
under the policy; these tests walk the pages the policy matters most on, and check
that the policy is really enforced (an injected inline script does not run).
"""

import pytest
from django.test import Client

from annotation.models import Judgment
from tests.conftest import build_study
from tests.ratings.alignment_helpers import build_ordinal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def logged_in(page, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def test_the_annotator_works_under_the_policy_with_no_violation(live_server, browser_page, researcher, csp_violations):
    study = build_study(researcher, n_items=2, completion_code="CSP-DONE")
    page = browser_page
    with page.expect_response(lambda r: r.url.endswith("/consent/")) as consent:
        page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=CSP-1")
    assert "script-src 'self'" in consent.value.headers["content-security-policy"]
    page.get_by_role("button", name="I agree").click()
    page.wait_for_url("**/instructions/")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    first = page.locator("input[name=assignment]").input_value()
    # An answer by click goes through htmx, which swaps the next item in place.
    page.locator("#item-card form button[type=submit]").first.click()
    page.wait_for_function(
        "prev => { const f = document.querySelector('input[name=assignment]'); return !!f && f.value !== prev; }",
        arg=first,
    )
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    page.keyboard.press("1")  # the keyboard shortcuts come from static/js/annotator.js
    page.wait_for_url("**/done/")
    assert page.locator("#completion-code").inner_text() == "CSP-DONE"
    assert Judgment.objects.filter(study=study).count() == 2
    assert csp_violations == []


def test_the_reports_and_researcher_pages_raise_no_violation(live_server, browser_page, researcher, csp_violations):
    study, _raters = build_ordinal(researcher, name="CSP report study")
    page = browser_page
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/alignment/{study.slug}/")
    page.get_by_role("heading", name="Judges ranked").wait_for()
    images = page.locator("#report img")
    assert images.count() > 0
    for i in range(images.count()):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        image.evaluate("img => img.complete ? null : new Promise(done => { img.onload = img.onerror = done; })")
        assert image.evaluate("img => img.naturalWidth") > 0
    page.goto(f"{live_server.url}/analysis/{study.slug}/")
    page.wait_for_load_state("load")
    page.goto(f"{live_server.url}/studies/{study.pk}/")
    page.get_by_role("button", name="Copy link").wait_for()
    assert csp_violations == []


def test_an_injected_inline_script_is_refused_and_reported(live_server, browser_page, researcher, csp_violations):
    study = build_study(researcher, n_items=1)
    page = browser_page
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=CSP-2")
    with page.expect_console_message(lambda message: "Content Security Policy" in message.text):
        page.evaluate(
            "() => { const s = document.createElement('script'); s.textContent = 'window.injected = true;';"
            " document.body.appendChild(s); }"
        )
    assert page.evaluate("() => window.injected === undefined")
    assert any("inline script" in violation for violation in csp_violations), csp_violations
    csp_violations.clear()  # expected here; the fixture fails a test on any left over
