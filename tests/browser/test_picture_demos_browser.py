"""A crowdworker walks the picture demos in Chromium: the caption contest (both rounds) and image Oogiri.

Each walk starts on a phone (375 px): the cartoon loads, fits the screen, opens larger from the
keyboard in an accessible dialog and closes again; axe finds nothing serious with the dialog shut
or open. The rest of the study is answered with the keyboard shortcuts at desktop width, to the end.
"""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import translation

from annotation.demo.builder import _build, demo_studies

from .test_accessibility import WIDTHS, axe_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each demo, and the keys that answer one of its items.
DEMOS = {
    "Demo: Caption contest — how funny is this caption?": ["3"],
    "Demo: Caption contest — which caption is funnier?": ["1"],
    "Demo: Image OOGIRI — 画像大喜利 in Japanese": ["2", "2", "Enter"],
}


@pytest.fixture(autouse=True)
def _fresh(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def picture_state(page) -> list[dict]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#item-card img.picture')].map(img => ({
            loaded: img.complete && img.naturalWidth > 0, width: img.getBoundingClientRect().width,
            right: img.getBoundingClientRect().right, alt: img.alt}))"""
    )


def answered(page) -> int:
    return int(page.locator("#item-progress-meter").get_attribute("value"))


@pytest.mark.parametrize("name", list(DEMOS))
def test_a_crowdworker_walks_the_picture_demo_on_a_phone_and_a_desktop(live_server, browser_page, name):
    owner = get_user_model().objects.create_user("demo-owner", "d@example.org", "demo-password-123")
    study = _build(next(d for d in demo_studies() if d.name == name), owner)
    language = study.config.get("language", "en")
    with translation.override(language):
        agree, start, close = (translation.gettext(text) for text in ("I agree", "Start", "Close"))
    page = browser_page
    page.set_viewport_size(WIDTHS["phone"])
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=PIC-{study.pk}")
    page.get_by_role("button", name=agree).click()
    page.get_by_role("button", name=start).click()
    page.wait_for_url("**/item/")
    assert page.locator("html").get_attribute("lang").lower().startswith(language[:2])

    # On the phone: the cartoon is there, described, and no wider than the screen.
    page.wait_for_function("() => [...document.querySelectorAll('#item-card img.picture')].every(i => i.complete)")
    pictures = picture_state(page)
    assert pictures and all(p["loaded"] and p["alt"] and p["right"] <= 375 for p in pictures), pictures
    problems = axe_problems(page, f"{name} item (phone)")

    # Enlarged from the keyboard, closed with Escape; focus comes back to the picture's link.
    link = page.locator("#item-card a[data-zoom]").first
    link.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    dialog.wait_for(state="visible")
    assert dialog.locator("img").get_attribute("alt") == pictures[0]["alt"]
    assert page.get_by_role("button", name=close).is_visible()
    problems += axe_problems(page, f"{name} enlarged (phone)")
    before = answered(page)
    page.keyboard.press(DEMOS[name][0])  # an answer key while the picture is enlarged answers nothing
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert answered(page) == before
    assert page.evaluate("() => document.activeElement.matches('a[data-zoom]')")

    # The rest at desktop width, by keyboard only, to the end of the study.
    page.set_viewport_size(WIDTHS["desktop"])
    problems += axe_problems(page, f"{name} item (desktop)")
    total = study.items.count()
    for n in range(total):
        page.locator("#item-heading").focus()
        for key in DEMOS[name]:
            page.keyboard.press(key)
        if n + 1 < total:
            page.wait_for_function("(n) => +document.querySelector('#item-progress-meter')?.value === n", arg=n + 1)
            page.wait_for_function(
                "() => [...document.querySelectorAll('#item-card img.picture')].every(i => i.complete && i.naturalWidth)"
            )
    page.wait_for_url("**/done/")
    assert problems == []
    assert study.judgments.count() == total
