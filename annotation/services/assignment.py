"""Handing items to raters.

Guarantees: an item is never held (leased or done) by more people than the
study's quota; a rater never gets the same item twice; a lease expires so an
abandoned item is handed out again; a returning rater resumes their current
item. Safe under concurrency: on PostgreSQL an item's row is locked with
``SELECT ... FOR UPDATE SKIP LOCKED`` before its places are read and taken; on
SQLite the settings open every transaction with ``BEGIN IMMEDIATE``, which
serialises writers.

The cost of finding the next item does not grow with the study. Each regular
item keeps how many places are taken (``Item.places_taken``), taken and given
back in :mod:`annotation.services.places`; what a lease is and when it expires
is :mod:`annotation.services.leases`. This module is the hand-out. Each rater walks the item positions in their own
reproducible order (``ordering.ItemWalk``); ``Enrollment.walked`` says how far,
so the next items are a lookup of a few positions in the item index. When the
walk is over, items that came free behind it are found through the index of
items with room and the index of open leases.

Lock order, here and in ``judgments.judgment_submit``: the rater's enrollment,
then an item, then an assignment. Locks name their own table (``of=("self",)``):
a bare ``select_for_update()`` with ``select_related`` would also lock the
joined study row and serialise every rater of the study. Another rater's
expired lease is locked with SKIP LOCKED: if its rater is answering it right
now, it keeps its place.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from ..allocation.state import choose as allocation_choose
from ..models import HUMAN_KINDS, Assignment, Enrollment, Item, Rater, Study
from ..plainsql import insert, update
from ..task_types import get_task_type
from .leases import lease_expiry, lease_resume
from .ordering import ItemWalk, candidate_rng
from .places import (
    expired_leases,
    lock_item,
    rater_takes_place,
    skips_held_rows,
    take_free_place,
    take_place,
    takes_place,
)

# Walk steps looked up per query. The first lookup is a few steps: in a rater's own order they usually
# hold an item with room. In an order every rater shares, the steps just ahead were mostly taken by the
# others since the rater's last item, so it is a longer stretch. Each lookup that finds nothing looks
# ``WALK_GROWTH`` times further, up to ``WALK_BATCH_CAP`` steps, so a rater who joins late, behind
# thousands of full items, reaches the first free one in a handful of lookups, not one per 64 steps.
FIRST_WALK_BATCH = 16
FIRST_SHARED_WALK_BATCH = 128
WALK_GROWTH = 4
WALK_BATCH_CAP = 16_384
# In a shared order the first lookup reaches this many steps past the last step this process saw taken
# (``_shared_frontier``), rather than ``FIRST_SHARED_WALK_BATCH``: the steps before it are mostly full.
SHARED_WALK_AHEAD = 32
# Items with room (or with an expired lease) read at once once the walk is over.
AFTER_WALK_BATCH = 200


# Where the shared walks of a study were last seen taking an item in this process: {(study id, walk
# span): step}. A hint that sizes a rater's first lookup and decides nothing: the lookup still starts
# at the rater's own step, and a lookup that finds nothing grows as any other. The last step taken, not
# the furthest, so a hint that ran ahead of the items with room (places given back) follows them back.
_shared_frontier: dict[tuple[int, int], int] = {}


def _first_lookup(walk: ItemWalk, study: Study, start: int) -> int:
    """How many steps a rater's first lookup reads: in a shared order, up to just past the steps the
    other raters took since this rater's last item, as far as this process has seen them taken."""
    if not walk.shared:
        return FIRST_WALK_BATCH
    frontier = _shared_frontier.get((study.pk, walk.span))
    if frontier is None:
        return FIRST_SHARED_WALK_BATCH
    return min(max(frontier - start, 0) + SHARED_WALK_AHEAD, WALK_BATCH_CAP)


