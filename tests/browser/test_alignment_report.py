# SPDX-License-Identifier: GPL-3.0-or-later
"""The alignment report in a real Chromium: every figure arrives and decodes as an image."""

import os
from pathlib import Path

import pytest
from django.test import Client
from django.urls import include, path

from funnybone.urls import urlpatterns as site_urlpatterns
from tests.ratings.alignment_helpers import build_ordinal

# Until the lead mounts ratings.alignment.urls in funnybone/urls.py this test mounts it itself.
urlpatterns = [path("alignment/", include("ratings.alignment.urls")), *site_urlpatterns]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.urls(__name__)]

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "alignment-report.png"


def logged_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def test_the_report_page_renders_every_figure(browser_page, live_server, researcher):
    study, _ = build_ordinal(researcher, name="JEST-style ratings")
    logged_in(browser_page, live_server, researcher)
    browser_page.set_viewport_size({"width": 1100, "height": 900})
    browser_page.goto(f"{live_server.url}/alignment/{study.slug}/")
    browser_page.get_by_role("heading", name="Judges ranked").wait_for()
    images = browser_page.locator("#report img")
    count = images.count()
    assert count == 5
    for i in range(count):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        image.evaluate("img => img.complete ? null : new Promise(done => { img.onload = img.onerror = done; })")
        assert image.evaluate("img => img.naturalWidth") > 0, image.get_attribute("alt")
        assert image.get_attribute("alt")
    browser_page.evaluate("window.scrollTo(0, 0)")
    # The README's screenshot is refreshed on request only, so test runs leave the tree clean.
    if os.environ.get("FUNNYBONE_UPDATE_SCREENSHOTS"):
        browser_page.screenshot(path=str(SCREENSHOT), full_page=True)

    # Recompute through htmx: the report is replaced in place and keeps its figures.
    browser_page.get_by_role("button", name="Recompute").click()
    browser_page.get_by_role("heading", name="Judges ranked").wait_for()
    assert browser_page.locator("#report img").count() == 5
