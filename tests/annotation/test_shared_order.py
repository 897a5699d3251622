"""Raters who share an item order (as listed, shared random) all want the same next item.

Each must take the next place free now instead of queueing behind the request
that is taking the one before it, with every guarantee of the hand-out kept.
The rule under contention (docs/architecture.md, "Taking a place under
contention"): a rater gets the earliest item on their walk that has a free
place no other transaction is taking at that moment; an item a request is
taking is passed over, and if that request ends without filling it, the item
is found again later (behind the walk).

Real PostgreSQL row locks: raters are threads, each with its own connection.
"""

from __future__ import annotations

import threading
import traceback
from collections import Counter

import pytest

from tests.annotation.test_concurrency import BARRIER_TIMEOUT, Interleave

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgres():
    from tests.conftest import require_postgres

    require_postgres()


def _answer_items(study_id: int, participant: str, answers: int, start: threading.Barrier, log: list) -> None:
    """One rater through the htmx answer path, as the item view drives it: the answer and the next
    lease in one transaction, asked again outside it when only busy items were left."""
    from django.db import connection

    from annotation.models import Study
    from annotation.services.assignment import next_assignment
    from annotation.services.enrollment import enroll_crowdworker
    from annotation.services.judgments import answer_and_next

    try:
        enrollment = enroll_crowdworker(study=Study.objects.get(pk=study_id), participant_id=participant)
        start.wait(timeout=BARRIER_TIMEOUT)
        current = next_assignment(enrollment=enrollment).assignment
        for n in range(answers):
            assert current is not None, f"{participant} got nothing after {n} answers"
            last = n == answers - 1
            nxt = answer_and_next(
                enrollment=enrollment, assignment_id=current.pk, data={"rating": str(n % 4)}, lease_next=not last
            )
            if last:
                break
            if nxt.reason == "busy":
                nxt = next_assignment(enrollment=enrollment)
            current = nxt.assignment
        log.append((participant, "done"))
    except Exception:
        log.append((participant, traceback.format_exc()))
    finally:
        connection.close()