@dataclass(frozen=True)
class NextItem:
    """What a rater should see next: an assignment, or why there is none."""

    assignment: Assignment | None
    # "", "cap_reached", "exhausted", "ended", "closed", or "waiting": every item
    # this rater could still get is leased to someone else and may come free.
    reason: str = ""

    @property
    def finished(self) -> bool:
        """The rater is finished for good: nothing will come (unlike "waiting", "busy" or "closed",
        where the study's closing ends the session, not the rater)."""
        return self.assignment is None and self.reason in {"exhausted", "cap_reached", "ended"}


def candidate_keys(item: Item) -> list[str]:
    """The item's candidate keys in import order; from ``prefetch_related("candidates")`` when it was used."""
    prefetched = getattr(item, "_prefetched_objects_cache", {}).get("candidates")
    if prefetched is not None:
        return [c.key for c in sorted(prefetched, key=lambda c: (c.position, c.pk))]
    return list(item.candidates.order_by("position", "id").values_list("key", flat=True))


def _candidate_order(study: Study, rater: Rater, item: Item, trial: int = 0) -> list[str]:
    task_type = get_task_type(study.task_type)
    if task_type.candidates[1] == 0:
        return []  # the importer refuses candidates for this task type: nothing to query
    keys = candidate_keys(item)
    if not keys:
        return []
    return task_type.display_order(keys, candidate_rng(study=study, rater_id=rater.pk, item_id=item.pk, trial=trial))


def _wants_attention_check(study: Study, sequence: int) -> bool:
    if study.attention_check_rate <= 0:
        return False
    every = max(2, round(1 / study.attention_check_rate))
    return (sequence + 1) % every == 0


def _lease_if_room(
    study: Study,
    rater: Rater,
    item_id: int,
    sequence: int,
    now: datetime,
    *,
    wait: bool,
    shown_at: datetime | None = None,
) -> tuple[Assignment | None, bool]:
    """Lease the item if it has room. Returns (assignment, busy); busy when another request holds it.

    The item's row lock is kept only when it is leased. Otherwise rolling back
    to the savepoint lets go of it (a released savepoint would keep it until
    the transaction ends), so a request never waits for one item while holding
    another that a second request, waiting the other way round, needs.
    """
    savepoint = transaction.savepoint_create()
    item = lock_item(item_id, wait=wait)
    if item is not None and (not rater_takes_place(rater) or take_place(item, study.quota_per_item, now)):
        assignment = _create(study, rater, item, sequence, now, shown_at=shown_at)
        transaction.savepoint_commit(savepoint)
        return assignment, False
    transaction.savepoint_rollback(savepoint)
    return None, item is None


def _lease_first(
    study: Study,
    rater: Rater,
    candidates: list[tuple[int, bool]],
    sequence: int,
    now: datetime,
    passed_over: list[int],
    shown_at: datetime | None,
) -> Assignment | None:
    """Lease the first of the candidates (item id, whether it had a free place when looked up), in the
    order given, that can be taken now; those another request holds go on ``passed_over``.

    Every path of the hand-out (the walk, behind the walk, a policy's
    candidates) takes its place here. A run of candidates with a free place
    goes to ``take_free_place``, which takes the first one that no other
    transaction is taking and names those it passed over.
    Candidates whose only room is an expired lease, a preview's (which takes
    no place) and every candidate on a database without row locks go one at a
    time, in their turn.
    """
    together = rater_takes_place(rater) and skips_held_rows()
    at = 0
    while at < len(candidates):
        item_id, free = candidates[at]
        if together and free:
            end = at
            while end < len(candidates) and candidates[end][1]:
                end += 1
            item, held = take_free_place([item_id for item_id, _free in candidates[at:end]], study.quota_per_item)
            passed_over.extend(held)
            if item is not None:
                return _create(study, rater, item, sequence, now, shown_at=shown_at)
            at = end
            continue
        found, busy = _lease_if_room(study, rater, item_id, sequence, now, wait=False, shown_at=shown_at)
        if found is not None:
            return found
        if busy:
            passed_over.append(item_id)
        at += 1
    return None


