"""A crowdworker's whole path in a real Chromium, answered with the keyboard alone."""

import tempfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from annotation.models import Assignment, Judgment
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(tempfile.gettempdir())
CHINESE_JOKE = "老师：你为什么上课睡觉？学生：因为梦里有您。"
# Strings that exist only behind the scenes; none may ever reach a page.
HIDDEN = [
    "cand-key-alpha",
    "cand-key-beta",
    "jest-key",
    "gpt-secret-9",
    "human-writer-hidden",
    "llama-hidden-70b",
    "meta-secret-source",
    "ext-hidden-",
]


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


@pytest.fixture
def studies(transactional_db):
    owner = get_user_model().objects.create_user("rita", "rita@example.org", "rita-password-123")
    pairwise = study_create(
        owner=owner,
        name="Explanation preference",
        task_type="pairwise",
        config={
            "labels": ["Explanation 1", "Explanation 2", "Equally good"],
            "language": "zh",
            "question": "Which explanation explains the joke better?",
        },
        consent_text="Consent text for the browser test.",
        instructions_text="Choose the explanation that explains the joke better.",
        completion_code="PAIR-DONE",
    )
    explanations = [
        ("谐音：“睡觉”和梦见老师，学生用恭维话化解批评。", "The student flatters the teacher to dodge blame."),
        ("He is literally dreaming about a sheep.", "A pun about counting."),
        ("It mocks the weather forecast.", "It is about umbrellas."),
    ]
    items_create(
        study=pairwise,
        items=[
            ItemSpec(
                external_id=f"ext-hidden-p{i}",
                text=CHINESE_JOKE if i == 0 else f"Joke number {i} about sleeping in class.",
                metadata={"source": "meta-secret-source"},
                candidates=[
                    CandidateSpec("cand-key-alpha", first, provenance={"model": "gpt-secret-9"}),
                    CandidateSpec("cand-key-beta", second, provenance={"source": "human-writer-hidden"}),
                ],
            )
            for i, (first, second) in enumerate(explanations)
        ],
    )
    study_set_state(study=pairwise, state="open")

    ordinal = study_create(
        owner=owner, name="JEST ratings", task_type="ordinal", item_order="as_listed", completion_code="RATE-DONE"
    )
    items_create(
        study=ordinal,
        items=[
            ItemSpec(
                external_id=f"ext-hidden-o{i}",
                prompt=f"Setup sentence {i}.",
                text=f"Response sentence {i}.",
                metadata={"generator": "llama-hidden-70b", "key": "jest-key"},
            )
            for i in range(3)
        ],
    )
    study_set_state(study=ordinal, state="open")
    return pairwise, ordinal


def answer_by_key(page, key: str, seen: list[str]) -> bool:
    """Press one key on the item page; True once the study sent the browser to its completion page."""
    # A key pressed while htmx is still swapping the last answer in would reach
    # the outgoing form (harmless: a resubmit is stored once) instead of this item.
    # Predicates are functions, not expression strings: Playwright evals a string predicate
    # inside the page, which the site's Content-Security-Policy (no 'unsafe-eval') refuses.
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    previous = page.locator("input[name=assignment]").input_value()
    with page.expect_response(lambda r: r.url.endswith("/item/") and r.request.method == "POST") as answered:
        page.keyboard.press(key)
    if answered.value.headers.get("hx-redirect"):
        page.wait_for_url("**/done/")
        page.wait_for_load_state()
        seen.append(page.content())
        return True
    # htmx swapped the next item in and moved focus to its question.
    # Null-safe: mid-swap the old form is gone before the new one is in, and an
    # exception inside the predicate would end the wait instead of retrying it.
    page.wait_for_function(
        "prev => { const field = document.querySelector('input[name=assignment]');"
        " return !!field && field.value !== prev; }",
        arg=previous,
    )
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'item-heading'")
    seen.append(page.content())
    return False


def shown_texts(page) -> tuple[int, list[str]]:
    assignment = int(page.locator("input[name=assignment]").input_value())
    return assignment, page.locator(".pair .candidate .candidate-text").all_inner_texts()


