from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import Assignment, Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit, value_from_form

pytestmark = pytest.mark.django_db


def answer(enrollment, value=None):
    nxt = next_assignment(enrollment=enrollment)
    assert nxt.assignment is not None, nxt.reason
    return judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value=value or {"rating": 2})


class TestNextAssignment:
    def test_each_item_gets_exactly_its_quota(self, make_study):
        study = make_study(n_items=3, quota_per_item=2)
        enrollments = [enroll_crowdworker(study=study, participant_id=f"p{i}") for i in range(5)]
        for e in enrollments:
            while (nxt := next_assignment(enrollment=e)).assignment:
                judgment_submit(assignment=nxt.assignment, rater=e.rater, value={"rating": 1})
        per_item = {i.pk: i.judgments.count() for i in study.items.all()}
        assert set(per_item.values()) == {2}
        assert Judgment.objects.count() == 6

    def test_a_rater_never_gets_the_same_item_twice(self, make_study):
        study = make_study(n_items=4, quota_per_item=4)
        e = enroll_crowdworker(study=study, participant_id="p1")
        seen = []
        while (nxt := next_assignment(enrollment=e)).assignment:
            seen.append(nxt.assignment.item_id)
            judgment_submit(assignment=nxt.assignment, rater=e.rater, value={"rating": 0})
        assert sorted(seen) == sorted(study.items.values_list("pk", flat=True))
        assert next_assignment(enrollment=e).reason == "exhausted"

    def test_a_returning_rater_resumes_the_same_item(self, make_study):
        study = make_study(n_items=4)
        e = enroll_crowdworker(study=study, participant_id="p1")
        first = next_assignment(enrollment=e).assignment
        again = next_assignment(enrollment=e).assignment
        assert first.pk == again.pk

    def test_the_per_rater_cap_stops_handing_out_items(self, make_study):
        study = make_study(n_items=5, per_rater_cap=2)
        e = enroll_crowdworker(study=study, participant_id="p1")
        answer(e)
        answer(e)
        assert next_assignment(enrollment=e).reason == "cap_reached"

    def test_an_expired_lease_frees_the_item_for_someone_else(self, make_study):
        study = make_study(n_items=1, quota_per_item=1)
        slow = enroll_crowdworker(study=study, participant_id="slow")
        fast = enroll_crowdworker(study=study, participant_id="fast")
        held = next_assignment(enrollment=slow).assignment
        assert next_assignment(enrollment=fast).assignment is None
        Assignment.objects.filter(pk=held.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        taken = next_assignment(enrollment=fast).assignment
        assert taken.item_id == held.item_id
        judgment_submit(assignment=taken, rater=fast.rater, value={"rating": 3})
        with pytest.raises(ValidationError):
            judgment_submit(assignment=held, rater=slow.rater, value={"rating": 1})
        assert Judgment.objects.filter(item_id=held.item_id).count() == 1

    def test_candidate_order_is_recorded_and_reproducible(self, make_study):
        study = make_study(task_type="pairwise", n_items=6, n_candidates=2, quota_per_item=1)
        e = enroll_crowdworker(study=study, participant_id="p1")
        orders = []
        while (nxt := next_assignment(enrollment=e)).assignment:
            a = nxt.assignment
            assert sorted(a.shown_order) == ["c0", "c1"]
            orders.append(tuple(a.shown_order))
            judgment_submit(assignment=a, rater=e.rater, value={"choice": "tie"})
        assert len(orders) == 6
        # the order is a pure function of seed, rater and item
        from annotation.services.assignment import _candidate_order

        a = Assignment.objects.filter(rater=e.rater).first()
        assert _candidate_order(study, e.rater, a.item) == a.shown_order


class TestJudgmentSubmit:
    def test_a_double_submit_stores_one_judgment(self, make_study):
        study = make_study(n_items=2)
        e = enroll_crowdworker(study=study, participant_id="p1")
        a = next_assignment(enrollment=e).assignment
        first = judgment_submit(assignment=a, rater=e.rater, value={"rating": 2})
        second = judgment_submit(assignment=a, rater=e.rater, value={"rating": 0})
        assert first.created and not second.created
        assert Judgment.objects.get().value == {"rating": 2}

    def test_it_rejects_a_rating_outside_the_scale(self, make_study):
        study = make_study(n_items=2)
        e = enroll_crowdworker(study=study, participant_id="p1")
        a = next_assignment(enrollment=e).assignment
        with pytest.raises(ValidationError, match="outside the scale"):
            judgment_submit(assignment=a, rater=e.rater, value={"rating": 4})
        assert not Judgment.objects.exists()

    def test_a_pairwise_form_posts_the_shown_position_not_the_key(self, make_study):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        e = enroll_crowdworker(study=study, participant_id="p1")
        a = next_assignment(enrollment=e).assignment
        value = value_from_form(assignment=a, data={"choice": "1"})
        assert value == {"choice": a.shown_order[1]}

    def test_another_raters_assignment_is_refused(self, make_study):
        from django.core.exceptions import PermissionDenied

        study = make_study(n_items=2)
        e1 = enroll_crowdworker(study=study, participant_id="p1")
        e2 = enroll_crowdworker(study=study, participant_id="p2")
        a = next_assignment(enrollment=e1).assignment
        with pytest.raises(PermissionDenied):
            judgment_submit(assignment=a, rater=e2.rater, value={"rating": 1})


class TestAttentionChecks:
    def _study(self, make_study, policy):
        from annotation.services.studies import ItemSpec, items_create

        study = make_study(n_items=6, attention_check_rate=0.5, attention_check_policy=policy, open_=False)
        items_create(
            study=study,
            items=[ItemSpec(external_id="check-1", text="Press 0", gold={"rating": 0}, is_attention_check=True)],
        )
        study.state = "open"
        study.save()
        return study

    def test_failing_a_check_ends_the_session_under_the_end_policy(self, make_study):
        study = self._study(make_study, "end")
        e = enroll_crowdworker(study=study, participant_id="p1")
        answer(e)
        check = next_assignment(enrollment=e).assignment
        assert check.item.is_attention_check
        judgment_submit(assignment=check, rater=e.rater, value={"rating": 3})
        e.refresh_from_db()
        assert e.excluded and e.ended_early
        assert next_assignment(enrollment=e).reason == "ended"
        assert Judgment.objects.filter(rater=e.rater).count() == 2  # flagged, never deleted

    def test_passing_a_check_keeps_the_rater_in(self, make_study):
        study = self._study(make_study, "flag")
        e = enroll_crowdworker(study=study, participant_id="p1")
        answer(e)
        check = next_assignment(enrollment=e).assignment
        judgment_submit(assignment=check, rater=e.rater, value={"rating": 0})
        e.refresh_from_db()
        assert not e.excluded
        assert Judgment.objects.get(item=check.item).attention_passed is True


class TestTheWalk:
    """How a rater finds the next item on their walk: a stretch of positions per lookup, each stretch
    longer than the last that found nothing."""

    @pytest.mark.parametrize("order", ["as_listed", "shared_random", "random_per_rater"])
    def test_a_late_joiner_past_2000_full_items_takes_their_place_in_a_few_lookups(self, make_study, order):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from annotation.models import Item
        from annotation.services.ordering import ItemWalk

        study = make_study(n_items=2_500, quota_per_item=1, item_order=order)
        late = enroll_crowdworker(study=study, participant_id="late")
        walk = ItemWalk(study=study, rater_id=late.rater_id, span=2_500)
        # Everyone before them filled the first 2,000 items of the late joiner's walk.
        full = [position for _step, position in walk.positions(0, walk.steps)][:2_000]
        Item.objects.filter(study=study, position__in=full).update(places_taken=1)
        with CaptureQueriesContext(connection) as captured:
            nxt = next_assignment(enrollment=late)
        lookups = [q["sql"] for q in captured.captured_queries if "i.position" in q["sql"]]
        assert nxt.assignment.item.position == [position for _step, position in walk.positions(0, walk.steps)][2_000]
        assert len(lookups) <= 5, len(lookups)

    def test_a_walk_in_long_stretches_gives_the_same_items_as_a_walk_one_step_at_a_time(self, make_study, monkeypatch):
        import random

        from django.db import transaction

        from annotation.models import Item
        from annotation.services import assignment as hand_out

        # An order every rater shares: the two walks below are two raters' (the first is rolled back).
        study = make_study(n_items=300, quota_per_item=2, item_order="shared_random")
        rng = random.Random(26)
        items = list(study.items.order_by("position"))
        Item.objects.filter(pk__in=[item.pk for item in rng.sample(items, 150)]).update(places_taken=2)

        def walk_through() -> list[int]:
            met = []
            with transaction.atomic():
                rater = enroll_crowdworker(study=study, participant_id="walker")
                while (nxt := next_assignment(enrollment=rater)).assignment:
                    met.append(nxt.assignment.item_id)
                    judgment_submit(assignment=nxt.assignment, rater=rater.rater, value={"rating": 1})
                transaction.set_rollback(True)
            return met

        in_stretches = walk_through()
        # The second walk's first lookups are sized by where the first walk last took an item.
        assert hand_out._shared_frontier
        for name in ("FIRST_WALK_BATCH", "FIRST_SHARED_WALK_BATCH", "SHARED_WALK_AHEAD", "WALK_GROWTH"):
            monkeypatch.setattr(hand_out, name, 1)
        monkeypatch.setattr(hand_out, "_shared_frontier", {})
        step_by_step = walk_through()
        assert len(in_stretches) == 150
        assert in_stretches == step_by_step

    @pytest.mark.parametrize("order", ["as_listed", "shared_random"])
    def test_a_shared_walks_hint_sizes_the_first_lookup_and_skips_nothing(self, make_study, order, monkeypatch):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from annotation.models import Item
        from annotation.services import assignment as hand_out
        from annotation.services.ordering import ItemWalk

        study = make_study(n_items=600, quota_per_item=1, item_order=order)
        walk = ItemWalk(study=study, rater_id=0, span=600)
        stretch = walk.positions(0, walk.steps)  # (step, position), only the steps that land on an item
        positions = [position for _step, position in stretch]
        first = enroll_crowdworker(study=study, participant_id="first")
        # Others took the first 300 items since; this process last saw the step after them taken.
        Item.objects.filter(study=study, position__in=positions[:300]).update(places_taken=1)
        after = stretch[299][0] + 1
        monkeypatch.setattr(hand_out, "_shared_frontier", {(study.pk, 600): after})
        with CaptureQueriesContext(connection) as captured:
            nxt = next_assignment(enrollment=first)
        lookups = [q["sql"] for q in captured.captured_queries if "i.position" in q["sql"]]
        assert nxt.assignment.item.position == positions[300]
        assert len(lookups) == 1, len(lookups)  # 128, 512 without the hint
        assert hand_out._shared_frontier[(study.pk, 600)] == stretch[300][0] + 1
        # The places of the first steps are given back (a withdrawal): the hint, far ahead, does not
        # make the next rater pass them, and it follows them back.
        Item.objects.filter(study=study, position__in=positions[:300]).update(places_taken=0)
        second = enroll_crowdworker(study=study, participant_id="second")
        assert next_assignment(enrollment=second).assignment.item.position == positions[0]
        assert hand_out._shared_frontier[(study.pk, 600)] == stretch[0][0] + 1
