"""Best–worst scaling in a real Chromium, answered with the keyboard alone."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from annotation.models import Assignment, Judgment
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


class TestBestWorstByKeyboard:
    def test_digits_mark_the_funniest_shift_digits_the_least_funny_and_enter_submits(
        self, live_server, browser_page, transactional_db
    ):
        owner = get_user_model().objects.create_user("bea", "bea@example.org", "bea-password-123")
        study = study_create(owner=owner, name="Four jokes", task_type="best_worst")
        items_create(
            study=study,
            items=[
                ItemSpec(
                    external_id="set-hidden-1",
                    prompt="Write a joke about a queue",
                    candidates=[CandidateSpec(f"bw-key-{j}", f"Queue joke number {j}.") for j in range(4)],
                )
            ],
        )
        study_set_state(study=study, state="open")
        page = browser_page
        page.set_viewport_size({"width": 375, "height": 812})
        page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=B-1")
        page.get_by_role("button", name="I agree").click()
        assert "Shift+1" in page.locator(".shortcut-list").inner_text()
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/item/")
        assert "bw-key-" not in page.content()

        funniest = page.get_by_role("radio", name="Funniest: joke 2")
        least = page.get_by_role("radio", name="Least funny: joke 2")
        page.keyboard.press("2")
        assert funniest.is_checked()
        # The same joke cannot be both: marking it least funny clears it as the funniest.
        page.keyboard.press("Shift+2")
        assert least.is_checked() and not funniest.is_checked()
        page.keyboard.press("Shift+4")
        page.keyboard.press("1")
        assert page.get_by_role("radio", name="Funniest: joke 1").is_checked()
        assert page.get_by_role("radio", name="Least funny: joke 4").is_checked()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.keyboard.press("Enter")
        page.wait_for_url("**/done/")
        order = Assignment.objects.get(study=study).shown_order
        assert Judgment.objects.get(study=study).value == {"best": order[0], "worst": order[3]}