class TestCrowdworkerPath:
    def test_a_worker_finishes_two_studies_by_keyboard_and_nothing_leaks(self, live_server, browser_page, studies):
        pairwise, ordinal = studies
        page = browser_page
        seen: list[str] = []
        page.set_viewport_size({"width": 375, "height": 812})

        # -- pairwise, at phone width --------------------------------------------
        page.goto(f"{live_server.url}/s/{pairwise.entry_token}/?PROLIFIC_PID=PW-77&STUDY_ID=S-1&SESSION_ID=SE-1")
        assert page.url.endswith("/consent/")
        seen.append(page.content())
        # The study's language is Chinese, so are its pages (test_study_language_browser.py checks them).
        page.get_by_role("button", name="我同意").click()
        page.wait_for_url("**/instructions/")
        seen.append(page.content())
        page.screenshot(path=str(SCREENSHOTS / "funnybone-instructions-375.png"), full_page=True)
        assert page.locator("table.shortcut-list").inner_text().count("选择") == 3
        page.get_by_role("button", name="开始").click()
        page.wait_for_url("**/item/")
        seen.append(page.content())

        displayed: dict[int, list[str]] = {}
        keys = {}
        for key in ("a", "2", "t"):
            assignment, texts = shown_texts(page)
            displayed[assignment], keys[assignment] = texts, key
            if page.locator(".item-text").inner_text() == CHINESE_JOKE:
                assert page.locator(".item-text").get_attribute("lang") == "zh"
                assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
                page.screenshot(path=str(SCREENSHOTS / "funnybone-pairwise-375.png"), full_page=True)
            finished = answer_by_key(page, key, seen)
        assert finished
        assert page.locator("#completion-code").inner_text() == "PAIR-DONE"

        # -- 0-3 ratings, same browser, same participant ---------------------------
        page.goto(f"{live_server.url}/s/{ordinal.entry_token}/?PROLIFIC_PID=PW-77&STUDY_ID=S-2&SESSION_ID=SE-2")
        page.get_by_role("button", name="I agree").click()
        page.wait_for_url("**/instructions/")
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/item/")
        seen.append(page.content())
        page.screenshot(path=str(SCREENSHOTS / "funnybone-ordinal-375.png"), full_page=True)
        for key in ("0", "3", "2"):
            finished = answer_by_key(page, key, seen)
        assert finished
        assert page.locator("#completion-code").inner_text() == "RATE-DONE"
        page.screenshot(path=str(SCREENSHOTS / "funnybone-done-375.png"), full_page=True)

        # -- what was stored ---------------------------------------------------------
        pair_judgments = Judgment.objects.filter(study=pairwise).select_related("assignment", "item")
        assert pair_judgments.count() == 3
        for judgment in pair_judgments:
            texts = {c.key: c.text for c in judgment.item.candidates.all()}
            assert judgment.shown_order == judgment.assignment.shown_order
            assert [texts[key] for key in judgment.shown_order] == displayed[judgment.assignment_id]
            expected = {"a": judgment.shown_order[0], "2": judgment.shown_order[1], "t": "tie"}
            assert judgment.value == {"choice": expected[keys[judgment.assignment_id]]}
            assert judgment.rater.external_id == "PW-77"
        ratings = Judgment.objects.filter(study=ordinal).order_by("assignment__sequence")
        assert [j.value for j in ratings] == [{"rating": 0}, {"rating": 3}, {"rating": 2}]
        assert not Assignment.objects.filter(rater__external_id="PW-77", state=Assignment.State.LEASED).exists()

        # -- and nothing behind the scenes reached any page ----------------------------
        assert len(seen) >= 10
        for html in seen:
            for secret in HIDDEN:
                assert secret not in html


