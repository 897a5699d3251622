"""A Chinese and a Japanese demo study walked in Chromium, entry link to completion code, in their languages;
and the key badges a touch screen has no use for."""

import re
import tempfile
from pathlib import Path

import pytest
from django.core.cache import cache

from annotation.demo.builder import load_demo
from annotation.models import Judgment, Study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(tempfile.gettempdir())

# The pages' own English words (not the study's texts): none may show on a translated study's pages.
ENGLISH_UI = re.compile(
    r"Before you start|I agree|I do not agree|Instructions|Keyboard shortcuts|\bStart\b|Submit|\bdone\b|"
    r"Explanation [12]|Equally good|Which one is funnier|Thank you|completion code|Copy the code|"
    r"Votes left|You have \d+ votes?|Enter this code|Skip to content|Joke\b"
)


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


@pytest.fixture
def demo(transactional_db, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # the demo's cartoons
    load_demo()
    return {
        "zh": Study.objects.get(slug="demo-chumor-which-explanation-is-better"),
        "ja": Study.objects.get(slug="demo-oogiri-in-japanese"),
    }


def visible_text(page) -> str:
    # The page's text and the accessible names a screen reader reads out.
    labels = page.eval_on_selector_all("[aria-label]", "nodes => nodes.map(n => n.getAttribute('aria-label'))")
    return page.locator("body").inner_text() + "\n" + "\n".join(labels) + "\n" + page.title()


def assert_in_language(page, language: str, *expected: str) -> str:
    text = visible_text(page)
    assert page.locator("html").get_attribute("lang") == language
    for words in expected:
        assert words in text, f"{words!r} not on {page.url}"
    leftover = ENGLISH_UI.findall(text)
    assert not leftover, f"English on {page.url}: {leftover}"
    return text


def start(page, live_server, study: Study, pid: str, language: str, *, consent: str, agree: str):
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID={pid}")
    page.wait_for_url("**/consent/")
    assert_in_language(page, language, consent, agree)
    page.get_by_role("button", name=agree).click()
    page.wait_for_url("**/instructions/")


def answer(page, click) -> bool:
    """Answer the item on the page; True once the study sent the browser to its completion page."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    previous = page.locator("input[name=assignment]").input_value()
    with page.expect_response(lambda r: r.url.endswith("/item/") and r.request.method == "POST") as answered:
        click()
    if answered.value.headers.get("hx-redirect"):
        page.wait_for_url("**/done/")
        page.wait_for_load_state()
        return True
    page.wait_for_function(
        "prev => { const field = document.querySelector('input[name=assignment]');"
        " return !!field && field.value !== prev; }",
        arg=previous,
    )
    return False


class TestStudiesInTheirLanguage:
    def test_a_chinese_chumor_study_is_chinese_from_entry_to_completion_code(self, live_server, browser_page, demo):
        page, study = browser_page, demo["zh"]
        start(page, live_server, study, "zh-worker-1", "zh-hans", consent="开始之前", agree="我同意")
        assert_in_language(page, "zh-hans", "说明", "键盘快捷键", "选择“解释 1”", "选择“一样好”")
        page.get_by_role("button", name="开始").click()
        page.wait_for_url("**/item/")
        finished, answered = False, 0
        while not finished:
            # The protocol's question, the joke labelled, the explanations and buttons in Chinese.
            assert_in_language(
                page, "zh-hans", "哪个解释把笑话讲得更清楚？", "笑话", "解释 1", "解释 2", "一样好", "已完成"
            )
            if answered == 0:
                page.screenshot(path=str(SCREENSHOTS / "funnybone-zh-item.png"), full_page=True, caret="initial")
            finished = answer(page, lambda: page.locator("button[name=choice]").first.click())
            answered += 1
        assert answered == study.items.count() == 5
        assert_in_language(page, "zh-hans", "谢谢！", "你的完成码是：", "复制完成码")
        assert page.locator("#completion-code").inner_text() == "DEMO-CHUMOR-PREFER"
        assert Judgment.objects.filter(study=study, rater__external_id="zh-worker-1").count() == 5

    def test_a_japanese_oogiri_study_is_japanese_from_entry_to_completion_code(self, live_server, browser_page, demo):
        page, study = browser_page, demo["ja"]
        start(page, live_server, study, "ja-worker-1", "ja", consent="始める前に", agree="同意する")
        assert_in_language(page, "ja", "説明", "キーボードショートカット", "その番号の回答に1票入れる")
        page.get_by_role("button", name="始める").click()
        page.wait_for_url("**/item/")
        finished, answered = False, 0
        while not finished:
            assert_in_language(
                page, "ja", "いちばん面白い回答に投票してください", "持ち票は3票です", "残りの票", "完了"
            )
            if answered == 0:
                page.screenshot(path=str(SCREENSHOTS / "funnybone-ja-item.png"), full_page=True, caret="initial")
            page.get_by_role("button", name="回答 1 に1票入れる").click()
            page.get_by_role("button", name="回答 2 に1票入れる").click()
            finished = answer(page, lambda: page.get_by_role("button", name="投票を送信する").click())
            answered += 1
        assert answered == study.items.count() == 2
        assert_in_language(page, "ja", "ありがとうございました！", "完了コード：", "コードをコピー")
        page.screenshot(path=str(SCREENSHOTS / "funnybone-ja-done.png"), full_page=True, caret="initial")
        assert page.locator("#completion-code").inner_text() == "DEMO-OOGIRI-JA"
        votes = Judgment.objects.filter(study=study, rater__external_id="ja-worker-1")
        assert [sum(j.value["votes"].values()) for j in votes] == [2, 2]


class TestKeyBadgesOnTouchScreens:
    def open_item(self, page, live_server, study: Study, pid: str) -> None:
        page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID={pid}")
        page.get_by_role("button", name="我同意").click()
        page.wait_for_url("**/instructions/")

    def test_a_touch_screen_shows_no_key_badges_and_a_desktop_does(self, live_server, chromium, browser_page, demo):
        study = demo["zh"]
        self.open_item(browser_page, live_server, study, "desk-1")
        assert browser_page.locator(".keyboard-help").is_visible()
        browser_page.get_by_role("button", name="开始").click()
        browser_page.wait_for_url("**/item/")
        assert browser_page.locator("button[name=choice] kbd").first.is_visible()

        phone = chromium.new_context(has_touch=True, is_mobile=True, viewport={"width": 390, "height": 844})
        try:
            page = phone.new_page()
            assert page.evaluate("() => matchMedia('(hover: none) and (pointer: coarse)').matches")
            self.open_item(page, live_server, study, "phone-1")
            assert not page.locator(".keyboard-help").is_visible()
            page.get_by_role("button", name="开始").click()
            page.wait_for_url("**/item/")
            buttons = page.locator("button[name=choice]")
            assert buttons.count() == 3 and buttons.first.is_visible()
            assert all(not badge.is_visible() for badge in page.locator("button[name=choice] kbd").all())
            assert "解释 1" in buttons.first.inner_text()
        finally:
            phone.close()
