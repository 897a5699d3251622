"""Prolific through its API, against a local server that refuses what Prolific refuses.

One study, four participants: one completed, one whose session ended on the
attention checks, one who returned the study and one who timed out, both
still holding an item. The researcher works from the crowd page.
"""

import re

import pytest
from django.urls import reverse

from annotation.models import Assignment, AuditEntry, Enrollment, Item, ProlificToken, Study
from annotation.privacy import study_pseudonyms
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker, enrollment_complete, enrollment_consent
from annotation.services.judgments import judgment_submit
from annotation.services.places import places_recount
from tests.conftest import build_study

from .conftest import TOKEN

PROLIFIC_STUDY = "a" * 24
DONE, FAILED, RETURNED, TIMED_OUT = ("1" * 24, "2" * 24, "3" * 24, "4" * 24)


def _csrf(client, url):
    page = client.get(url)
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)


def _enter(study, pid, *, answers):
    enrollment = enrollment_consent(enrollment=enroll_crowdworker(study=study, participant_id=pid))
    for _ in range(answers):
        nxt = next_assignment(enrollment=enrollment)
        judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 2}, duration_ms=3000)
    return enrollment


@pytest.fixture
def crowd(researcher, fake_prolific):
    study = build_study(researcher, n_items=4, quota_per_item=3, recruitment=Study.Recruitment.PROLIFIC)
    enrollment_complete(enrollment=_enter(study, DONE, answers=4))
    failed = _enter(study, FAILED, answers=1)
    Enrollment.objects.filter(pk=failed.pk).update(excluded=True, ended_early=True, excluded_reason="failed 3 checks")
    for pid in (RETURNED, TIMED_OUT):
        holder = _enter(study, pid, answers=1)
        assert next_assignment(enrollment=holder).assignment is not None  # an open lease on a second item
    for pid, status in (
        (DONE, "AWAITING REVIEW"),
        (FAILED, "AWAITING REVIEW"),
        (RETURNED, "RETURNED"),
        (TIMED_OUT, "TIMED-OUT"),
    ):
        fake_prolific.add(PROLIFIC_STUDY, pid, status)
    return study


@pytest.fixture
def page(csrf_client, researcher, crowd):
    csrf_client.force_login(researcher)
    url = reverse("crowd:page", args=[crowd.pk])

    def post(name, data, *args):
        target = reverse(f"crowd:{name}", args=[crowd.pk, *args])
        return csrf_client.post(target, {**data, "csrfmiddlewaretoken": _csrf(csrf_client, url)})

    assert post("token", {"token": TOKEN}).status_code == 302
    assert post("link", {"prolific_study_id": PROLIFIC_STUDY}).status_code == 302
    post.url = url
    post.client = csrf_client
    return post


def test_the_token_is_stored_encrypted_and_never_shown_again(page, researcher):
    stored = ProlificToken.objects.get(owner=researcher).token_encrypted
    assert TOKEN not in stored
    html = page.client.get(page.url).content.decode()
    assert TOKEN not in html and "A Prolific API token is stored" in html


def test_each_participant_shows_their_outcome_beside_their_submission(page, crowd):
    html = page.client.get(page.url).content.decode()
    aliases = study_pseudonyms(crowd, Enrollment.objects.filter(study=crowd).values_list("rater_id", flat=True))
    assert all(alias in html for alias in aliases.values())
    assert html.count("AWAITING REVIEW") == 2 and "RETURNED" in html and "TIMED-OUT" in html
    assert "ended on attention checks" in html and "finished" in html


def test_approve_reject_with_the_outcome_as_reason_and_free_the_places_of_those_who_left(page, crowd, fake_prolific):
    assert page("act", {}, "approve").status_code == 302
    assert fake_prolific.status_of(DONE) == "APPROVED"
    assert fake_prolific.status_of(FAILED) == "AWAITING REVIEW"  # never approved with the others

    # A message shorter than Prolific accepts is refused here, naming the field, and nothing is sent.
    short = page("act", {"message": "Too short."}, "reject")
    assert short.status_code == 400 and "message: Prolific asks for a message of at least 100" in short.content.decode()
    assert fake_prolific.status_of(FAILED) == "AWAITING REVIEW"

    assert page("act", {}, "reject").status_code == 302
    assert fake_prolific.status_of(FAILED) == "REJECTED"
    (sent,) = [body for method, path, body in fake_prolific.calls if body.get("action") == "REJECT"]
    assert sent["rejection_category"] == "FAILED_CHECK"
    assert len(sent["message"]) >= 100 and "ended on attention checks" in sent["message"]
    # Rejecting again: Prolific refuses a transition from REJECTED, and nothing is due anyway.
    assert page("act", {}, "reject").status_code == 302

    open_before = Assignment.objects.filter(study=crowd, state=Assignment.State.LEASED).count()
    taken_before = sum(Item.objects.filter(study=crowd).values_list("places_taken", flat=True))
    assert open_before == 2
    assert page("act", {}, "free").status_code == 302
    assert Assignment.objects.filter(study=crowd, state=Assignment.State.LEASED).count() == 0
    assert sum(Item.objects.filter(study=crowd).values_list("places_taken", flat=True)) == taken_before - 2
    assert places_recount(study=crowd) == {}
    # Answers already given stay; the rejected participant's are excluded, the returned one's still count.
    assert Enrollment.objects.get(study=crowd, rater__external_id=FAILED).excluded
    assert not Enrollment.objects.get(study=crowd, rater__external_id=RETURNED).excluded
    assert AuditEntry.objects.filter(study=crowd, action=AuditEntry.Action.PROLIFIC_REVIEWED).count() == 2


def test_bonuses_are_set_up_then_paid_once_and_a_bad_line_is_named(page, crowd, fake_prolific):
    done_rater = Enrollment.objects.get(study=crowd, rater__external_id=DONE).rater_id
    alias = study_pseudonyms(crowd, [done_rater])[done_rater]
    bad = page("act", {"bonuses": f"{alias},1.50\nP-00000000,2"}, "bonus")
    assert bad.status_code == 400 and "Line 2: p-00000000 is not a participant" in bad.content.decode()
    assert page("act", {"bonuses": f"{alias},abc"}, "bonus").status_code == 400
    assert fake_prolific.bonuses == {}
    assert page("act", {"bonuses": f"{alias},1.50\n{FAILED},0.25"}, "bonus").status_code == 302
    ((payment_id, payment),) = fake_prolific.bonuses.items()
    assert payment["lines"] == [[DONE, "1.50"], [FAILED, "0.25"]]
    assert fake_prolific.paid == [payment_id]


def test_a_token_prolific_refuses_and_an_unknown_study_are_said_plainly(page, crowd, fake_prolific):
    assert page("link", {"prolific_study_id": "not-an-id"}).status_code == 400
    assert page("link", {"prolific_study_id": "b" * 24}).status_code == 302
    unknown = page("act", {}, "approve")
    assert unknown.status_code == 400 and "does not know this study" in unknown.content.decode()
    assert page("token", {"token": "wrong-token"}).status_code == 302
    refused = page("act", {}, "approve")
    assert refused.status_code == 400 and "refused the token (401)" in refused.content.decode()
    assert "wrong-token" not in refused.content.decode()