class TestVoteAllocationByKeyboard:
    def test_digits_add_votes_shift_takes_them_back_and_enter_submits(
        self, live_server, browser_page, transactional_db
    ):
        owner = get_user_model().objects.create_user("vera", "vera@example.org", "vera-password-123")
        study = study_create(owner=owner, name="Oogiri", task_type="vote_allocation", config={"max_votes": 3})
        items_create(
            study=study,
            items=[
                ItemSpec(
                    external_id="ext-hidden-v",
                    prompt="お題：こんな回転寿司は嫌だ",
                    candidates=[CandidateSpec(f"resp-{j}", f"回答 {j}") for j in range(4)],
                )
            ],
        )
        study_set_state(study=study, state="open")
        page = browser_page
        page.set_viewport_size({"width": 375, "height": 812})
        page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=V-1")
        page.get_by_role("button", name="I agree").click()
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/item/")
        # Submitting no votes brings the form back (a 422 that htmx swaps in) with the reason.
        with page.expect_response(lambda r: r.url.endswith("/item/") and r.request.method == "POST") as refused:
            page.keyboard.press("Enter")
        assert refused.value.status == 422
        assert page.locator(".form-error").inner_text() == "Please cast at least one vote."
        left = page.locator("[data-votes-left]")
        for key in ("1", "1", "3", "Shift+1", "4", "2"):
            page.keyboard.press(key)
        # The fourth vote was refused: three is the most a voter has.
        assert left.inner_text() == "0"
        assert [page.locator(f"input[name=votes_{i}]").input_value() for i in range(4)] == ["1", "0", "1", "1"]
        assert page.get_by_role("button", name="Give a vote to response 2").is_disabled()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(SCREENSHOTS / "funnybone-votes-375.png"), full_page=True)
        page.keyboard.press("Enter")
        page.wait_for_url("**/done/")
        order = Assignment.objects.get(study=study).shown_order
        assert Judgment.objects.get(study=study).value == {"votes": {order[0]: 1, order[2]: 1, order[3]: 1}}


class TestWrittenAnswersByKeyboard:
    def test_enter_submits_a_word_and_ctrl_enter_an_explanation(self, live_server, browser_page, transactional_db):
        owner = get_user_model().objects.create_user("wes", "wes@example.org", "wes-password-123")
        edit = study_create(owner=owner, name="Edits", task_type="micro_edit", completion_code="EDIT-DONE")
        items_create(study=edit, items=[ItemSpec(external_id="h1", text="Senate passes <budget/> after long debate")])
        study_set_state(study=edit, state="open")
        explain = study_create(owner=owner, name="Explain", task_type="explanation", completion_code="WHY-DONE")
        items_create(
            study=explain, items=[ItemSpec(external_id="j1", text="I used to be a banker, but I lost interest.")]
        )
        study_set_state(study=explain, state="open")
        page = browser_page
        page.set_viewport_size({"width": 1280, "height": 800})

        page.goto(f"{live_server.url}/s/{edit.entry_token}/?PROLIFIC_PID=W-1")
        page.get_by_role("button", name="I agree").click()
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/item/")
        assert page.locator("mark.marked-token").inner_text() == "budget"
        page.get_by_role("textbox", name="Replace").fill("nap time")
        with page.expect_response(lambda r: r.url.endswith("/item/") and r.request.method == "POST") as refused:
            page.keyboard.press("Enter")
        assert refused.value.status == 422
        # The form comes back with the word kept and the cursor in it, ready to fix.
        page.wait_for_function("() => document.activeElement && document.activeElement.id === 'replacement'")
        assert page.get_by_role("textbox", name="Replace").input_value() == "nap time"
        assert "single word" in page.locator(".form-error").inner_text()
        page.screenshot(path=str(SCREENSHOTS / "funnybone-micro-edit-1280.png"), full_page=True)
        page.keyboard.press("Control+A")
        page.keyboard.type("nap")
        page.keyboard.press("Enter")
        page.wait_for_url("**/done/")
        assert page.locator("#completion-code").inner_text() == "EDIT-DONE"
        assert Judgment.objects.get(study=edit).value == {"replacement": "nap"}

        page.goto(f"{live_server.url}/s/{explain.entry_token}/?PROLIFIC_PID=W-1")
        page.get_by_role("button", name="I agree").click()
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/item/")
        page.get_by_role("textbox", name="Your explanation").focus()
        page.keyboard.type("It plays on interest as money earned and as curiosity.")
        page.keyboard.press("Enter")  # a plain Enter is a new line, not a submit
        page.keyboard.type("Both fit a banker.")
        page.keyboard.press("Control+Enter")
        page.wait_for_url("**/done/")
        assert Judgment.objects.get(study=explain).value == {
            "text": "It plays on interest as money earned and as curiosity.\nBoth fit a banker."
        }
