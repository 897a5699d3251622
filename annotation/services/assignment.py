"""Handing items to raters.

Guarantees: an item is never held (leased or done) by more raters than the
study's quota; a rater never gets the same item twice; a lease expires so an
abandoned item is handed out again; a returning rater resumes their current
item. Safe under concurrency: on PostgreSQL the candidate item row is locked
with ``SELECT ... FOR UPDATE SKIP LOCKED`` before its holders are counted; on
SQLite the settings open every transaction with ``BEGIN IMMEDIATE``, which
serialises writers.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ..models import Assignment, Enrollment, Item, Rater, Study
from ..task_types import get_task_type
from .ordering import candidate_rng, item_sort_key


@dataclass(frozen=True)
class NextItem:
    """What a rater should see next: an assignment, or why there is none."""

    assignment: Assignment | None
    reason: str = ""  # "", "cap_reached", "exhausted", "ended", "closed"


def _lease_seconds() -> int:
    return settings.FUNNYBONE_LEASE_SECONDS


def holding_filter(now: datetime) -> Q:
    """Assignments that count against an item's quota: done, or leased and not expired."""
    return Q(state=Assignment.State.DONE) | Q(state=Assignment.State.LEASED, lease_expires_at__gt=now)


def item_holders(item_id: int, now: datetime, *, exclude_id: int | None = None) -> int:
    qs = Assignment.objects.filter(item_id=item_id).filter(holding_filter(now))
    if exclude_id is not None:
        qs = qs.exclude(pk=exclude_id)
    return qs.count()


def _candidate_order(study: Study, rater: Rater, item: Item, trial: int = 0) -> list[str]:
    keys = list(item.candidates.order_by("position", "id").values_list("key", flat=True))
    if not keys:
        return []
    task_type = get_task_type(study.task_type)
    return task_type.display_order(keys, candidate_rng(study=study, rater_id=rater.pk, item_id=item.pk, trial=trial))


def _lock_item(item_id: int) -> Item | None:
    """Lock one item row, or None when another transaction holds it."""
    return Item.objects.select_for_update(skip_locked=True).filter(pk=item_id).first()


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
    with transaction.atomic():
        if _lock_item(current.item_id) is None:
            return None
        if (
            current.item.is_attention_check
            or item_holders(current.item_id, now, exclude_id=current.pk) < enrollment.study.quota_per_item
        ):
            return _renew(current, now)
        current.state = Assignment.State.RELEASED
        current.save(update_fields=["state"])
    return None


def _wants_attention_check(study: Study, sequence: int) -> bool:
    if study.attention_check_rate <= 0:
        return False
    every = max(2, round(1 / study.attention_check_rate))
    return (sequence + 1) % every == 0


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
        locked = Enrollment.objects.select_for_update().select_related("study", "rater").get(pk=enrollment.pk)
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
    done_regular = mine.filter(state=Assignment.State.DONE, item__is_attention_check=False).count()
    if study.per_rater_cap is not None and done_regular >= study.per_rater_cap:
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

    held = dict(
        Assignment.objects.filter(study=study, item__is_attention_check=False)
        .filter(holding_filter(now))
        .values("item_id")
        .annotate(n=Count("id"))
        .values_list("item_id", "n")
    )
    rows = Item.objects.filter(study=study, is_attention_check=False).values_list("pk", "position")
    open_items = sorted(
        (row for row in rows if row[0] not in seen and held.get(row[0], 0) < study.quota_per_item),
        key=lambda row: item_sort_key(study=study, rater_id=rater.pk, item_id=row[0], position=row[1]),
    )
    for item_id, _position in open_items:
        with transaction.atomic():
            item = _lock_item(item_id)
            if item is None or item_holders(item_id, now) >= study.quota_per_item:
                continue
            return NextItem(_create(study, rater, item, sequence, now))
    return NextItem(None, "exhausted")


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


def mark_shown(*, assignment: Assignment, now: datetime | None = None) -> None:
    """Remember when the item was first put in front of the rater (for time on item)."""
    if assignment.shown_at is None:
        assignment.shown_at = now or timezone.now()
        Assignment.objects.filter(pk=assignment.pk, shown_at__isnull=True).update(shown_at=assignment.shown_at)
