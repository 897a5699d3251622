"""Every outcome has its code: completed, no work left, failed attention checks, declined consent."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Enrollment, Judgment
from annotation.selectors.researcher import study_progress
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import ItemSpec, items_create, study_set_state
from tests.annotation.test_annotator_flow import (
    answer_all,
    assignment_from,
    begin,
    csrf_from,
    enter,
    post_from_page,
    url,
)

pytestmark = pytest.mark.django_db

CODES = {
    "completion_code": "DONE-1",
    "completion_message": "Thanks, your answers are in.",
    "completion_redirect_url": "https://app.example.org/submissions/complete?cc=DONE-1",
    "no_work_code": "EMPTY-2",
    "no_work_message": "The study filled up before you came.",
    "no_work_redirect_url": "https://app.example.org/submissions/complete?cc=EMPTY-2",
    "failed_checks_code": "CHECKS-3",
    "failed_checks_message": "Some check questions were missed.",
    "failed_checks_redirect_url": "https://app.example.org/submissions/complete?cc=CHECKS-3",
    "declined_code": "NOCONSENT-4",
    "declined_message": "Please return the study so someone else can take your place.",
    "declined_redirect_url": "https://app.example.org/submissions/complete?cc=NOCONSENT-4",
}
ALL_CODES = ("DONE-1", "EMPTY-2", "CHECKS-3", "NOCONSENT-4")


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


def shows_only(page: str, code: str) -> None:
    """The page shows this outcome's code, message and redirect, and no other outcome's code."""
    prefix = {"DONE-1": "completion", "EMPTY-2": "no_work", "CHECKS-3": "failed_checks", "NOCONSENT-4": "declined"}
    assert code in page
    assert CODES[f"{prefix[code]}_message"] in page
    redirect = CODES[f"{prefix[code]}_redirect_url"].replace("&", "&amp;")
    assert f'<meta http-equiv="refresh" content="10;url={redirect}">' in page
    assert f'href="{redirect}"' in page
    for other in ALL_CODES:
        if other != code:
            assert other not in page


def fill_up(study) -> None:
    """Someone else answers every item up to the quota."""
    for n in range(study.quota_per_item):
        early = enroll_crowdworker(study=study, participant_id=f"early-{n}")
        while (nxt := next_assignment(enrollment=early)).assignment:
            judgment_submit(assignment=nxt.assignment, rater=early.rater, value={"rating": 2})


class TestEachOutcome:
    def test_a_worker_who_finished_gets_the_completion_code(self, csrf_client, make_study):
        study = make_study(n_items=2, **CODES)
        begin(csrf_client, study)
        assert answer_all(csrf_client, study, {"rating": "3"}) == 2
        shows_only(csrf_client.get(url(study, "done")).content.decode(), "DONE-1")

    def test_a_full_study_says_so_before_consent_with_the_no_work_code(self, csrf_client, make_study):
        study = make_study(n_items=2, quota_per_item=1, **CODES)
        fill_up(study)
        response = enter(csrf_client, study, "late-comer")
        assert response.status_code == 302
        response = csrf_client.get(response["Location"], follow=True)
        page = response.content.decode()
        # Straight from the entry to the end: no consent form, no instructions.
        assert [hop for hop, _status in response.redirect_chain] == [url(study, "done")]
        assert "No items left" in page
        assert "Before you start" not in page
        shows_only(page, "EMPTY-2")
        late = Enrollment.objects.get(rater__external_id="late-comer")
        assert late.consented_at is None and late.completed_at is not None
        assert not Judgment.objects.filter(rater=late.rater).exists()

    def test_the_researcher_sees_who_found_no_work(self, client, make_study, researcher):
        study = make_study(n_items=1, quota_per_item=1, **CODES)
        fill_up(study)
        enter(client, study, "late-comer")
        client.get(url(study, "consent"))
        client.force_login(researcher)
        page = client.get(reverse("researcher:progress", args=[study.pk])).content.decode()
        assert "<td>no work left</td>" in page

    def test_items_only_leased_are_not_a_full_study(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, **CODES)
        squatter = enroll_crowdworker(study=study, participant_id="squatter")
        assert next_assignment(enrollment=squatter).assignment is not None
        enter(csrf_client, study, "worker-1")
        assert "Before you start" in csrf_client.get(url(study, "consent")).content.decode()

    def test_a_worker_ended_by_attention_checks_gets_their_own_code(self, csrf_client, make_study):
        study = make_study(n_items=4, attention_check_rate=0.5, attention_check_policy="end", open_=False, **CODES)
        items_create(
            study=study,
            items=[ItemSpec(external_id="check", text="Please press 0.", gold={"rating": 0}, is_attention_check=True)],
        )
        study_set_state(study=study, state="open")
        begin(csrf_client, study)
        answer_all(csrf_client, study, {"rating": "3"})  # fails the check, which ends the session
        page = csrf_client.get(url(study, "done")).content.decode()
        assert "Your session has ended" in page
        shows_only(page, "CHECKS-3")

    def test_a_worker_who_declines_gets_the_declined_code_and_shows_as_declined(
        self, csrf_client, make_study, researcher
    ):
        study = make_study(**CODES)
        enter(csrf_client, study, "no-thanks")
        response = post_from_page(csrf_client, url(study, "consent"), {"decision": "decline"}, follow=True)
        page = response.content.decode()
        assert "You chose not to take part" in page
        shows_only(page, "NOCONSENT-4")
        enrollment = Enrollment.objects.get(rater__external_id="no-thanks")
        assert enrollment.declined_at is not None and enrollment.consented_at is None

        rows = study_progress(study=study).raters
        assert [(r.name, r.declined, r.completed) for r in rows] == [("no-thanks", True, False)]
        csrf_client.force_login(researcher)
        progress = csrf_client.get(reverse("researcher:progress", args=[study.pk])).content.decode()
        assert "<td>declined</td>" in progress

    def test_the_declined_code_is_not_given_to_someone_who_did_not_decline(self, client, make_study):
        study = make_study(**CODES)
        page = client.get(url(study, "declined")).content.decode()
        assert "You chose not to take part" in page
        assert "NOCONSENT-4" not in page

    def test_changing_ones_mind_takes_the_decline_back(self, csrf_client, make_study):
        study = make_study(**CODES)
        enter(csrf_client, study, "second-thoughts")
        post_from_page(csrf_client, url(study, "consent"), {"decision": "decline"})
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        enrollment = Enrollment.objects.get()
        assert enrollment.consented_at is not None and enrollment.declined_at is None
        assert study_progress(study=study).raters[0].declined is False

    def test_without_codes_the_pages_read_as_before(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1)
        fill_up(study)
        enter(csrf_client, study, "late-comer")
        page = csrf_client.get(url(study, "consent"), follow=True).content.decode()
        assert "No items left" in page
        assert "Please return the study on the site you came from" in page
        assert study.completion_code not in page


class TestLateAnswer:
    def test_a_late_answer_with_nothing_left_is_told_what_happened(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, **CODES)
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        mine = Assignment.objects.get(pk=assignment_from(page))
        Assignment.objects.filter(pk=mine.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        quicker = enroll_crowdworker(study=study, participant_id="quicker")
        taken = next_assignment(enrollment=quicker).assignment
        judgment_submit(assignment=taken, rater=quicker.rater, value={"rating": 1})

        form = {"rating": "2", "assignment": mine.pk, "csrfmiddlewaretoken": csrf_from(page)}
        response = csrf_client.post(url(study, "item"), form, follow=True)
        body = response.content.decode()
        assert response.redirect_chain[-1][0] == url(study, "done")
        assert "handed to someone else" in body
        assert "No items left" in body
        shows_only(body, "EMPTY-2")
        assert not Judgment.objects.filter(assignment=mine).exists()


def squat(study, n: int) -> list[Enrollment]:
    """n made-up participant ids that each open one item and walk away."""
    squatters = [enroll_crowdworker(study=study, participant_id=f"squatter-{i}") for i in range(n)]
    for squatter in squatters:
        next_assignment(enrollment=squatter)
    return squatters


def expire_leases(study) -> None:
    Assignment.objects.filter(study=study, state=Assignment.State.LEASED).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


class TestSquatters:
    def test_a_worker_facing_squatted_items_waits_instead_of_finishing(self, csrf_client, make_study):
        study = make_study(n_items=3, quota_per_item=1, **CODES)
        squat(study, 3)
        enrollment = begin(csrf_client, study, "real-worker")
        page = csrf_client.get(url(study, "item"))
        body = page.content.decode()
        assert page.status_code == 200
        assert "More items may free up" in body
        assert 'hx-trigger="every 15s"' in body
        assert "DONE-1" not in body and "EMPTY-2" not in body
        enrollment.refresh_from_db()
        assert enrollment.completed_at is None

        # The squatters' leases run out: the next poll (an htmx GET) brings an item.
        expire_leases(study)
        card = csrf_client.get(url(study, "item"), HTTP_HX_REQUEST="true")
        assert card.status_code == 200
        assert 'name="assignment"' in card.content.decode()
        assert answer_all(csrf_client, study, {"rating": "2"}) == 3
        shows_only(csrf_client.get(url(study, "done")).content.decode(), "DONE-1")

    def test_a_waiting_worker_can_leave_and_come_back(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, **CODES)
        squat(study, 1)
        begin(csrf_client, study, "real-worker")
        assert "More items may free up" in csrf_client.get(url(study, "item")).content.decode()
        expire_leases(study)
        assert enter(csrf_client, study, "real-worker").status_code == 302
        page = csrf_client.get(url(study, "item"))
        assert 'name="assignment"' in page.content.decode()

    def test_a_participant_holds_one_lease_at_a_time(self, csrf_client, make_study):
        study = make_study(n_items=5, quota_per_item=1)
        enrollment = begin(csrf_client, study, "greedy")
        for _ in range(4):
            csrf_client.get(url(study, "item"))
            enter(csrf_client, study, "greedy")
        leases = Assignment.objects.filter(rater=enrollment.rater, state=Assignment.State.LEASED)
        assert leases.count() == 1

    def test_the_code_only_after_the_minimum_number_of_answers(self, csrf_client, make_study):
        study = make_study(n_items=3, quota_per_item=1, min_answers=3, **CODES)
        begin(csrf_client, study, "brief-visit")
        page = csrf_client.get(url(study, "item"))
        form = {"rating": "1", "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        csrf_client.post(url(study, "item"), form)
        # Someone else answers the other two items: this worker is left with one answer of three.
        fill_up(study)
        response = csrf_client.get(url(study, "item"), follow=True)
        body = response.content.decode()
        assert response.redirect_chain[-1][0] == url(study, "done")
        assert "DONE-1" not in body
        shows_only(body, "EMPTY-2")

    def test_enough_answers_get_the_code(self, csrf_client, make_study):
        study = make_study(n_items=3, quota_per_item=1, min_answers=3, **CODES)
        begin(csrf_client, study)
        assert answer_all(csrf_client, study, {"rating": "1"}) == 3
        shows_only(csrf_client.get(url(study, "done")).content.decode(), "DONE-1")
