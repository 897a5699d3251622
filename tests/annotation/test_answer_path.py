"""The answer path: stored places, each rater's walk, lazy lease expiry, and its cost in queries.

The cost is checked by counting queries (never by timing): an answer in a
2,000-item study must take as many as in a 20-item one.
"""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, Item, Rater
from annotation.selectors.annotator import study_is_full
from annotation.services.assignment import assignment_for_judge, next_assignment
from annotation.services.enrollment import enroll_crowdworker, enroll_preview
from annotation.services.judgments import judgment_submit
from annotation.services.ordering import ItemWalk
from annotation.services.places import places_recount, release_expired
from annotation.services.studies import ItemSpec, items_create

from .test_annotator_flow import assignment_from, begin, csrf_from, fresh_rate_limits, url  # noqa: F401

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _expire(assignment: Assignment) -> None:
    Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def _places(study) -> dict[str, int]:
    return dict(study.items.values_list("external_id", "places_taken"))


def _answer_all(enrollment) -> list[int]:
    """Every item the rater gets, answered, in the order they came."""
    order = []
    while (nxt := next_assignment(enrollment=enrollment)).assignment:
        order.append(nxt.assignment.item.position)
        judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 1})
    return order


class TestItemWalk:
    @pytest.mark.parametrize("order", ["random_per_rater", "shared_random", "as_listed"])
    @pytest.mark.parametrize("span", [1, 2, 3, 7, 64, 65, 1000])
    def test_it_meets_every_position_once_and_can_say_when(self, order, span):
        walk = ItemWalk(study=SimpleNamespace(item_order=order, seed=11), rater_id=5, span=span)
        met = [position for _step, position in walk.positions(0, walk.steps)]
        assert sorted(met) == list(range(span))
        assert all(walk.step_of(walk.position_at(step)) == step for step in range(walk.steps))

    def test_random_orders_differ_between_raters_and_seeds_and_repeat_for_the_same(self):
        def order(seed, rater_id, item_order="random_per_rater"):
            walk = ItemWalk(study=SimpleNamespace(item_order=item_order, seed=seed), rater_id=rater_id, span=200)
            return [position for _step, position in walk.positions(0, walk.steps)]

        assert order(1, 1) == order(1, 1)
        assert order(1, 1) != order(1, 2)
        assert order(1, 1) != order(2, 1)
        assert order(1, 1, "shared_random") == order(1, 2, "shared_random")
        assert order(1, 1, "as_listed") == list(range(200))


class TestWalkOrder:
    def test_a_rater_gets_the_items_in_their_own_walk_order(self, make_study):
        study = make_study(n_items=30, quota_per_item=5)
        first, second = (enroll_crowdworker(study=study, participant_id=p) for p in ("p1", "p2"))
        got_first, got_second = _answer_all(first), _answer_all(second)
        for enrollment, got in ((first, got_first), (second, got_second)):
            walk = ItemWalk(study=study, rater_id=enrollment.rater_id, span=30)
            assert got == [position for _step, position in walk.positions(0, walk.steps)]
        assert got_first != got_second

    def test_as_listed_and_shared_orders_are_the_same_for_everyone(self, make_study):
        for item_order in ("as_listed", "shared_random"):
            study = make_study(n_items=12, quota_per_item=3, item_order=item_order, name=item_order)
            orders = [
                _answer_all(enroll_crowdworker(study=study, participant_id=f"{item_order}-{i}")) for i in range(2)
            ]
            assert orders[0] == orders[1]
            assert sorted(orders[0]) == list(range(12))
            if item_order == "as_listed":
                assert orders[0] == list(range(12))

    def test_items_added_after_a_walk_began_are_still_handed_out(self, make_study):
        study = make_study(n_items=3, quota_per_item=1)
        rater = enroll_crowdworker(study=study, participant_id="p1")
        assert len(_answer_all(rater)) == 3
        items_create(study=study, items=[ItemSpec(external_id=f"late-{i}", text="late") for i in range(2)])
        assert sorted(_answer_all(rater)) == [3, 4]
        assert next_assignment(enrollment=rater).reason == "exhausted"