def _create(
    study: Study, rater: Rater, item: Item, sequence: int, now: datetime, *, shown_at: datetime | None = None
) -> Assignment:
    return insert(
        Assignment(
            study=study,
            item=item,
            rater=rater,
            sequence=sequence,
            shown_order=_candidate_order(study, rater, item),
            leased_at=now,
            lease_expires_at=lease_expiry(now),
            shown_at=shown_at,
        )
    )


def next_assignment(
    *,
    enrollment: Enrollment,
    now: datetime | None = None,
    wait: bool = True,
    locks_held: bool = False,
    shown: bool = False,
) -> NextItem:
    """The rater's current item, or a newly leased one, or the reason there is none.

    ``wait=False`` is for a caller that already holds an item's lock in the same
    transaction (the answer just stored): rather than wait for an item another
    request holds, which could deadlock, it returns the reason "busy" and the
    caller asks again once its transaction has ended. ``locks_held``: the
    caller's transaction holds the enrollment's row lock and ``enrollment`` was
    read under it (``judgments.lock_for_answer``). ``shown``: the caller puts a
    newly leased item in front of the rater at once, so it is marked shown now.
    """
    now = now or timezone.now()
    with transaction.atomic(savepoint=False):
        if locks_held:
            locked = enrollment
        else:
            # One request at a time per rater: a double click cannot lease two items.
            locked = (
                Enrollment.objects.select_for_update(of=("self",))
                .select_related("study", "rater")
                .get(pk=enrollment.pk)
            )
        return _next_assignment(locked, now, wait=wait, shown_at=now if shown else None)


def _mine(enrollment: Enrollment) -> tuple[int, int, bool]:
    """How many assignments the rater has in the study (the next one's sequence), how many of them are
    answers to regular items, and whether one is leased: one round trip, through the rater's index."""
    study, rater = enrollment.study, enrollment.rater
    assignment, item = Assignment._meta.db_table, Item._meta.db_table
    capped = study.per_rater_cap is not None
    done_regular = "SUM(CASE WHEN a.state = %s AND NOT i.is_attention_check THEN 1 ELSE 0 END)" if capped else "0"
    join = f" JOIN {item} i ON i.id = a.item_id" if capped else ""
    params = [Assignment.State.DONE] if capped else []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*), {done_regular}, SUM(CASE WHEN a.state = %s THEN 1 ELSE 0 END)"  # noqa: S608 - fixed text
            f" FROM {assignment} a{join} WHERE a.rater_id = %s AND a.study_id = %s",
            [*params, Assignment.State.LEASED, rater.pk, study.pk],
        )
        count, regular_done, leased = cursor.fetchone()
    return count, regular_done or 0, bool(leased)


