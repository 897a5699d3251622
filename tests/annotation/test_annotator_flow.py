"""The annotator's path around the items: entry links, consent, instructions, completion, leaderboard."""

import re

import pytest
from django.core.cache import cache
from django.test import Client, override_settings

from annotation.models import Enrollment, Judgment, Rater
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import ItemSpec, items_create, study_set_state

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ASSIGNMENT = re.compile(r'name="assignment" value="(\d+)"')


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    # The entry rate limit counts in the cache, which outlives a single test.
    cache.clear()
    yield
    cache.clear()


# -- helpers shared with test_annotator_item.py ----------------------------------------


def url(study, step: str = "") -> str:
    return f"/s/{study.entry_token}/{step + '/' if step else ''}"


def csrf_from(response) -> str:
    match = CSRF.search(response.content.decode())
    assert match, "the page has no CSRF token"
    return match.group(1)


def assignment_from(response) -> int:
    match = ASSIGNMENT.search(response.content.decode())
    assert match, "the page has no item form"
    return int(match.group(1))


def enter(client, study, pid="worker-1"):
    return client.get(url(study), {"PROLIFIC_PID": pid, "STUDY_ID": "prolific-study", "SESSION_ID": "sess-1"})


def post_from_page(client, page_url: str, data: dict, **extra):
    """POST the way a browser does: with the CSRF token of the page the form is on."""
    page = client.get(page_url)
    return client.post(page_url, {**data, "csrfmiddlewaretoken": csrf_from(page)}, **extra)


def begin(client, study, pid="worker-1") -> Enrollment:
    """Enter, consent and read the instructions; the next GET of the item page shows an item."""
    assert enter(client, study, pid).status_code == 302
    assert post_from_page(client, url(study, "consent"), {"decision": "agree"}).status_code == 302
    assert post_from_page(client, url(study, "instructions"), {}).status_code == 302
    return Enrollment.objects.get(study=study, rater__external_id=pid)


