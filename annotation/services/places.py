"""The places under an item's quota: who takes one, and taking, giving back and recounting them.

Each regular item keeps how many places are taken (``Item.places_taken``:
people's assignments that are leased or done), changed only under the item's
row lock, here. A lease holds its place until it is released: an expired lease
is released lazily, by the first request that wants the place (a rater whose
walk meets the item, or a late answer), under the same lock; until then its
rater may come back and carry on (``leases.lease_resume``). Handing out the next
item (``services.assignment``) and storing an answer (``services.judgments``)
take their places through these functions.
"""

from collections import Counter
from datetime import datetime

from django.db import connection
from django.db.models import Count, F, Q
from django.db.models.functions import Coalesce

from ..models import HUMAN_KINDS, Assignment, Item, Rater, Study
from ..plainsql import shape, table


def takes_place(path: str = "rater") -> Q:
    """Whose assignments take a place under the quota: people's. Judges and previews never do."""
    return Q(**{f"{path}__kind__in": HUMAN_KINDS})


def holding_filter(now: datetime) -> Q:
    """Assignments that hold an item now: done, or leased and not expired, by a person.

    An expired lease not yet released still counts in ``Item.places_taken``
    (it is released when someone wants the place), so places_taken >= holders.
    """
    held = Q(state=Assignment.State.DONE) | Q(state=Assignment.State.LEASED, lease_expires_at__gt=now)
    return held & takes_place()


def rater_takes_place(rater: Rater) -> bool:
    # A preview walks through every item whatever the quota and holds no place; nor do judges.
    return rater.is_human


def lock_item(item_id: int, *, wait: bool = False) -> Item | None:
    """Lock one item row; unless told to wait, None when another transaction holds it."""
    return Item.objects.select_for_update(skip_locked=not wait).filter(pk=item_id).first()


def expired_leases(now: datetime) -> Q:
    """People's leases that ran out and still hold their place (not released yet)."""
    return Q(state=Assignment.State.LEASED, lease_expires_at__lte=now) & takes_place()


def release_expired(item: Item, now: datetime) -> int:
    """Give back the places of the item's expired leases; the caller holds the item's row lock.

    A lease whose rater is answering it right now (its row is locked) keeps its place.
    Updates ``item.places_taken`` in memory too. Returns how many were released.
    """
    expired = list(
        Assignment.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(expired_leases(now), item_id=item.pk)
        .values_list("pk", flat=True)
    )
    if not expired:
        return 0
    Assignment.objects.filter(pk__in=expired).update(state=Assignment.State.RELEASED)
    Item.objects.filter(pk=item.pk).update(places_taken=F("places_taken") - len(expired))
    item.places_taken -= len(expired)
    return len(expired)


def take_place(item: Item, quota: int, now: datetime) -> bool:
    """Take one of the locked item's places if one is free (after releasing expired leases)."""
    if item.places_taken >= quota:
        release_expired(item, now)
    if item.places_taken >= quota:
        return False
    Item.objects.filter(pk=item.pk).update(places_taken=F("places_taken") + 1)
    item.places_taken += 1
    return True


def places_add(assignments: list[Assignment]) -> None:
    """Count the places that assignments written elsewhere (imported answers, done) take.

    Only people's assignments of regular items take one. Items already full
    stay full (an import may bring more answers than the quota; nothing new is
    handed out for them).
    """
    per_item = Counter(a.item_id for a in assignments if a.rater.kind in HUMAN_KINDS and not a.item.is_attention_check)
    by_count: dict[int, list[int]] = {}
    for item_id, n in per_item.items():
        by_count.setdefault(n, []).append(item_id)
    for n, item_ids in by_count.items():
        Item.objects.filter(pk__in=item_ids).update(places_taken=F("places_taken") + n)


# The ids offered to one statement of ``take_free_place``, and how much longer each next stretch is.
FIRST_TAKE_STRETCH = 24
TAKE_STRETCH_GROWTH = 4


def skips_held_rows() -> bool:
    """Whether ``take_free_place`` can pass over rows other transactions hold: PostgreSQL's row locks
    with SKIP LOCKED. SQLite has no row locks; its writers take turns (``BEGIN IMMEDIATE``)."""
    return connection.vendor == "postgresql"


