"""The short annotator lease: renewed by the open item page, lost once someone else took the item."""

import re
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Item, Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker, enroll_preview
from annotation.services.judgments import judgment_submit
from annotation.services.leases import heartbeat_seconds, lease_renew
from annotation.services.places import holding_filter, take_place
from annotation.services.studies import ItemSpec, items_create, study_set_state
from tests.annotation.test_annotator_flow import assignment_from, begin, csrf_from, url

pytestmark = pytest.mark.django_db


def lapse(assignment: Assignment) -> None:
    Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def live_leases(study, rater=None) -> int:
    qs = Assignment.objects.filter(study=study, state=Assignment.State.LEASED)
    if rater is not None:
        qs = qs.filter(rater=rater)
    return qs.count()


class TestLeaseLength:
    def test_the_page_beats_three_times_in_a_lease(self, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 180
        assert heartbeat_seconds() == 60
        settings.FUNNYBONE_LEASE_SECONDS = 6
        assert heartbeat_seconds() == 2

    def test_a_new_lease_runs_for_the_configured_seconds(self, make_study, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 120
        study = make_study(n_items=2)
        before = timezone.now()
        held = next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="p1")).assignment
        assert timedelta(seconds=119) < held.lease_expires_at - before <= timedelta(seconds=121)


class TestLeaseRenew:
    def test_it_extends_the_raters_own_lease(self, make_study, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 60
        study = make_study(n_items=2)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        held = next_assignment(enrollment=enrollment).assignment
        later = timezone.now() + timedelta(seconds=50)
        renewal = lease_renew(enrollment=enrollment, assignment_id=held.pk, now=later)
        assert renewal.renewed and renewal.reason == ""
        held.refresh_from_db()
        assert held.lease_expires_at == later + timedelta(seconds=60)
        assert held.state == Assignment.State.LEASED

    def test_a_renewed_item_is_not_handed_to_anyone_else(self, make_study, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 60
        study = make_study(n_items=1, quota_per_item=1)
        keeper = enroll_crowdworker(study=study, participant_id="keeper")
        held = next_assignment(enrollment=keeper).assignment
        # Without the renewal the lease would have run out 10 s before this.
        lease_renew(enrollment=keeper, assignment_id=held.pk, now=timezone.now() + timedelta(seconds=50))
        other = enroll_crowdworker(study=study, participant_id="other")
        later = timezone.now() + timedelta(seconds=70)
        assert next_assignment(enrollment=other, now=later).reason == "waiting"

    def test_a_lapsed_lease_nobody_took_is_taken_up_again(self, make_study):
        study = make_study(n_items=1, quota_per_item=1)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        held = next_assignment(enrollment=enrollment).assignment
        lapse(held)
        assert lease_renew(enrollment=enrollment, assignment_id=held.pk).renewed
        held.refresh_from_db()
        assert held.lease_expires_at > timezone.now()

    def test_a_lease_lost_to_someone_else_is_refused_and_let_go(self, make_study):
        study = make_study(n_items=2, quota_per_item=1)
        slow = enroll_crowdworker(study=study, participant_id="slow")
        held = next_assignment(enrollment=slow).assignment
        lapse(held)
        others = [enroll_crowdworker(study=study, participant_id=f"other-{n}") for n in range(2)]
        taken = [next_assignment(enrollment=e).assignment for e in others]
        assert held.item_id in {a.item_id for a in taken}
        renewal = lease_renew(enrollment=slow, assignment_id=held.pk)
        assert (renewal.renewed, renewal.reason) == (False, "lost")
        held.refresh_from_db()
        assert held.state == Assignment.State.RELEASED
        # ... and stays refused: the page is told once and for all.
        assert lease_renew(enrollment=slow, assignment_id=held.pk).reason == "lost"

    def test_an_answered_item_has_nothing_to_renew(self, make_study):
        study = make_study(n_items=2)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        held = next_assignment(enrollment=enrollment).assignment
        judgment_submit(assignment=held, rater=enrollment.rater, value={"rating": 1})
        assert lease_renew(enrollment=enrollment, assignment_id=held.pk).reason == "done"

    def test_a_closed_study_renews_nothing(self, make_study):
        study = make_study(n_items=2)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        held = next_assignment(enrollment=enrollment).assignment
        study_set_state(study=study, state=study.State.CLOSED)
        assert lease_renew(enrollment=enrollment, assignment_id=held.pk).reason == "closed"

    def test_it_refuses_another_raters_assignment(self, make_study):
        study = make_study(n_items=2)
        mine = enroll_crowdworker(study=study, participant_id="me")
        theirs = next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="them")).assignment
        with pytest.raises(Assignment.DoesNotExist):
            lease_renew(enrollment=mine, assignment_id=theirs.pk)

    def test_a_preview_takes_up_its_lapsed_lease_whatever_the_quota(self, make_study, researcher):
        study = make_study(n_items=1, quota_per_item=1)
        preview = enroll_preview(study=study, user=researcher)
        held = next_assignment(enrollment=preview).assignment
        lapse(held)
        next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="worker"))
        assert lease_renew(enrollment=preview, assignment_id=held.pk).renewed