def answer_all(client, study, data: dict) -> int:
    """Answer every item the rater gets with the same form data; the number answered."""
    answered = 0
    while True:
        page = client.get(url(study, "item"))
        if page.status_code == 302:
            return answered
        assert page.status_code == 200
        data_with_ids = {**data, "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        assert client.post(url(study, "item"), data_with_ids).status_code == 302
        answered += 1


# -- entry ----------------------------------------------------------------------------


class TestCrowdEntry:
    def test_it_enrols_the_worker_and_sends_them_to_consent(self, csrf_client, make_study):
        study = make_study()
        response = enter(csrf_client, study, "PID-42")
        assert response.status_code == 302
        assert response["Location"] == url(study, "consent")
        enrollment = Enrollment.objects.get(study=study)
        assert enrollment.rater.kind == Rater.Kind.CROWD
        assert enrollment.rater.external_id == "PID-42"
        assert enrollment.entry_params == {"STUDY_ID": "prolific-study", "SESSION_ID": "sess-1"}

    def test_a_returning_worker_resumes_the_item_they_were_on(self, csrf_client, make_study):
        study = make_study(n_items=4)
        begin(csrf_client, study, "PID-7")
        first = csrf_client.get(url(study, "item"))
        post_data = {"rating": "2", "assignment": assignment_from(first), "csrfmiddlewaretoken": csrf_from(first)}
        csrf_client.post(url(study, "item"), post_data)
        current = assignment_from(csrf_client.get(url(study, "item")))

        elsewhere = Client(enforce_csrf_checks=True)  # another browser, same participant id
        response = enter(elsewhere, study, "PID-7")
        page = elsewhere.get(response["Location"], follow=True)
        assert page.redirect_chain[-1][0] == url(study, "item")
        assert assignment_from(page) == current
        assert Enrollment.objects.filter(study=study).count() == 1
        assert Judgment.objects.filter(study=study).count() == 1

    def test_it_refuses_a_link_without_a_participant_id(self, client, make_study):
        study = make_study()
        response = client.get(url(study), {"STUDY_ID": "x"})
        assert response.status_code == 400
        assert "This link needs your participant id" in response.content.decode()
        assert not Enrollment.objects.exists()

    def test_a_closed_study_says_so_kindly(self, client, make_study):
        study = make_study()
        study_set_state(study=study, state="closed")
        response = enter(client, study)
        assert response.status_code == 200
        assert "This study is closed" in response.content.decode()
        assert not Enrollment.objects.exists()

    def test_a_draft_study_is_not_open_yet(self, client, make_study):
        study = make_study(open_=False)
        response = enter(client, study)
        assert "has not started yet" in response.content.decode()
        assert not Enrollment.objects.exists()

    def test_an_unknown_link_is_not_found(self, client, db):
        assert client.get("/s/no-such-token/", {"PROLIFIC_PID": "p"}).status_code == 404

    @override_settings(FUNNYBONE_ENTRY_RATE_PER_MINUTE=2)
    def test_it_limits_entries_per_client_address(self, client, make_study):
        study = make_study()
        assert enter(client, study, "a").status_code == 302
        assert enter(client, study, "b").status_code == 302
        refused = enter(client, study, "c")
        assert refused.status_code == 429
        assert refused["Retry-After"] == "60"
        assert "Too many requests" in refused.content.decode()
        assert not Rater.objects.filter(external_id="c").exists()
        other_network = Client(REMOTE_ADDR="192.0.2.9")
        assert enter(other_network, study, "c").status_code == 302


# -- the steps --------------------------------------------------------------------------


class TestConsent:
    def test_it_shows_the_consent_text_escaped_with_its_line_breaks(self, client, make_study):
        study = make_study(consent_text="You agree to <b>laugh</b>.\nSecond line & more.")
        enter(client, study)
        page = client.get(url(study, "consent")).content.decode()
        assert "You agree to &lt;b&gt;laugh&lt;/b&gt;.<br>Second line &amp; more." in page
        assert "<b>laugh</b>" not in page

    def test_agreeing_records_consent_and_moves_on(self, csrf_client, make_study):
        study = make_study()
        enter(csrf_client, study)
        response = post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        assert response["Location"] == url(study, "instructions")
        assert Enrollment.objects.get().consented_at is not None

    def test_declining_ends_politely_without_consent(self, csrf_client, make_study):
        study = make_study()
        enter(csrf_client, study)
        response = post_from_page(csrf_client, url(study, "consent"), {"decision": "decline"}, follow=True)
        assert "Thank you for considering this study" in response.content.decode()
        assert Enrollment.objects.get().consented_at is None
        assert csrf_client.get(url(study, "item"))["Location"] == url(study, "consent")

    def test_it_refuses_a_post_without_the_csrf_token(self, csrf_client, make_study):
        study = make_study()
        enter(csrf_client, study)
        assert csrf_client.post(url(study, "consent"), {"decision": "agree"}).status_code == 403
        assert Enrollment.objects.get().consented_at is None

    def test_without_a_session_it_asks_for_the_study_link(self, client, make_study):
        study = make_study()
        response = client.get(url(study, "consent"))
        assert response.status_code == 403
        assert "open the study again from the link" in response.content.decode()


class TestStepOrder:
    def test_the_item_page_sends_a_worker_who_has_not_consented_to_consent(self, client, make_study):
        study = make_study()
        enter(client, study)
        assert client.get(url(study, "item"))["Location"] == url(study, "consent")
        assert client.get(url(study, "instructions"))["Location"] == url(study, "consent")
        assert client.get(url(study, "done"))["Location"] == url(study, "consent")

    def test_the_item_page_sends_a_worker_who_has_not_read_the_instructions_there(self, csrf_client, make_study):
        study = make_study()
        enter(csrf_client, study)
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        assert csrf_client.get(url(study, "item"))["Location"] == url(study, "instructions")

    def test_going_back_to_consent_after_starting_returns_to_the_item(self, csrf_client, make_study):
        study = make_study()
        begin(csrf_client, study)
        assert csrf_client.get(url(study, "consent"))["Location"] == url(study, "item")
        assert csrf_client.get(url(study, "instructions"))["Location"] == url(study, "item")
        assert csrf_client.get(url(study, "done"))["Location"] == url(study, "item")

    def test_a_finished_rater_stays_on_the_completion_page(self, csrf_client, make_study):
        study = make_study(n_items=1)
        begin(csrf_client, study)
        answer_all(csrf_client, study, {"rating": "1"})
        assert csrf_client.get(url(study, "item"))["Location"] == url(study, "done")
        assert csrf_client.get(url(study, "consent"))["Location"] == url(study, "done")


class TestInstructions:
    def test_it_shows_the_instructions_and_the_keyboard_shortcuts(self, csrf_client, make_study):
        study = make_study(task_type="pairwise", n_candidates=2, instructions_text="Pick the <funnier> one.")
        enter(csrf_client, study)
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        page = csrf_client.get(url(study, "instructions")).content.decode()
        assert "Pick the &lt;funnier&gt; one." in page
        assert "Keyboard shortcuts" in page
        assert "<kbd>1</kbd> or <kbd>A</kbd>" in page
        assert "<kbd>3</kbd> or <kbd>T</kbd>" in page

    def test_starting_records_the_time_and_opens_the_first_item(self, csrf_client, make_study):
        study = make_study()
        enter(csrf_client, study)
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        response = post_from_page(csrf_client, url(study, "instructions"), {})
        assert response["Location"] == url(study, "item")
        assert Enrollment.objects.get().instructed_at is not None


class TestCompletion:
    def test_it_shows_the_completion_code_after_the_last_item(self, csrf_client, make_study):
        study = make_study(n_items=3, completion_code="FUNNY-123")
        enrollment = begin(csrf_client, study)
        assert answer_all(csrf_client, study, {"rating": "3"}) == 3
        page = csrf_client.get(url(study, "done")).content.decode()
        assert "FUNNY-123" in page
        assert 'http-equiv="refresh"' not in page
        enrollment.refresh_from_db()
        assert enrollment.completed_at is not None

    def test_it_sends_the_worker_back_when_a_redirect_is_configured(self, csrf_client, make_study):
        back = "https://app.example.org/submissions/complete?cc=FUNNY-9"
        study = make_study(n_items=1, completion_code="FUNNY-9", completion_redirect_url=back)
        begin(csrf_client, study)
        answer_all(csrf_client, study, {"rating": "0"})
        page = csrf_client.get(url(study, "done")).content.decode()
        assert f'<meta http-equiv="refresh" content="10;url={back}">' in page
        assert f'href="{back}"' in page

    def test_the_per_rater_cap_ends_with_the_code(self, csrf_client, make_study):
        study = make_study(n_items=5, per_rater_cap=2, completion_code="CAP-OK")
        begin(csrf_client, study)
        assert answer_all(csrf_client, study, {"rating": "1"}) == 2
        assert "CAP-OK" in csrf_client.get(url(study, "done")).content.decode()

    def test_a_session_ended_by_attention_checks_gets_no_code(self, csrf_client, make_study):
        study = make_study(
            n_items=4, attention_check_rate=0.5, attention_check_policy="end", completion_code="NOPE-1", open_=False
        )
        items_create(
            study=study,
            items=[ItemSpec(external_id="check", text="Please press 0.", gold={"rating": 0}, is_attention_check=True)],
        )
        study_set_state(study=study, state="open")
        begin(csrf_client, study)
        answer_all(csrf_client, study, {"rating": "3"})  # fails the check, which ends the session
        page = csrf_client.get(url(study, "done")).content.decode()
        assert "Your session has ended" in page
        assert "NOPE-1" not in page
        assert Enrollment.objects.get().ended_early

    def test_a_worker_with_nothing_to_do_hears_so_without_a_code(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, completion_code="EMPTY-1")
        early = enroll_crowdworker(study=study, participant_id="early-bird")
        taken = next_assignment(enrollment=early).assignment
        judgment_submit(assignment=taken, rater=early.rater, value={"rating": 2})
        # A full study says so before consent (tests/annotation/test_completion_codes.py has more).
        response = csrf_client.get(url(study), {"PROLIFIC_PID": "late-comer"}, follow=True)
        page = response.content.decode()
        assert response.redirect_chain[-1][0] == url(study, "done")
        assert "No items left" in page
        assert "EMPTY-1" not in page

    def test_a_study_closed_midway_says_so_without_a_code(self, csrf_client, make_study):
        study = make_study(n_items=3, completion_code="SHUT-1")
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        study_set_state(study=study, state="closed")
        data = {"rating": "1", "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        response = csrf_client.post(url(study, "item"), data, follow=True)
        body = response.content.decode()
        assert "This study is closed" in body
        assert "SHUT-1" not in body
        assert not Judgment.objects.exists()


class TestLeaderboard:
    def _voted(self, make_study):
        study = make_study(task_type="vote_allocation", n_items=1, n_candidates=3, quota_per_item=5)
        for pid, votes in (("v1", {"c2": 2, "c0": 1}), ("v2", {"c2": 1}), ("v3", {"c0": 1})):
            enrollment = enroll_crowdworker(study=study, participant_id=pid)
            assignment = next_assignment(enrollment=enrollment).assignment
            judgment_submit(assignment=assignment, rater=enrollment.rater, value={"votes": votes})
        return study

    def test_it_stays_hidden_while_voting_is_open(self, client, make_study):
        study = self._voted(make_study)
        page = client.get(url(study, "leaderboard")).content.decode()
        assert "available after voting closes" in page
        assert "Joke 0-" not in page
        assert "votes in all" not in page

    def test_it_ranks_the_responses_by_votes_once_closed(self, client, make_study):
        study = self._voted(make_study)
        study_set_state(study=study, state="closed")
        page = client.get(url(study, "leaderboard")).content.decode()
        first, second, third = (page.index(f"Joke 0-{j} about a cat.") for j in (2, 0, 1))
        assert first < second < third
        assert "3 votes" in page
        assert "0 votes" in page
        assert "5 votes in all" in page
        assert "secret-model" not in page

    def test_a_closed_vote_study_links_to_it(self, client, make_study):
        study = self._voted(make_study)
        study_set_state(study=study, state="closed")
        assert url(study, "leaderboard") in enter(client, study).content.decode()

    def test_other_task_types_have_none(self, client, make_study):
        study = make_study(task_type="ordinal")
        study_set_state(study=study, state="closed")
        assert client.get(url(study, "leaderboard")).status_code == 404