def take_free_place(item_ids: list[int], quota: int) -> tuple[Item | None, list[int]]:
    """Take a place in the first of these items (in the order given) that has room and that no other
    transaction holds now, one statement per stretch of ids: (the item, locked, its place taken; the
    items before it that had room but another transaction held). The one rule every path of the
    hand-out takes a place by.

    Raters who share an order all want the same next item; each takes the first
    one nobody is taking at this moment rather than queue behind the one who is
    (``FOR UPDATE SKIP LOCKED``). PostgreSQL re-reads a row another transaction
    changed since the statement began, so an item filled meanwhile is passed over
    too. (None, held) when every one is held or full (an expired lease may still
    hold a place: that is ``lock_item`` and ``take_place``'s to find out); then
    nothing is locked. The held are those the statement's snapshot shows with
    room: a transaction still at work holds them, and may end without filling
    them. PostgreSQL only: elsewhere (SQLite, whose writers are serialised
    anyway) it always answers (None, []).

    The statement reads every id it is given before it can tell which comes
    first, so a long list (a shared order's lookup gives about a hundred) is
    offered a stretch at a time: ``FIRST_TAKE_STRETCH`` ids, then
    ``TAKE_STRETCH_GROWTH`` times as many for each stretch that had none free.
    Only the requests in flight hold rows, so the first stretch nearly always
    has one.
    """
    if not skips_held_rows() or not item_ids:
        return None, []
    held: list[int] = []
    at, stretch = 0, FIRST_TAKE_STRETCH
    while at < len(item_ids):
        item, passed = _take_first_free(item_ids[at : at + stretch], quota)
        held += passed
        if item is not None:
            return item, held
        at += stretch
        stretch *= TAKE_STRETCH_GROWTH
    return None, held


def _take_first_free(item_ids: list[int], quota: int) -> tuple[Item | None, list[int]]:
    """``take_free_place``'s one statement over one stretch of the ids."""
    items, i, taken = table(Item), shape(Item, "i"), shape(Item, "taken")
    # The ids' order is their ordinality in the array (a join, not array_position per row, which would
    # make a long list quadratic). The inner SELECT locks the first row nobody holds that has room;
    # nothing can change it between there and the UPDATE, which therefore always takes the place.
    # The ARRAY reads the same snapshot: the ids before the one taken that had room when the statement
    # began, and so were passed over because another transaction held them.
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH wanted AS (SELECT id, at FROM unnest(%s::bigint[]) WITH ORDINALITY AS w(id, at)),"  # noqa: S608
            f" taken AS (UPDATE {items} AS i SET places_taken = i.places_taken + 1 WHERE i.id = ("
            f"SELECT x.id FROM wanted JOIN {items} x ON x.id = wanted.id WHERE x.places_taken < %s"
            f" ORDER BY wanted.at LIMIT 1 FOR UPDATE OF x SKIP LOCKED) RETURNING {i.select})"
            f" SELECT {taken.select}, ARRAY(SELECT x.id FROM wanted JOIN {items} x ON x.id = wanted.id"
            f" WHERE x.places_taken < %s AND wanted.at < COALESCE((SELECT w.at FROM wanted w JOIN taken"
            f" ON taken.id = w.id), 9223372036854775807) ORDER BY wanted.at) FROM (SELECT 1) AS one LEFT JOIN taken ON TRUE",
            [item_ids, quota, quota],
        )
        row = cursor.fetchone()
    return (None if row[0] is None else taken.build(row)), list(row[-1])


def places_recount(*, study: Study, fix: bool = False) -> dict[int, tuple[int, int]]:
    """Recount each regular item's places from its assignments: {item id: (stored, recounted)} where they differ.

    The counter is written only under the item's lock, so this should always be
    empty; ``fix`` writes the recounted values (run it with the study closed).
    """
    held = Q(assignments__state__in=[Assignment.State.LEASED, Assignment.State.DONE]) & takes_place(
        "assignments__rater"
    )
    rows = (
        Item.objects.filter(study=study, is_attention_check=False)
        .annotate(recounted=Coalesce(Count("assignments", filter=held), 0))
        .exclude(places_taken=F("recounted"))
        .values_list("pk", "places_taken", "recounted")
    )
    drift = {pk: (stored, recounted) for pk, stored, recounted in rows}
    if fix:
        for pk, (_stored, recounted) in drift.items():
            Item.objects.filter(pk=pk).update(places_taken=recounted)
    return drift


def places_give_back(*, study: Study, rater_ids: list[int], drop_answers: bool = False) -> int:
    """Give back at once the places these raters hold in the study; returns how many.

    Their open leases (expired or not) are released. With ``drop_answers`` (a
    withdrawal) their answered assignments give their places back too and every
    assignment of theirs in the study is deleted, judgments with it. Each item's
    count changes under its row lock, items in id order; the caller runs this in
    a transaction and, when a rater may be answering, holds their enrollment first
    (the order the answer path locks in).
    """
    states = [Assignment.State.LEASED, Assignment.State.DONE] if drop_answers else [Assignment.State.LEASED]
    holding = Assignment.objects.filter(
        takes_place(), study=study, rater_id__in=rater_ids, state__in=states, item__is_attention_check=False
    )
    given = 0
    for item_id in sorted(set(holding.values_list("item_id", flat=True))):
        lock_item(item_id, wait=True)
        n = holding.filter(item_id=item_id).update(state=Assignment.State.RELEASED)
        Item.objects.filter(pk=item_id).update(places_taken=F("places_taken") - n)
        given += n
    if drop_answers:
        Assignment.objects.filter(study=study, rater_id__in=rater_ids).delete()
    return given