def _next_assignment(enrollment: Enrollment, now: datetime, *, wait: bool, shown_at: datetime | None) -> NextItem:
    study, rater = enrollment.study, enrollment.rater
    if enrollment.ended_early:
        return NextItem(None, "ended")
    sequence, done_regular, leased = _mine(enrollment)
    if leased:
        current = lease_resume(enrollment, now)
        if current is not None:
            return NextItem(current)
    if not study.is_open:
        return NextItem(None, "closed")
    if study.per_rater_cap is not None and done_regular >= study.per_rater_cap:
        return NextItem(None, "cap_reached")

    if _wants_attention_check(study, sequence):
        check = _attention_check(study, rater)
        if check is not None:
            return NextItem(_create(study, rater, check, sequence, now, shown_at=shown_at))

    # An adaptive policy (annotation/allocation) names the candidates, best first; None: the study's walk.
    choice = allocation_choose(enrollment=enrollment, sequence=sequence)
    if choice is not None and choice.spent:
        return NextItem(None, "exhausted")
    passed_over: list[int] = []
    assignment = None
    if choice is None or choice.passive:
        assignment = _walk(enrollment, sequence, now, passed_over, shown_at)
        if assignment is None:
            assignment = _after_walk(enrollment, sequence, now, passed_over, shown_at)
    walked_to = assignment
    held: list[int] = []
    if assignment is None and choice is not None:
        # A policy's candidates, best first: the snapshot they were ranked from said they had room.
        skipped = set(passed_over)
        wanted = [(item_id, True) for item_id in choice.items if item_id not in skipped]
        assignment = _lease_first(study, rater, wanted, sequence, now, held, shown_at)
        if assignment is None and not held and choice.reused:
            # Every candidate filled since the reused ranking was made: rank again from the items as they are.
            choice = allocation_choose(enrollment=enrollment, sequence=sequence, after=choice)
            wanted = [(item_id, True) for item_id in choice.items if item_id not in skipped]
            assignment = _lease_first(study, rater, wanted, sequence, now, held, shown_at)
        passed_over += held
    if assignment is None and passed_over and not wait:
        return NextItem(None, "busy")
    if assignment is None:
        # Items other requests held a moment ago may still have room: wait for them
        # rather than tell the rater there is nothing left.
        for item_id in passed_over:
            assignment, _busy = _lease_if_room(study, rater, item_id, sequence, now, wait=True, shown_at=shown_at)
            if assignment is not None:
                break
    if assignment is not None:
        if choice is not None:
            choice.record(assignment, held=held, passive=assignment is walked_to)
        return NextItem(assignment)
    if rater_takes_place(rater) and _may_free_up(study, rater, now):
        # Not finished: squatters' leases run out, and the rater must be there to take the items.
        return NextItem(None, "waiting")
    return NextItem(None, "exhausted")


def _attention_check(study: Study, rater: Rater) -> Item | None:
    """The rater's next unseen attention check: the first in their walk order (checks are few)."""
    seen = Assignment.objects.filter(rater=rater, item=OuterRef("pk"))
    checks = list(
        Item.objects.filter(study=study, is_attention_check=True).filter(~Exists(seen)).values_list("pk", "position")
    )
    if not checks:
        return None
    walk = ItemWalk(study=study, rater_id=rater.pk, span=1 + max(position for _pk, position in checks))
    pk, _position = min(checks, key=lambda row: (walk.step_of(row[1]), row[0]))
    return Item.objects.get(pk=pk)


def _with_room(study: Study, rater: Rater) -> QuerySet[Item]:
    """Regular items the rater has not seen that have a free place for them (any, for a preview).

    A range of the index of items with room. ``_open_at`` asks the same of a
    few positions, and also takes the items an expired lease would free.
    """
    rows = Item.objects.filter(study=study, is_attention_check=False).filter(
        ~Exists(Assignment.objects.filter(rater=rater, item=OuterRef("pk")))
    )
    if not rater_takes_place(rater):
        return rows
    return rows.filter(places_taken__lt=study.quota_per_item)


