"""Reads for the researcher pages and the API: studies, items, judgments and progress.

(The annotator's own reads are in :mod:`annotation.selectors.annotator`.)

Every count here is derived from the rows themselves by aggregate queries,
except the progress page's per-item counts, which read ``Item.places_taken``
(kept exactly under the item lock by services.places) and correct it by
the open leases; see ``_item_totals``.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Least

from ..access import owned_by
from ..models import (
    COUNTED_KINDS,
    HUMAN_KINDS,
    Assignment,
    Enrollment,
    Item,
    ItemImport,
    Judgment,
    Rater,
    Study,
    counted_raters,
)
from ..services.places import takes_place


def _count_per_study(rows: QuerySet) -> Coalesce:
    """How many of ``rows`` belong to the outer study, as a scalar subquery."""
    counted = rows.filter(study=OuterRef("pk")).order_by().values("study").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def studies_owned(*, user: AbstractBaseUser) -> QuerySet[Study]:
    """The user's own studies with item and judgment counts.

    Each count is its own subquery: joining items and judgments in one query
    and counting distinct rows multiplies them (a 200,000-item study with
    20,000 judgments kept the study list busy for minutes).
    """
    return (
        owned_by(Study, user=user)
        .annotate(
            n_items=_count_per_study(Item.objects.filter(is_attention_check=False)),
            n_judgments=_count_per_study(Judgment.objects.filter(counted_raters())),
        )
        .order_by("-created_at", "-id")
    )


def study_items(*, study: Study) -> QuerySet[Item]:
    return study.items.prefetch_related("candidates").order_by("position", "id")


def study_imports(*, study: Study) -> QuerySet[ItemImport]:
    return study.imports.select_related("created_by").order_by("-created_at", "-id")


def study_judgments(*, study: Study, rater_kind: str | None = None, status: str | None = None) -> QuerySet[Judgment]:
    judgments = study.judgments.filter(counted_raters()).select_related("item", "rater").order_by("id")
    if rater_kind:
        judgments = judgments.filter(rater__kind=rater_kind)
    if status:
        judgments = judgments.filter(status=status)
    return judgments


@dataclass(frozen=True)
class ItemProgress:
    item_id: int
    external_id: str
    done: int
    quota: int

    @property
    def complete(self) -> bool:
        return self.done >= self.quota


@dataclass(frozen=True)
class RaterProgress:
    rater_id: int
    name: str
    kind: str
    judgments: int
    attention_passed: int
    attention_failed: int
    too_fast: int
    excluded: bool
    excluded_reason: str
    ended_early: bool
    started_at: datetime
    completed_at: datetime | None
    declined: bool = False

    @property
    def completed(self) -> bool:
        return self.completed_at is not None

    @property
    def found_no_work(self) -> bool:
        """Finished without a single answer: the study was full when they came."""
        return self.completed and self.judgments == 0 and self.attention_passed + self.attention_failed == 0


@dataclass(frozen=True)
class StudyProgress:
    """Totals over the whole study (computed in the database) and one page of item and rater rows."""

    quota: int
    items_total: int
    items_complete: int
    items_started: int
    judgments_done: int  # human judgments of regular items, each item counted up to its quota
    judgments_needed: int
    judge_judgments: int  # LLM and baseline judges, outside the quota
    raters_total: int
    raters_completed: int
    raters_excluded: int
    items: list[ItemProgress]  # least complete first; the requested page
    raters: list[RaterProgress]  # in the order they enrolled; the requested page

    @property
    def percent(self) -> float:
        if not self.judgments_needed:
            return 0.0
        return round(100 * self.judgments_done / self.judgments_needed, 1)


def _enrollments_with_counts(study: Study) -> QuerySet[Enrollment]:
    """The study's counted enrollments with each rater's counts, as correlated subqueries.

    Slice this before reading it: each count is then computed for the rows of
    the page only, each through an index (``judgment_rater_study_idx`` for
    the rater's judgments and those too fast, the few attention-check items
    for the checks), never by grouping every judgment of the study.
    """
    mine = Judgment.objects.filter(rater=OuterRef("rater_id"), study=OuterRef("study_id"))
    on_checks = mine.filter(item__in=Item.objects.filter(study=OuterRef(OuterRef("study_id")), is_attention_check=True))
    return (
        Enrollment.objects.filter(counted_raters(), study=study)
        .select_related("rater")
        .annotate(
            n_all=_count(mine),
            n_checks=_count(on_checks),
            n_passed=_count(on_checks.filter(attention_passed=True)),
            n_failed=_count(on_checks.filter(attention_passed=False)),
            n_too_fast=_count(mine.filter(too_fast=True)),
        )
        .order_by("created_at", "id")
    )


def _count(rows: QuerySet) -> Coalesce:
    """``rows.count()`` as a scalar subquery, to read several counts in one query."""
    counted = rows.order_by().annotate(_one=Value(1)).values("_one").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted), 0)


def _rater_row(e: Enrollment) -> RaterProgress:
    return RaterProgress(
        rater_id=e.rater_id,
        name=str(e.rater),
        kind=e.rater.kind,
        judgments=e.n_all - e.n_checks,
        attention_passed=e.n_passed,
        attention_failed=e.n_failed,
        too_fast=e.n_too_fast,
        excluded=e.excluded,
        excluded_reason=e.excluded_reason,
        ended_early=e.ended_early,
        started_at=e.created_at,
        completed_at=e.completed_at,
        declined=e.declined_at is not None and e.consented_at is None,
    )


def _page(rows: QuerySet, offset: int, limit: int | None) -> QuerySet:
    offset = max(offset, 0)
    return rows[offset:] if limit is None else rows[offset : offset + max(limit, 0)]


# An item's human judgments are its people's done assignments (a person's judgment and the
# DONE state of its assignment are written together, by judgment_submit or the importer), and
# ``Item.places_taken`` counts people's assignments that are leased or done. So
#     done = places_taken - (people's leases on the item, expired or not),
# and only the few items with an open lease need more than their places_taken. The leases
# come from ``assignment_open_lease_idx``; places_taken from ``item_room_idx``.


def _leases_on(study: Study) -> QuerySet[Assignment]:
    return Assignment.objects.filter(takes_place(), study=study, state=Assignment.State.LEASED)


def _item_totals(study: Study) -> dict[str, int]:
    """items_total, items_complete, items_started and judgments_done, from places_taken and the open leases."""
    quota = study.quota_per_item
    regular = Item.objects.filter(study=study, is_attention_check=False)
    # Count("places_taken"), not Count("pk"): the index holds places_taken, so the count reads the index alone.
    stored = regular.aggregate(
        items_total=Count("places_taken"),
        items_complete=Count("places_taken", filter=Q(places_taken__gte=quota)),
        items_started=Count("places_taken", filter=Q(places_taken__gt=0)),
        judgments_done=Coalesce(Sum(Least("places_taken", Value(quota))), 0),
    )
    leases = _leases_on(study).filter(item=OuterRef("pk"))
    leased = regular.filter(pk__in=_leases_on(study).values("item_id")).annotate(
        done=F("places_taken") - _count(leases)
    )
    # What each leased item adds once its leases are taken off: the difference from its stored count.
    fix = leased.aggregate(
        items_complete=Count("pk", filter=Q(done__gte=quota)) - Count("pk", filter=Q(places_taken__gte=quota)),
        items_started=Count("pk", filter=Q(done__gt=0)) - Count("pk", filter=Q(places_taken__gt=0)),
        judgments_done=Coalesce(Sum(Least("done", Value(quota))), 0)
        - Coalesce(Sum(Least("places_taken", Value(quota))), 0),
    )
    return {key: value + fix.get(key, 0) for key, value in stored.items()}


def _item_rows(study: Study, offset: int, limit: int | None) -> list[ItemProgress]:
    """One page of regular items, least judged first (ties in import order), walked from the index.

    The items without a lease are read in ``item_room_idx`` order, so a page
    costs its offset plus its length; the few leased ones are merged in with
    their leases taken off.
    """
    quota = study.quota_per_item
    offset = max(offset, 0)
    item, assignment = Item._meta.db_table, Assignment._meta.db_table
    rater = Rater._meta.db_table
    leased = (
        f"SELECT a.item_id FROM {assignment} a JOIN {rater} r ON r.id = a.rater_id"  # noqa: S608 - fixed text
        f" WHERE a.study_id = %s AND a.state = %s AND r.kind IN ({', '.join(['%s'] * len(HUMAN_KINDS))})"
    )
    leased_params = [study.pk, Assignment.State.LEASED, *HUMAN_KINDS]
    # The unleased items in index order, only as far as this page reaches (the whole list without a limit).
    walked = (
        f"SELECT i.id, i.external_id, i.position, i.places_taken AS done FROM {item} i"  # noqa: S608 - fixed text
        f" WHERE i.study_id = %s AND NOT i.is_attention_check AND i.id NOT IN ({leased})"
        " ORDER BY i.places_taken, i.position, i.id"
    )
    params: list = [study.pk, *leased_params]
    if limit is not None:
        walked += " LIMIT %s"
        params.append(offset + max(limit, 0))
    # The leased items, each with its leases taken off its count.
    leased_rows = (
        f"SELECT i.id, i.external_id, i.position, i.places_taken - l.n AS done FROM {item} i"  # noqa: S608
        f" JOIN (SELECT item_id, COUNT(*) AS n FROM ({leased}) held GROUP BY item_id) l ON l.item_id = i.id"
        " WHERE NOT i.is_attention_check"
    )
    union = f"SELECT * FROM ({walked}) walked UNION ALL {leased_rows}"  # noqa: S608 - fixed text
    sql = f"SELECT id, external_id, done FROM ({union}) rows ORDER BY done, position, id"  # noqa: S608
    params += leased_params
    if limit is not None:
        sql += " LIMIT %s OFFSET %s"
        params += [max(limit, 0), offset]
    elif offset:
        sql += " LIMIT -1 OFFSET %s" if connection.vendor == "sqlite" else " OFFSET %s"
        params.append(offset)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [
            ItemProgress(item_id=pk, external_id=ext, done=done, quota=quota) for pk, ext, done in cursor.fetchall()
        ]


def study_progress(
    *,
    study: Study,
    item_limit: int | None = None,
    item_offset: int = 0,
    rater_limit: int | None = None,
    rater_offset: int = 0,
) -> StudyProgress:
    """Judgments per item against the quota, per rater, and overall completion.

    The totals are aggregates over indexes (each item's ``places_taken``, the
    study's open leases, the judges' judgments by rater); only the requested
    page of item and rater rows is read, walked from indexes, so the page costs
    the same few queries for a million items as for twenty, and no query
    groups the study's judgments.
    """
    quota = study.quota_per_item
    totals = _item_totals(study)
    raters = Enrollment.objects.filter(counted_raters(), study=study).aggregate(
        raters_total=Count("pk"),
        raters_completed=Count("pk", filter=Q(completed_at__isnull=False)),
        raters_excluded=Count("pk", filter=Q(excluded=True)),
    )
    judges = Rater.objects.filter(kind__in=COUNTED_KINDS).exclude(kind__in=HUMAN_KINDS)
    return StudyProgress(
        quota=quota,
        judgments_needed=totals["items_total"] * quota,
        judge_judgments=Judgment.objects.filter(study=study, rater__in=judges).count(),
        items=_item_rows(study, item_offset, item_limit),
        raters=[_rater_row(e) for e in _page(_enrollments_with_counts(study), rater_offset, rater_limit)],
        **totals,
        **raters,
    )