class TestOneLeaseAtATime:
    def test_a_rater_asking_again_and_again_holds_one_lease(self, make_study):
        study = make_study(n_items=5)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        for _ in range(4):
            next_assignment(enrollment=enrollment)
        assert live_leases(study, enrollment.rater) == 1

    def test_a_rater_whose_item_was_lost_gets_another_and_still_holds_one(self, make_study):
        study = make_study(n_items=3, quota_per_item=1)
        slow = enroll_crowdworker(study=study, participant_id="slow")
        held = next_assignment(enrollment=slow).assignment
        lapse(held)
        fast = enroll_crowdworker(study=study, participant_id="fast")
        # Someone else took the lapsed item's place, as a request meeting it does (under the item's
        # lock: the expired lease is released, its place taken), and answered it.
        with transaction.atomic():
            item = Item.objects.select_for_update().get(pk=held.item_id)
            assert take_place(item, study.quota_per_item, timezone.now())
            Assignment.objects.create(
                study=study,
                item_id=held.item_id,
                rater=fast.rater,
                state=Assignment.State.DONE,
                leased_at=timezone.now(),
                lease_expires_at=timezone.now(),
            )
        fresh = next_assignment(enrollment=slow).assignment
        assert fresh.item_id != held.item_id
        assert live_leases(study, slow.rater) == 1
        held.refresh_from_db()
        assert held.state == Assignment.State.RELEASED

    def test_an_attention_check_is_not_a_second_lease(self, make_study):
        study = make_study(n_items=6, attention_check_rate=0.5, open_=False)
        items_create(
            study=study,
            items=[ItemSpec(external_id="check-1", text="Press 3", gold={"rating": 3}, is_attention_check=True)],
        )
        study_set_state(study=study, state=study.State.OPEN)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        kinds = []
        for _ in range(4):
            nxt = next_assignment(enrollment=enrollment)
            next_assignment(enrollment=enrollment)
            assert live_leases(study, enrollment.rater) == 1
            kinds.append(nxt.assignment.item.is_attention_check)
            judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 3})
        assert True in kinds


@pytest.mark.django_db(transaction=True)
class TestConcurrentRenewal:
    @pytest.fixture(autouse=True)
    def _postgres(self):
        from tests.conftest import require_postgres

        require_postgres()

    def _race(self, *targets) -> list:
        from django.db import connection

        barrier = threading.Barrier(len(targets))
        results: list = [None] * len(targets)
        errors: list[BaseException] = []

        def run(n: int, target) -> None:
            try:
                barrier.wait(timeout=30)
                results[n] = target()
            except BaseException as exc:
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=run, args=(n, t)) for n, t in enumerate(targets)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        return results

    def test_two_tabs_of_one_rater_asking_at_once_lease_one_item(self, researcher):
        from tests.conftest import build_study

        study = build_study(researcher, n_items=6)
        enrollment = enroll_crowdworker(study=study, participant_id="two-tabs")
        results = self._race(*[lambda: next_assignment(enrollment=enrollment).assignment.pk] * 6)
        assert len(set(results)) == 1
        assert live_leases(study, enrollment.rater) == 1

    def test_a_lapsed_renewal_and_a_new_lease_never_both_hold_the_last_place(self, researcher):
        from tests.conftest import build_study

        for round_ in range(5):
            study = build_study(researcher, n_items=1, quota_per_item=1, name=f"race {round_}")
            slow = enroll_crowdworker(study=study, participant_id=f"slow-{round_}")
            held = next_assignment(enrollment=slow).assignment
            lapse(held)
            newcomer = enroll_crowdworker(study=study, participant_id=f"new-{round_}")
            renewal, taken = self._race(
                lambda slow=slow, held=held: lease_renew(enrollment=slow, assignment_id=held.pk),
                lambda newcomer=newcomer: next_assignment(enrollment=newcomer).assignment,
            )
            holders = Assignment.objects.filter(item__study=study).filter(holding_filter(timezone.now())).count()
            assert holders == 1
            assert renewal.renewed == (taken is None)


