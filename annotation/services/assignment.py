"""Handing items to raters.

Guarantees: an item is never held (leased or done) by more raters than the
study's quota; a rater never gets the same item twice; a lease expires so an
abandoned item is handed out again; a returning rater resumes their current
item. Safe under concurrency: on PostgreSQL the candidate item row is locked
with ``SELECT ... FOR UPDATE SKIP LOCKED`` before its holders are counted; on
SQLite the settings open every transaction with ``BEGIN IMMEDIATE``, which
serialises writers.

Lock order, here and in ``judgments.judgment_submit``: the rater's enrollment,
then an item, then an assignment. Locks name their own table (``of=("self",)``):
a bare ``select_for_update()`` with ``select_related`` would also lock the
joined study row and serialise every rater of the study.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from ..models import Assignment, Enrollment, Item, Rater, Study, counted_raters
from ..task_types import get_task_type
from .ordering import candidate_rng, item_sort_key


@dataclass(frozen=True)
class NextItem:
    """What a rater should see next: an assignment, or why there is none."""

    assignment: Assignment | None
    # "", "cap_reached", "exhausted", "ended", "closed", or "waiting": every item
    # this rater could still get is leased to someone else and may come free.
    reason: str = ""


def _lease_seconds() -> int:
    return settings.FUNNYBONE_LEASE_SECONDS


def holding_filter(now: datetime) -> Q:
    """Assignments that count against an item's quota: done, or leased and not expired.

    A researcher's preview never takes a place from a participant.
    """
    held = Q(state=Assignment.State.DONE) | Q(state=Assignment.State.LEASED, lease_expires_at__gt=now)
    return held & counted_raters()


def _holding_items(now: datetime) -> Q:
    """``holding_filter`` seen from Item, for counting an item's holders in a join."""
    held = Q(assignments__state=Assignment.State.DONE) | Q(
        assignments__state=Assignment.State.LEASED, assignments__lease_expires_at__gt=now
    )
    return held & counted_raters("assignments__rater")


def _bound_by_quota(rater: Rater) -> bool:
    # A preview walks through every item whatever the quota: it holds no place (see holding_filter).
    return not rater.is_preview


def item_holders(item_id: int, now: datetime, *, exclude_id: int | None = None) -> int:
    qs = Assignment.objects.filter(item_id=item_id).filter(holding_filter(now))
    if exclude_id is not None:
        qs = qs.exclude(pk=exclude_id)
    return qs.count()


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


def _lock_item(item_id: int, *, wait: bool = False) -> Item | None:
    """Lock one item row; unless told to wait, None when another transaction holds it."""
    return Item.objects.select_for_update(skip_locked=not wait).filter(pk=item_id).first()


def _renew(assignment: Assignment, now: datetime) -> Assignment:
    assignment.state = Assignment.State.LEASED
    assignment.leased_at = now
    assignment.lease_expires_at = now + timedelta(seconds=_lease_seconds())
    assignment.save(update_fields=["state", "leased_at", "lease_expires_at"])
    return assignment


def _current_lease(enrollment: Enrollment, now: datetime) -> Assignment | None:
    """The rater's open assignment, renewed if still possible, released if not."""
    current = (
        Assignment.objects.filter(study=enrollment.study, rater=enrollment.rater, state=Assignment.State.LEASED)
        .select_related("item")
        .order_by("sequence")
        .first()
    )
    if current is None:
        return None
    if current.lease_expires_at > now:
        return current
    savepoint = transaction.savepoint_create()
    # Wait for the item rather than skip it: skipping would lease the rater a
    # second item while this one stays theirs.
    _lock_item(current.item_id, wait=True)
    if (
        current.item.is_attention_check
        or not _bound_by_quota(enrollment.rater)
        or item_holders(current.item_id, now, exclude_id=current.pk) < enrollment.study.quota_per_item
    ):
        renewed = _renew(current, now)
        transaction.savepoint_commit(savepoint)
        return renewed
    # Let go of the item's lock before looking for another one (see _lease_if_room).
    transaction.savepoint_rollback(savepoint)
    current.state = Assignment.State.RELEASED
    current.save(update_fields=["state"])
    return None


def _wants_attention_check(study: Study, sequence: int) -> bool:
    if study.attention_check_rate <= 0:
        return False
    every = max(2, round(1 / study.attention_check_rate))
    return (sequence + 1) % every == 0