def _open_at(study: Study, rater: Rater, now: datetime, positions: list[int]) -> list[tuple[int, int, bool]]:
    """(id, position, has a free place) of the regular items at these positions that the rater has not
    seen and that have room for them, or will once an expired lease is released: the walk's one lookup
    per batch. A preview sees every item as having room.

    Written in SQL: it runs for every new lease, and the ORM took longer to build
    the query than the database took to answer it.
    """
    item, assignment, rater_table = (m._meta.db_table for m in (Item, Assignment, Rater))
    takes = rater_takes_place(rater)
    if connection.vendor == "postgresql":  # one array parameter, however long the stretch
        among, given = "= ANY(%s::integer[])", [positions]
    else:
        among, given = f"IN ({', '.join(['%s'] * len(positions))})", positions
    sql = (
        f"SELECT i.id, i.position, {'i.places_taken < %s' if takes else '%s'} FROM {item} i"  # noqa: S608
        f" WHERE i.study_id = %s AND i.is_attention_check = %s AND i.position {among}"
        f" AND NOT EXISTS (SELECT 1 FROM {assignment} m WHERE m.rater_id = %s AND m.item_id = i.id)"
    )
    params: list = [study.quota_per_item if takes else True, study.pk, False, *given, rater.pk]
    if takes:
        kinds = ", ".join(["%s"] * len(HUMAN_KINDS))
        sql += (
            f" AND (i.places_taken < %s OR EXISTS (SELECT 1 FROM {assignment} x JOIN {rater_table} r"  # noqa: S608
            f" ON r.id = x.rater_id WHERE x.item_id = i.id AND x.state = %s AND x.lease_expires_at <= %s"
            f" AND r.kind IN ({kinds})))"
        )
        params += [
            study.quota_per_item,
            Assignment.State.LEASED,
            connection.ops.adapt_datetimefield_value(now),
            *HUMAN_KINDS,
        ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(item_id, position, bool(free)) for item_id, position, free in cursor.fetchall()]