class TestLeaseEndpoint:
    def test_the_item_page_beats_with_the_assignment_it_shows(self, csrf_client, make_study, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 90
        study = make_study(n_items=2)
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        html = page.content.decode()
        assert f'hx-post="{url(study, "lease")}"' in html
        assert 'hx-trigger="every 30s"' in html
        assert f'"assignment": "{assignment_from(page)}"' in html

    def test_it_renews_the_lease_with_the_pages_csrf_token(self, csrf_client, make_study):
        study = make_study(n_items=2)
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        assignment_id = assignment_from(page)
        Assignment.objects.filter(pk=assignment_id).update(lease_expires_at=timezone.now() + timedelta(seconds=5))
        response = csrf_client.post(
            url(study, "lease"),
            {"assignment": assignment_id},
            headers={"X-CSRFToken": csrf_from(page), "HX-Request": "true"},
        )
        assert response.status_code == 204
        assert Assignment.objects.get(pk=assignment_id).lease_expires_at > timezone.now() + timedelta(seconds=60)

    def test_it_refuses_a_post_without_the_csrf_token(self, csrf_client, make_study):
        study = make_study(n_items=2)
        begin(csrf_client, study)
        assignment_id = assignment_from(csrf_client.get(url(study, "item")))
        before = Assignment.objects.get(pk=assignment_id).lease_expires_at
        assert csrf_client.post(url(study, "lease"), {"assignment": assignment_id}).status_code == 403
        assert Assignment.objects.get(pk=assignment_id).lease_expires_at == before

    def test_it_answers_get_with_405(self, csrf_client, make_study):
        study = make_study(n_items=2)
        begin(csrf_client, study)
        assert csrf_client.get(url(study, "lease")).status_code == 405

    def test_it_refuses_someone_elses_assignment_and_a_missing_one(self, csrf_client, make_study):
        study = make_study(n_items=3)
        theirs = next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="them")).assignment
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        headers = {"X-CSRFToken": csrf_from(page)}
        before = Assignment.objects.get(pk=theirs.pk).lease_expires_at
        assert csrf_client.post(url(study, "lease"), {"assignment": theirs.pk}, headers=headers).status_code == 404
        assert csrf_client.post(url(study, "lease"), {"assignment": "x"}, headers=headers).status_code == 404
        assert csrf_client.post(url(study, "lease"), {}, headers=headers).status_code == 404
        assert Assignment.objects.get(pk=theirs.pk).lease_expires_at == before

    def test_it_needs_the_raters_session(self, csrf_client, make_study):
        study = make_study(n_items=2)
        held = next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="p1")).assignment
        page = csrf_client.get(url(study, "consent"))  # any page hands out a CSRF cookie
        assert page.status_code == 403
        response = csrf_client.post(
            url(study, "lease"),
            {"assignment": held.pk},
            headers={"X-CSRFToken": csrf_client.cookies["csrftoken"].value},
        )
        assert response.status_code == 403

    def test_a_lost_lease_tells_the_page_and_stops_its_polling(self, csrf_client, make_study):
        study = make_study(n_items=2, quota_per_item=1)
        begin(csrf_client, study)
        page = csrf_client.get(url(study, "item"))
        assignment_id = assignment_from(page)
        Assignment.objects.filter(pk=assignment_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        for n in range(2):
            next_assignment(enrollment=enroll_crowdworker(study=study, participant_id=f"other-{n}"))
        response = csrf_client.post(
            url(study, "lease"),
            {"assignment": assignment_id},
            headers={"X-CSRFToken": csrf_from(page), "HX-Request": "true"},
        )
        assert response.status_code == 286  # htmx stops polling on 286
        html = response.content.decode()
        assert "went to someone else" in html and 'role="alert"' in html
        assert f'href="{url(study, "item")}"' in html
        assert not Judgment.objects.exists()


class TestOneHomeForTheLeaseExpiry:
    """When a lease runs out is decided in annotation.services.leases alone (``lease_expiry``)."""

    SOURCES = ("annotation", "judging", "ratings")
    HAND_MADE = re.compile(r"lease_expires_at\W+\s*(?:=|:)\s*[^\n,]*timedelta|FUNNYBONE_LEASE_SECONDS")

    def test_no_module_but_the_lease_home_computes_an_expiry(self):
        root = Path(settings.BASE_DIR)
        found = [
            f"{path.relative_to(root)}:{text.count(chr(10), 0, match.start()) + 1}"
            for source in self.SOURCES
            for path in (root / source).rglob("*.py")
            if path.name != "leases.py" and "migrations" not in path.parts
            for text in [path.read_text()]
            for match in self.HAND_MADE.finditer(text)
        ]
        assert not found, f"use services.leases.lease_expiry: {found}"
        assert self.HAND_MADE.search('"lease_expires_at": now + timedelta(seconds=_lease_seconds()),')

    def test_a_returning_raters_lapsed_lease_runs_again_for_the_configured_time(self, make_study, settings):
        settings.FUNNYBONE_LEASE_SECONDS = 77
        study = make_study(n_items=2)
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        held = next_assignment(enrollment=enrollment).assignment
        back = timezone.now() + timedelta(seconds=200)
        resumed = next_assignment(enrollment=enrollment, now=back).assignment
        assert resumed.pk == held.pk and resumed.lease_expires_at == back + timedelta(seconds=77)