def _lease_if_room(
    study: Study, rater: Rater, item_id: int, sequence: int, now: datetime, *, wait: bool
) -> tuple[Assignment | None, bool]:
    """Lease the item if it has room. Returns (assignment, busy); busy when another request holds it.

    The item's row lock is kept only when it is leased. Otherwise rolling back
    to the savepoint lets go of it (a released savepoint would keep it until
    the transaction ends), so a request never waits for one item while holding
    another that a second request, waiting the other way round, needs.
    """
    savepoint = transaction.savepoint_create()
    item = _lock_item(item_id, wait=wait)
    if item is not None and (not _bound_by_quota(rater) or item_holders(item_id, now) < study.quota_per_item):
        assignment = _create(study, rater, item, sequence, now)
        transaction.savepoint_commit(savepoint)
        return assignment, False
    transaction.savepoint_rollback(savepoint)
    return None, item is None


def _create(study: Study, rater: Rater, item: Item, sequence: int, now: datetime) -> Assignment:
    return Assignment.objects.create(
        study=study,
        item=item,
        rater=rater,
        sequence=sequence,
        shown_order=_candidate_order(study, rater, item),
        leased_at=now,
        lease_expires_at=now + timedelta(seconds=_lease_seconds()),
    )


def next_assignment(*, enrollment: Enrollment, now: datetime | None = None) -> NextItem:
    """The rater's current item, or a newly leased one, or the reason there is none."""
    now = now or timezone.now()
    with transaction.atomic():
        # One request at a time per rater: a double click cannot lease two items.
        locked = (
            Enrollment.objects.select_for_update(of=("self",)).select_related("study", "rater").get(pk=enrollment.pk)
        )
        return _next_assignment(locked, now)


def _next_assignment(enrollment: Enrollment, now: datetime) -> NextItem:
    study, rater = enrollment.study, enrollment.rater
    if enrollment.ended_early:
        return NextItem(None, "ended")
    current = _current_lease(enrollment, now)
    if current is not None:
        return NextItem(current)
    if not study.is_open:
        return NextItem(None, "closed")

    mine = Assignment.objects.filter(study=study, rater=rater)
    if study.per_rater_cap is not None:
        done_regular = mine.filter(state=Assignment.State.DONE, item__is_attention_check=False).count()
        if done_regular >= study.per_rater_cap:
            return NextItem(None, "cap_reached")
    seen = set(mine.values_list("item_id", flat=True))
    sequence = len(seen)

    if _wants_attention_check(study, sequence):
        checks = Item.objects.filter(study=study, is_attention_check=True).exclude(pk__in=seen)
        check = min(
            checks.values_list("pk", "position"),
            key=lambda row: item_sort_key(study=study, rater_id=rater.pk, item_id=row[0], position=row[1]),
            default=None,
        )
        if check is not None:
            with transaction.atomic():
                return NextItem(_create(study, rater, Item.objects.get(pk=check[0]), sequence, now))

    # Items with room under the quota, their holders counted in the same query.
    rows = Item.objects.filter(study=study, is_attention_check=False)
    if _bound_by_quota(rater):
        rows = rows.annotate(held=Count("assignments", filter=_holding_items(now))).filter(
            held__lt=study.quota_per_item
        )
    rows = rows.values_list("pk", "position")
    open_items = sorted(
        (row for row in rows if row[0] not in seen),
        key=lambda row: item_sort_key(study=study, rater_id=rater.pk, item_id=row[0], position=row[1]),
    )
    passed_over = []
    for item_id, _position in open_items:
        assignment, busy = _lease_if_room(study, rater, item_id, sequence, now, wait=False)
        if assignment is not None:
            return NextItem(assignment)
        if busy:
            passed_over.append(item_id)
    # Items other requests held a moment ago may still have room: wait for them
    # rather than tell the rater there is nothing left.
    for item_id in passed_over:
        assignment, _busy = _lease_if_room(study, rater, item_id, sequence, now, wait=True)
        if assignment is not None:
            return NextItem(assignment)
    if _bound_by_quota(rater) and _may_free_up(study, rater):
        # Not finished: squatters' leases run out, and the rater must be there to take the items.
        return NextItem(None, "waiting")
    return NextItem(None, "exhausted")


def items_short_of_quota(*, study: Study) -> QuerySet[Item]:
    """Regular items with fewer finished answers than the quota: work that someone may still do.

    Leases do not count here: a leased item comes free again when its lease runs out.
    """
    done = Q(assignments__state=Assignment.State.DONE) & counted_raters("assignments__rater")
    return (
        Item.objects.filter(study=study, is_attention_check=False)
        .annotate(done=Count("assignments", filter=done))
        .filter(done__lt=study.quota_per_item)
    )


def _may_free_up(study: Study, rater: Rater) -> bool:
    """Whether an item the rater has not seen is still short of its quota in finished answers."""
    mine = Assignment.objects.filter(study=study, rater=rater).values("item_id")
    return items_short_of_quota(study=study).exclude(pk__in=mine).exists()


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
            "lease_expires_at": now + timedelta(seconds=_lease_seconds()),
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
    expires = now + timedelta(seconds=_lease_seconds())
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