class TestPlaces:
    def test_places_stay_exact_through_leases_answers_and_expiries(self, make_study):
        study = make_study(n_items=3, quota_per_item=2)
        raters = [enroll_crowdworker(study=study, participant_id=f"p{i}") for i in range(6)]
        for turn in range(4):
            for i, rater in enumerate(raters):
                nxt = next_assignment(enrollment=rater)
                if nxt.assignment is None:
                    continue
                if (i + turn) % 3 == 0:
                    _expire(nxt.assignment)  # walked away for now; the place comes free for others
                else:
                    judgment_submit(assignment=nxt.assignment, rater=rater.rater, value={"rating": 1})
                assert places_recount(study=study) == {}
                assert max(_places(study).values()) <= 2
        assert study_is_full(study=study) == (
            set(_places(study).values()) == {2} and not any(Assignment.objects.filter(study=study, state="leased"))
        )

    def test_an_expired_lease_keeps_its_place_until_someone_wants_it(self, make_study):
        study = make_study(n_items=1, quota_per_item=1)
        slow = enroll_crowdworker(study=study, participant_id="slow")
        held = next_assignment(enrollment=slow).assignment
        _expire(held)
        # Nobody asked for the place: the rater comes back to the same item, renewed.
        back = next_assignment(enrollment=slow).assignment
        assert back.pk == held.pk and back.lease_expires_at > timezone.now()
        _expire(held)
        fast = enroll_crowdworker(study=study, participant_id="fast")
        taken = next_assignment(enrollment=fast).assignment
        assert taken.item_id == held.item_id
        held.refresh_from_db()
        assert held.state == Assignment.State.RELEASED
        assert next_assignment(enrollment=slow).reason == "exhausted"  # never the same item twice
        with pytest.raises(ValidationError):
            judgment_submit(assignment=held, rater=slow.rater, value={"rating": 1})
        assert _places(study) == {"item-0": 1} and places_recount(study=study) == {}

    def test_a_late_answer_to_a_released_lease_takes_a_free_place_again(self, make_study):
        study = make_study(n_items=1, quota_per_item=1)
        slow = enroll_crowdworker(study=study, participant_id="slow")
        held = next_assignment(enrollment=slow).assignment
        _expire(held)
        with transaction.atomic():
            item = Item.objects.select_for_update().get(pk=held.item_id)
            assert release_expired(item, timezone.now()) == 1
        assert _places(study) == {"item-0": 0}
        assert not study_is_full(study=study)
        assert judgment_submit(assignment=held, rater=slow.rater, value={"rating": 3}).created
        assert _places(study) == {"item-0": 1} and places_recount(study=study) == {}
        assert study_is_full(study=study)

    def test_previews_and_judges_take_no_place(self, make_study, researcher):
        study = make_study(n_items=2, quota_per_item=1)
        preview = enroll_preview(study=study, user=researcher)
        assert len(_answer_all(preview)) == 2
        judge = Rater.objects.create(kind="llm", name="judge")
        for item in study.items.all():
            assignment_for_judge(study=study, rater=judge, item=item)
        assert set(_places(study).values()) == {0}
        assert places_recount(study=study) == {}
        assert not study_is_full(study=study)
        people = [enroll_crowdworker(study=study, participant_id=f"p{i}") for i in range(2)]
        assert [len(_answer_all(p)) for p in people] == [2, 0]
        assert set(_places(study).values()) == {1} and study_is_full(study=study)

    def test_the_recount_finds_and_fixes_a_counter_written_behind_the_services_back(self, make_study):
        study = make_study(n_items=2, quota_per_item=2)
        rater = enroll_crowdworker(study=study, participant_id="p1")
        _answer_all(rater)
        item = study.items.first()
        Item.objects.filter(pk=item.pk).update(places_taken=0)
        assert places_recount(study=study) == {item.pk: (0, 1)}
        places_recount(study=study, fix=True)
        assert places_recount(study=study) == {}


class TestQueriesPerAnswer:
    """An htmx answer (store it, lease and render the next item) costs the same queries at any size."""

    # 15 on PostgreSQL inside the test's transaction (its savepoint included): session and enrollment
    # (with study and rater); the answer (enrollment lock, posted assignment with its item, insert,
    # done); the next item (the rater's counts, one walk lookup, its place taken and item locked in one
    # statement, insert, walk cursor); the progress bar (2). 18 on SQLite, which takes the place in
    # three (savepoint, item, place). The study's language comes with the enrollment, at no extra query.
    # Before the answer path it was 28, and grew with the study underneath; 24 before the plain SQL.
    BOUND = {"postgresql": 15, "sqlite": 18}

    def _answer_queries(self, csrf_client, study, pid) -> list[int]:
        begin(csrf_client, study, pid)
        page = csrf_client.get(url(study, "item"))
        counts = []
        for _ in range(3):
            form = {"assignment": assignment_from(page), "rating": "2", "csrfmiddlewaretoken": csrf_from(page)}
            with CaptureQueriesContext(connection) as queries:
                page = csrf_client.post(url(study, "item"), form, **HTMX)
            assert page.status_code == 200
            counts.append(len(queries))
        return counts

    def test_an_answer_costs_as_many_queries_in_a_big_study_as_in_a_small_one(
        self, csrf_client, make_study, django_assert_max_num_queries
    ):
        small = make_study(n_items=20, quota_per_item=1, name="small")
        big = make_study(n_items=2000, quota_per_item=1, name="big")
        in_small = self._answer_queries(csrf_client, small, "small-1")
        in_big = self._answer_queries(csrf_client, big, "big-1")
        assert in_small == in_big, (in_small, in_big)
        begin(csrf_client, big, "big-2")
        page = csrf_client.get(url(big, "item"))
        form = {"assignment": assignment_from(page), "rating": "1", "csrfmiddlewaretoken": csrf_from(page)}
        with django_assert_max_num_queries(self.BOUND[connection.vendor]):
            assert csrf_client.post(url(big, "item"), form, **HTMX).status_code == 200


class TestImportedAnswers:
    def test_imported_answers_take_their_places(self, make_study):
        from annotation.services.imported_judgments import ImportedJudgment, judgments_import

        study = make_study(n_items=3, quota_per_item=2)
        rows = [
            ImportedJudgment(rater=name, item="item-0", value={"rating": 1}, kind="expert") for name in ("ann", "bob")
        ] + [ImportedJudgment(rater="cat", item="item-1", value={"rating": 2}, kind="crowd")]
        assert judgments_import(study=study, judgments=rows) == 3
        assert _places(study) == {"item-0": 2, "item-1": 1, "item-2": 0}
        assert places_recount(study=study) == {}
        newcomer = enroll_crowdworker(study=study, participant_id="new")
        assert sorted(_answer_all(newcomer)) == [1, 2]  # item-0 is full
