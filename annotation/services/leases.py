"""What a lease is and when it expires: the short annotator lease, its renewal and its resumption.

A lease is short (``FUNNYBONE_LEASE_SECONDS``, three minutes by default), so an
item whose page was closed goes back to the others within minutes. An open item
page renews it by itself every ``heartbeat_seconds()`` (a third of the lease:
two missed beats, say from a throttled background tab, still keep the item).

Every lease's expiry is ``lease_expiry(now)``: a new lease (``services.assignment``,
the judges' assignments too), a renewal by the heartbeat (``lease_renew``) and a
returning rater's lapsed lease taken up again (``lease_resume``).

Renewal touches only the rater's own leased assignment in this study; how the
next item is chosen stays in :mod:`annotation.services.assignment`, and the
places a lease holds in :mod:`annotation.services.places`. A lease holds its
place in ``Item.places_taken`` until a request that wants the place releases
it, under the item's lock: so a lapsed lease that is still leased can simply be
extended, and a released one is lost. Lock order as there: the rater's
enrollment, then the item, then the assignment.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..models import Assignment, Enrollment, Item


def lease_seconds() -> int:
    return settings.FUNNYBONE_LEASE_SECONDS


def lease_expiry(now: datetime) -> datetime:
    """When a lease taken or renewed at ``now`` runs out."""
    return now + timedelta(seconds=lease_seconds())


def heartbeat_seconds() -> int:
    """How often an open item page renews its lease."""
    return max(1, lease_seconds() // 3)


@dataclass(frozen=True)
class Renewal:
    """The outcome of one heartbeat.

    ``reason`` is "" when renewed, "done" when the item was already answered,
    "closed" when the study no longer takes answers (or the rater's session
    ended), and "lost" when the lease ran out and the item went to someone else.
    """

    renewed: bool
    reason: str = ""
    expires_at: datetime | None = None


def lease_renew(*, enrollment: Enrollment, assignment_id: int, now: datetime | None = None) -> Renewal:
    """Extend the rater's lease on this assignment, or say why it cannot be.

    Raises ``Assignment.DoesNotExist`` for an assignment that is not this
    rater's in this study: nobody renews someone else's lease.
    """
    with transaction.atomic():
        locked = (
            Enrollment.objects.select_for_update(of=("self",)).select_related("study", "rater").get(pk=enrollment.pk)
        )
        # The clock once the rater's lock is held, as in judgment_submit.
        now = now or timezone.now()
        assignment = Assignment.objects.select_related("item").get(
            pk=assignment_id, study_id=locked.study_id, rater_id=locked.rater_id
        )
        if assignment.state == Assignment.State.DONE:
            return Renewal(False, "done")
        if locked.ended_early or locked.completed_at or not locked.study.is_open:
            return Renewal(False, "closed")
        if assignment.state != Assignment.State.LEASED:
            return Renewal(False, "lost")
        if assignment.lease_expires_at <= now:
            # Lapsed: wait for the item's row, so a request releasing this lease to take its
            # place finishes first, then see whether the lease still holds the place.
            Item.objects.select_for_update(of=("self",)).filter(pk=assignment.item_id).first()
            still = Assignment.objects.filter(pk=assignment.pk).values_list("state", flat=True).first()
            if still != Assignment.State.LEASED:
                return Renewal(False, "lost" if still != Assignment.State.DONE else "done")
        expires_at = lease_expiry(now)
        Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=expires_at)
        return Renewal(True, expires_at=expires_at)


def lease_resume(enrollment: Enrollment, now: datetime) -> Assignment | None:
    """The rater's open assignment, renewed if it has expired but still holds its place.

    The caller holds the rater's enrollment lock (``next_assignment``).
    """
    current = (
        Assignment.objects.filter(study=enrollment.study, rater=enrollment.rater, state=Assignment.State.LEASED)
        .select_related("item")
        .order_by("sequence")
        .first()
    )
    if current is None or current.lease_expires_at > now:
        return current
    # Expired but not released: it still holds its place. Renew it unless someone released it
    # meanwhile (release_expired locks it first, so this update then waits and finds it released).
    expires = lease_expiry(now)
    renewed = Assignment.objects.filter(pk=current.pk, state=Assignment.State.LEASED).update(
        leased_at=now, lease_expires_at=expires
    )
    if not renewed:
        return None
    current.leased_at, current.lease_expires_at = now, expires
    return current
