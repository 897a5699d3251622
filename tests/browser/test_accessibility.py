"""axe-core on every page a crowdworker meets: no violation of impact serious or critical.

axe-core (tests/browser/axe/, vendored, MPL-2.0) is evaluated in the page through the
DevTools protocol, which the site's Content-Security-Policy does not govern, so the
pages are checked exactly as served: the policy stays on and the fixture still fails
on any violation of it. The item page of every task type is checked, at phone and
desktop widths, and the pages around it: the entry link without a participant id,
consent, declined, instructions, the item after a refused answer, and completion.
"""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from annotation.task_types import TASK_TYPES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = (Path(__file__).parent / "axe" / "axe.min.js").read_text()
BLOCKING = ("serious", "critical")
WIDTHS = {"phone": {"width": 375, "height": 812}, "desktop": {"width": 1280, "height": 800}}
# Candidates each task type needs on an item (docs/study-files.md).
CANDIDATES = {"pairwise": 2, "pick_one": 3, "vote_allocation": 3, "best_worst": 4}


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


def axe_problems(page, where: str) -> list[str]:
    """Serious and critical axe violations on the page as it is now, one line per element."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE)
    result = page.evaluate(
        "async () => await axe.run(document, {resultTypes: ['violations'], "
        "runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})"
    )
    problems = []
    for violation in result["violations"]:
        if violation["impact"] in BLOCKING:
            for node in violation["nodes"]:
                problems.append(
                    f"{where}: [{violation['impact']}] {violation['id']} ({violation['help']}) at {node['target']}: "
                    f"{node.get('failureSummary', '').splitlines()[-1:]}"
                )
    return problems


def make_study(owner, task_type: str):
    study = study_create(
        owner=owner,
        name=f"Accessible {task_type}",
        task_type=task_type,
        completion_code=f"{task_type.upper()}-DONE",
        consent_text="You agree that your answers are used for research.",
        instructions_text="Read each joke and answer the question.",
    )
    text = "Senate passes <budget/> after long debate" if task_type == "micro_edit" else "A joke about a cat."
    items_create(
        study=study,
        items=[
            ItemSpec(
                external_id=f"{task_type}-{i}",
                prompt="Which is funnier?" if CANDIDATES.get(task_type) else "",
                text=text,
                candidates=[
                    CandidateSpec(f"c{j}", f"Candidate punchline {j} about the cat.")
                    for j in range(CANDIDATES.get(task_type, 0))
                ],
            )
            for i in range(2)
        ],
    )
    study_set_state(study=study, state="open")
    return study


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ada", "ada@example.org", "ada-password-123")


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_the_item_page_of_every_task_type_has_no_serious_violation(live_server, browser_page, owner, task_type):
    study = make_study(owner, task_type)
    page = browser_page
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=AX-{task_type}")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    problems = []
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        problems += axe_problems(page, f"{task_type} item ({width})")
    assert problems == []


def test_the_pages_around_the_items_have_no_serious_violation(live_server, browser_page, owner):
    study = make_study(owner, "ordinal")
    page = browser_page
    base = f"{live_server.url}/s/{study.entry_token}/"
    problems = []

    page.goto(base)  # the link without a participant id: a page that says what the link is for
    problems += axe_problems(page, "entry without PROLIFIC_PID")

    page.goto(f"{base}?PROLIFIC_PID=AX-decline")
    page.wait_for_url("**/consent/")
    problems += axe_problems(page, "consent")
    page.get_by_role("button", name="I do not agree").click()
    page.wait_for_url("**/declined/")
    problems += axe_problems(page, "declined")

    page.goto(f"{base}?PROLIFIC_PID=AX-1")
    page.get_by_role("button", name="I agree").click()
    page.wait_for_url("**/instructions/")
    problems += axe_problems(page, "instructions")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/item/")
    problems += axe_problems(page, "ordinal item")
    for _ in range(2):
        page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
        page.keyboard.press("2")
        page.wait_for_timeout(300)
    page.wait_for_url("**/done/")
    problems += axe_problems(page, "completion")
    assert page.locator("#completion-code").inner_text() == "ORDINAL-DONE"
    assert problems == []


def test_the_check_finds_a_violation_when_there_is_one(live_server, browser_page, owner):
    # A check that can never fail proves nothing: break one page on purpose and expect axe to say so.
    study = make_study(owner, "ordinal")
    page = browser_page
    page.goto(f"{live_server.url}/s/{study.entry_token}/?PROLIFIC_PID=AX-broken")
    page.wait_for_url("**/consent/")
    page.evaluate("() => document.querySelector('button').replaceChildren()")  # a button with no name
    problems = axe_problems(page, "consent, broken")
    assert any("button-name" in problem for problem in problems), problems