def _ask_counting_takes(enrollment):
    """The rater's next item, and the statements that took a place (or tried to) on the way."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.services.assignment import next_assignment

    with CaptureQueriesContext(connection) as captured:
        nxt = next_assignment(enrollment=enrollment)
    return nxt, [q["sql"] for q in captured.captured_queries if "SKIP LOCKED" in q["sql"]]


@pytest.mark.parametrize(("order", "quota"), [("as_listed", 1), ("shared_random", 2)])
def test_raters_on_one_order_each_take_the_next_free_item(researcher, order, quota):
    from annotation.models import Assignment, Item
    from annotation.services.ordering import ItemWalk
    from annotation.services.places import places_recount
    from tests.conftest import build_study

    raters, answers = 12, 5
    study = build_study(researcher, n_items=80, quota_per_item=quota, item_order=order)
    start, log = threading.Barrier(raters), []
    threads = [
        threading.Thread(target=_answer_items, args=(study.pk, f"r{i:02d}", answers, start, log)) for i in range(raters)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=BARRIER_TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads), "a rater hung"
    assert sorted(outcome for _p, outcome in log) == ["done"] * raters, [o for _p, o in log if o != "done"]

    done = list(
        Assignment.objects.filter(study=study, state=Assignment.State.DONE)
        .order_by("rater_id", "sequence")
        .values_list("rater_id", "item_id", "item__position")
    )
    # Each rater progressed by exactly their answers; nobody met an item twice; no item over its quota.
    assert Counter(rater for rater, _i, _p in done) == dict.fromkeys({rater for rater, _i, _p in done}, answers)
    assert len(done) == raters * answers
    assert len({(rater, item) for rater, item, _p in done}) == len(done)
    assert max(Counter(item for _r, item, _p in done).values()) <= quota
    assert not Assignment.objects.filter(study=study, state=Assignment.State.LEASED).exists()
    assert places_recount(study=study) == {}

    # Each rater met their items in the shared order.
    span = 1 + max(Item.objects.filter(study=study).values_list("position", flat=True))
    for rater in {rater for rater, _i, _p in done}:
        walk = ItemWalk(study=study, rater_id=rater, span=span)
        steps = [walk.step_of(position) for r, _i, position in done if r == rater]
        assert steps == sorted(steps) and len(set(steps)) == len(steps)
    if quota == 1:
        # An item passed over was being taken by a request that then filled it: the items taken
        # are exactly the first ones of the order, none skipped for good.
        assert sorted(position for _r, _i, position in done) == list(range(raters * answers))


def test_an_item_being_taken_is_passed_over_and_found_again_when_that_request_gives_up(researcher):
    from django.db import transaction

    from annotation.models import Item
    from annotation.services.assignment import next_assignment
    from annotation.services.enrollment import enroll_crowdworker
    from annotation.services.judgments import judgment_submit
    from tests.conftest import build_study

    study = build_study(researcher, n_items=4, quota_per_item=1, item_order="as_listed")
    items = list(study.items.order_by("position"))
    Item.objects.filter(pk=items[1].pk).update(places_taken=1)  # full: someone answered it
    first = enroll_crowdworker(study=study, participant_id="first")
    asking = Interleave(lambda: next_assignment(enrollment=first))
    with transaction.atomic():
        # Another request is taking the first item's place right now, and will give up.
        Item.objects.select_for_update().get(pk=items[0].pk)
        asking.until_blocked_or_done()
        assert not asking.thread.is_alive(), "the rater waited for the item another request holds"
        transaction.set_rollback(True)
    # Not the held item, nor the full one: the next free place.
    nxt = asking.join()
    assert nxt.assignment.item_id == items[2].pk
    # The held item came free again. The rater's walk has passed it; it is found behind the walk
    # once the rest of the walk is done.
    met = []
    while nxt.assignment is not None:
        met.append(nxt.assignment.item_id)
        judgment_submit(assignment=nxt.assignment, rater=first.rater, value={"rating": 1})
        nxt = next_assignment(enrollment=first)
    assert met == [items[2].pk, items[3].pk, items[0].pk]
    assert nxt.reason == "exhausted"


def test_an_adaptive_take_of_a_held_candidate_moves_on_in_one_statement(researcher, monkeypatch):
    from django.db import transaction

    from annotation.allocation import state as allocation_state
    from annotation.models import AllocationLog, Item
    from annotation.services.enrollment import enroll_crowdworker
    from tests.conftest import build_study

    monkeypatch.setattr(allocation_state, "PLAN_SECONDS", 0)
    study = build_study(
        researcher, n_items=30, quota_per_item=1, allocation_policy="top_k", allocation_passive_share=0.0
    )
    rater = enroll_crowdworker(study=study, participant_id="rater")
    best, second = allocation_state.choose(enrollment=rater, sequence=0).items[:2]

    asking = Interleave(lambda: _ask_counting_takes(rater))
    with transaction.atomic():
        # Another request is taking the policy's best candidate right now.
        Item.objects.select_for_update().get(pk=best)
        asking.until_blocked_or_done()
        assert not asking.thread.is_alive(), "the rater waited for the candidate another request holds"
        transaction.set_rollback(True)
    nxt, takes = asking.join()
    assert nxt.assignment.item_id == second
    assert len(takes) == 1, takes
    entry = AllocationLog.objects.get(assignment=nxt.assignment)
    assert entry.state["held"] == [best] and entry.state["tried"] == [best]


def test_a_stretch_of_held_candidates_is_passed_over_and_the_next_stretch_offered(researcher, monkeypatch):
    from django.db import transaction

    from annotation.models import Item
    from annotation.services import places
    from annotation.services.enrollment import enroll_crowdworker
    from tests.conftest import build_study

    # Stretches of 2, then 8: the three first items held by other requests fill the first stretch and
    # one place of the second.
    monkeypatch.setattr(places, "FIRST_TAKE_STRETCH", 2)
    study = build_study(researcher, n_items=40, quota_per_item=1, item_order="as_listed")
    items = list(study.items.order_by("position"))
    rater = enroll_crowdworker(study=study, participant_id="rater")

    asking = Interleave(lambda: _ask_counting_takes(rater))
    with transaction.atomic():
        list(Item.objects.select_for_update().filter(pk__in=[item.pk for item in items[:3]]))
        asking.until_blocked_or_done()
        assert not asking.thread.is_alive(), "the rater waited for items other requests hold"
        transaction.set_rollback(True)
    nxt, takes = asking.join()
    assert nxt.assignment.item_id == items[3].pk
    assert len(takes) == 2, takes
    assert Item.objects.get(pk=items[3].pk).places_taken == 1
    assert all(Item.objects.get(pk=item.pk).places_taken == 0 for item in items[:3])
