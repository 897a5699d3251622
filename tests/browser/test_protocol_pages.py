# SPDX-License-Identifier: GPL-3.0-or-later
"""A researcher in a real Chromium: a JEST study from its template, its panel's ratings imported, the report read."""

from pathlib import Path

import pytest
from django.test import Client
from openpyxl import load_workbook

from annotation.models import Judgment, Study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PANEL = Path(__file__).resolve().parents[2] / "annotation" / "demo" / "data" / "jest-panel.csv"


def logged_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def test_template_import_and_report_from_the_pages(browser_page, live_server, researcher, tmp_path):
    page = browser_page
    logged_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/studies/")
    page.get_by_role("link", name="New study from a protocol template").click()
    page.get_by_role("combobox", name="Template").select_option("jest")
    page.get_by_role("textbox", name="Name").fill("Panel of seven")
    page.get_by_role("button", name="Create study").click()
    page.get_by_role("heading", name="Import protocol data into Panel of seven").wait_for()

    # A bad file first: every problem listed, nothing imported.
    bad = tmp_path / "bad.csv"
    bad.write_text("id,setup,response,Ada\nt1,Setup,Response,7\nt2,Setup,,1\n", encoding="utf-8")
    page.get_by_label("File:").set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "Nothing was imported" in alert.inner_text()
    assert "Row 2" in alert.inner_text() and "Row 3" in alert.inner_text()
    study = Study.objects.get(name="Panel of seven")
    assert study.items.count() == 0

    page.get_by_label("File:").set_input_files(str(PANEL))
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 12 items and 84 answers.").wait_for()
    assert Judgment.objects.filter(study=study).count() == 84

    page.get_by_role("link", name="Protocol report").click()
    page.get_by_role("heading", name="All raters and the selected subset").wait_for()
    assert page.get_by_role("heading", name="Dataset A — texts by consensus").is_visible()
    images = page.locator("figure img")
    assert images.count() >= 2
    for i in range(images.count()):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        image.evaluate("img => img.complete ? null : new Promise(done => { img.onload = img.onerror = done; })")
        assert image.evaluate("img => img.naturalWidth") > 0, image.get_attribute("alt")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download the report as a workbook (XLSX)").click()
    path = tmp_path / "report.xlsx"
    download.value.save_as(path)
    book = load_workbook(path, read_only=True)
    assert book.sheetnames[0] == "Summary" and len(book.sheetnames) > 3