def _walk(
    enrollment: Enrollment, sequence: int, now: datetime, passed_over: list[int], shown_at: datetime | None
) -> Assignment | None:
    """Lease the first open item on the rest of the rater's walk, a stretch of positions per query, each
    stretch ``WALK_GROWTH`` times the last one that found nothing."""
    study, rater = enrollment.study, enrollment.rater
    if enrollment.walk_span == 0:
        last = (
            Item.objects.filter(study=study, is_attention_check=False)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        if last is None:
            return None
        enrollment.walk_span = last + 1
        Enrollment.objects.filter(pk=enrollment.pk).update(walk_span=enrollment.walk_span)
    walk = ItemWalk(study=study, rater_id=rater.pk, span=enrollment.walk_span)
    start = step = enrollment.walked
    found = None
    size = _first_lookup(walk, study, start)
    while found is None and step < walk.steps:
        batch = walk.positions(step, size)
        step = min(step + size, walk.steps)
        size = min(size * WALK_GROWTH, WALK_BATCH_CAP)
        if not batch:
            continue
        step_at = {position: s for s, position in batch}
        rows = sorted(_open_at(study, rater, now, list(step_at)), key=lambda row: (step_at[row[1]], row[0]))
        found = _lease_first(study, rater, [(row[0], row[2]) for row in rows], sequence, now, passed_over, shown_at)
        if found is not None:
            step = step_at[next(position for item_id, position, _free in rows if item_id == found.item_id)] + 1
            if walk.shared and rater_takes_place(rater):  # a preview takes no place: it says nothing of the others
                _shared_frontier[(study.pk, walk.span)] = step
    if step != start:
        enrollment.walked = step
        update(Enrollment, enrollment.pk, walked=step)
    return found


def _after_walk(
    enrollment: Enrollment, sequence: int, now: datetime, passed_over: list[int], shown_at: datetime | None
) -> Assignment | None:
    """Once the walk is over: items that came free behind it, or were added after it began, in walk order.

    Read through the index of items with room and the index of open leases,
    so the cost follows the items left, not the study's size.
    """
    study, rater = enrollment.study, enrollment.rater
    rows = set(
        _with_room(study, rater).order_by("places_taken", "position").values_list("pk", "position")[:AFTER_WALK_BATCH]
    )
    free = {item_id for item_id, _position in rows}
    if rater_takes_place(rater):
        # Full items whose places an expired lease still holds (not in the room index).
        lapsed = (
            Assignment.objects.filter(expired_leases(now), study=study, item__is_attention_check=False)
            .exclude(item__in=Assignment.objects.filter(study=study, rater=rater).values("item_id"))
            .values_list("item_id", "item__position")
        )
        rows.update(lapsed[:AFTER_WALK_BATCH])
    if not rows:
        return None
    walk = ItemWalk(study=study, rater_id=rater.pk, span=max(enrollment.walk_span, 1))

    def walk_order(row: tuple[int, int]) -> tuple[int, int, int]:
        # Positions beyond the walk (items added since it began) come after it, as listed.
        inside = row[1] < walk.span
        return (0 if inside else 1, walk.step_of(row[1]) if inside else row[1], row[0])

    candidates = [(item_id, item_id in free) for item_id, _position in sorted(rows, key=walk_order)]
    skipped = set(passed_over)
    candidates = [candidate for candidate in candidates if candidate[0] not in skipped]
    return _lease_first(study, rater, candidates, sequence, now, passed_over, shown_at)


def _may_free_up(study: Study, rater: Rater, now: datetime) -> bool:
    """Whether an item the rater has not seen is leased to someone else, so it may come free.

    Read through the index of open leases: it follows the raters at work, not the study's size.
    """
    mine = Assignment.objects.filter(study=study, rater=rater).values("item_id")
    return (
        Assignment.objects.filter(takes_place(), study=study, state=Assignment.State.LEASED)
        .filter(item__is_attention_check=False)
        .exclude(item__in=mine)
        .exists()
    )


def assignment_for_judge(*, study: Study, rater: Rater, item: Item, trial: int = 0) -> Assignment:
    """The (judge, item, trial) assignment, created once; judges are not bound by the quota."""
    now = timezone.now()
    assignment, _created = Assignment.objects.get_or_create(
        rater=rater,
        item=item,
        trial=trial,
        defaults={
            "study": study,
            "sequence": item.position,
            "shown_order": _candidate_order(study, rater, item, trial),
            "leased_at": now,
            "lease_expires_at": lease_expiry(now),
        },
    )
    return assignment


def assignments_for_judge(
    *,
    study: Study,
    rater: Rater,
    wanted: list[tuple[Item, int]],
    orders: dict[tuple[int, int], list[str]] | None = None,
) -> tuple[dict[tuple[int, int], Assignment], set[int]]:
    """``assignment_for_judge`` for many (item, trial) at once, keyed by (item id, trial), and the ids
    of those made now: one query to find them and one insert for the missing ones (``orders`` may
    give their shown order)."""
    if not wanted:
        return {}, set()

    def existing() -> dict[tuple[int, int], Assignment]:
        rows = Assignment.objects.filter(
            rater=rater, item_id__in={item.pk for item, _ in wanted}, trial__in={trial for _, trial in wanted}
        )
        return {(a.item_id, a.trial): a for a in rows}

    found = existing()
    missing = {(item.pk, trial): (item, trial) for item, trial in wanted if (item.pk, trial) not in found}
    if not missing:
        return found, set()
    now = timezone.now()
    expires = lease_expiry(now)
    # No ignore_conflicts, so the new rows come back with their ids: a judge's (item, trial) is worked
    # by one unit at a time, and a conflict (two runs of one judge at once) raises IntegrityError
    # for the caller to work its batch one by one.
    created = Assignment.objects.bulk_create(
        [
            Assignment(
                study=study,
                rater=rater,
                item=item,
                trial=trial,
                sequence=item.position,
                shown_order=(orders or {}).get((item.pk, trial)) or _candidate_order(study, rater, item, trial),
                leased_at=now,
                lease_expires_at=expires,
            )
            for item, trial in missing.values()
        ]
    )
    if any(a.pk is None for a in created):  # a database that does not return ids from a bulk insert
        found = existing()
        return found, {found[key].pk for key in missing}
    return {**found, **{(a.item_id, a.trial): a for a in created}}, {a.pk for a in created}


def mark_shown(*, assignment: Assignment, now: datetime | None = None) -> None:
    """Remember when the item was first put in front of the rater (for time on item)."""
    if assignment.shown_at is None:
        assignment.shown_at = now or timezone.now()
        Assignment.objects.filter(pk=assignment.pk, shown_at__isnull=True).update(shown_at=assignment.shown_at)
