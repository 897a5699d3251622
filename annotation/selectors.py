"""Reads for the researcher pages and the API: studies, items, judgments and progress.

Every count here is derived from the rows themselves by aggregate queries;
nothing reads a stored counter.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Least

from .access import owned_by
from .models import HUMAN_KINDS, Enrollment, Item, ItemImport, Judgment, Study, counted_raters


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
    in_study = Q(rater__judgments__study=study)
    return (
        Enrollment.objects.filter(counted_raters(), study=study)
        .select_related("rater")
        .annotate(
            n_judged=Count("rater__judgments", filter=in_study & Q(rater__judgments__item__is_attention_check=False)),
            n_passed=Count("rater__judgments", filter=in_study & Q(rater__judgments__attention_passed=True)),
            n_failed=Count("rater__judgments", filter=in_study & Q(rater__judgments__attention_passed=False)),
            n_too_fast=Count("rater__judgments", filter=in_study & Q(rater__judgments__too_fast=True)),
        )
        .order_by("created_at", "id")
    )


def _rater_row(e: Enrollment) -> RaterProgress:
    return RaterProgress(
        rater_id=e.rater_id,
        name=str(e.rater),
        kind=e.rater.kind,
        judgments=e.n_judged,
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


def _items_with_counts(study: Study) -> QuerySet[Item]:
    return Item.objects.filter(study=study, is_attention_check=False).annotate(
        done=Count("judgments", filter=Q(judgments__rater__kind__in=HUMAN_KINDS))
    )


def _page(rows: QuerySet, offset: int, limit: int | None) -> QuerySet:
    offset = max(offset, 0)
    return rows[offset:] if limit is None else rows[offset : offset + max(limit, 0)]


def study_progress(
    *,
    study: Study,
    item_limit: int | None = None,
    item_offset: int = 0,
    rater_limit: int | None = None,
    rater_offset: int = 0,
) -> StudyProgress:
    """Judgments per item against the quota, per rater, and overall completion.

    The totals are aggregates the database computes over every item and
    rater; only the requested page of rows is read into memory, so a study
    of a million items costs the same few queries as a small one.
    """
    quota = study.quota_per_item
    per_item = _items_with_counts(study)
    totals = per_item.aggregate(
        items_total=Count("pk"),
        items_complete=Count("pk", filter=Q(done__gte=quota)),
        items_started=Count("pk", filter=Q(done__gt=0)),
        judgments_done=Coalesce(Sum(Least("done", Value(quota))), 0),
    )
    raters = Enrollment.objects.filter(counted_raters(), study=study).aggregate(
        raters_total=Count("pk"),
        raters_completed=Count("pk", filter=Q(completed_at__isnull=False)),
        raters_excluded=Count("pk", filter=Q(excluded=True)),
    )
    item_rows = _page(per_item.order_by("done", "external_id", "pk"), item_offset, item_limit)
    return StudyProgress(
        quota=quota,
        judgments_needed=totals["items_total"] * quota,
        judge_judgments=study.judgments.filter(counted_raters()).exclude(rater__kind__in=HUMAN_KINDS).count(),
        items=[
            ItemProgress(item_id=pk, external_id=external_id, done=done, quota=quota)
            for pk, external_id, done in item_rows.values_list("pk", "external_id", "done")
        ],
        raters=[_rater_row(e) for e in _page(_enrollments_with_counts(study), rater_offset, rater_limit)],
        **totals,
        **raters,
    )


# ---------------------------------------------------------------------------
# Annotator side: what one rater may see of their own study.
#
# These helpers hand templates plain values built for display only: never a
# candidate key, provenance, item metadata, a gold answer, nor anyone else's
# answers (vote totals appear only on the closed-study leaderboard).
# ---------------------------------------------------------------------------

from collections import Counter as _Counter  # noqa: E402
from collections import defaultdict as _defaultdict  # noqa: E402
from dataclasses import dataclass as _dataclass  # noqa: E402

from django.db import connection as _connection  # noqa: E402
from django.db.models import Count as _Count  # noqa: E402
from django.db.models import Subquery as _Subquery  # noqa: E402
from django.db.models import Value as _Value  # noqa: E402
from django.db.models.functions import Coalesce as _Coalesce  # noqa: E402

from .models import Assignment as _Assignment  # noqa: E402
from .models import Enrollment as _Enrollment  # noqa: E402
from .models import Item as _Item  # noqa: E402
from .models import Judgment as _Judgment  # noqa: E402
from .models import Rater as _Rater  # noqa: E402
from .models import Study as _Study  # noqa: E402
from .services.assignment import takes_place as _takes_place  # noqa: E402


@_dataclass(frozen=True)
class ShownCandidate:
    """A candidate as the rater sees it: its place on the page and its texts."""

    position: int  # 0-based index into the assignment's shown_order; what the form posts
    text: str
    context: str

    @property
    def number(self) -> int:
        return self.position + 1


@_dataclass(frozen=True)
class ShownItem:
    prompt: str
    text: str
    candidates: list[ShownCandidate]


def shown_item(*, assignment: _Assignment) -> ShownItem:
    """The item's texts, with its candidates in the order this rater was shown them."""
    item = assignment.item
    # Items of task types without candidates were shown none: no query for them.
    by_key = {c.key: c for c in item.candidates.all()} if assignment.shown_order else {}
    candidates = [
        ShownCandidate(position=index, text=by_key[key].text, context=by_key[key].context)
        for index, key in enumerate(assignment.shown_order)
        if key in by_key
    ]
    return ShownItem(prompt=item.prompt, text=item.text, candidates=candidates)


# Without a per-rater cap, the progress bar counts at most this many unseen items with room.
PROGRESS_LOOKAHEAD = 500


@_dataclass(frozen=True)
class AnnotatorProgress:
    done: int
    expected: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.expected) if self.expected else 0


def _count_of(queryset) -> _Coalesce:
    """``queryset.count()`` as a scalar subquery, to read several counts in one query."""
    counted = queryset.order_by().annotate(_one=_Value(1)).values("_one").annotate(n=_Count("*")).values("n")
    return _Coalesce(_Subquery(counted), 0)


def annotator_progress(*, enrollment: _Enrollment) -> AnnotatorProgress:
    """Regular items this rater has judged, out of what they can expect to judge.

    Expected is what is still reachable: the rater's open item plus the items
    they have not seen that still have a free place under the quota, capped by
    the per-rater cap. Attention checks are left out of both numbers. The items
    with room are counted through their index and only as far as the cap (or
    ``PROGRESS_LOOKAHEAD`` without one), so a big study costs no more than a small one.
    """
    study, rater = enrollment.study, enrollment.rater
    quota, preview = study.quota_per_item, rater.is_preview
    # Plain SQL, two round trips: this runs on every item page, and building these queries with
    # the ORM cost more CPU than everything else on the page.
    item, assignment, judgment = (m._meta.db_table for m in (_Item, _Assignment, _Judgment))
    mine = f"FROM {assignment} a JOIN {item} i ON i.id = a.item_id WHERE a.study_id = %s AND a.rater_id = %s"
    regular = "i.is_attention_check = %s"
    # A preview is not bound by the quota (services.assignment): every unseen item is reachable.
    seen_room = "" if preview else " AND i.places_taken < %s"
    with _connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {judgment} j JOIN {item} i ON i.id = j.item_id"  # noqa: S608 - fixed text
            f" WHERE j.study_id = %s AND j.rater_id = %s AND {regular}),"
            f" (SELECT COUNT(*) {mine} AND a.state = %s AND {regular}),"
            f" (SELECT COUNT(*) {mine} AND {regular}{seen_room})",
            [study.pk, rater.pk, False, study.pk, rater.pk, _Assignment.State.LEASED, False, study.pk, rater.pk, False]
            + ([] if preview else [quota]),
        )
        done, open_mine, seen_with_room = cursor.fetchone()
        wanted = PROGRESS_LOOKAHEAD if study.per_rater_cap is None else max(0, study.per_rater_cap - done - open_mine)
        room = 0
        if wanted:
            # Items with room, read along their index only as far as needed, less the ones the rater has seen.
            with_room = "" if preview else " AND places_taken < %s ORDER BY places_taken, position"
            cursor.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {item} WHERE study_id = %s AND is_attention_check = %s"  # noqa: S608
                f"{with_room} LIMIT %s) r",
                [study.pk, False, *([] if preview else [quota]), wanted + seen_with_room],
            )
            room = max(0, cursor.fetchone()[0] - seen_with_room)
    expected = done + open_mine + room
    if study.per_rater_cap is not None:
        expected = min(expected, study.per_rater_cap)
    return AnnotatorProgress(done=done, expected=max(expected, done))


def has_judged(*, enrollment: _Enrollment) -> bool:
    return _Judgment.objects.filter(study=enrollment.study, rater=enrollment.rater).exists()


def has_done_enough(*, enrollment: _Enrollment) -> bool:
    """Whether the rater gave the answers the study asks for before its completion code.

    At the default of one, any answer will do (attention checks included, as before);
    a higher minimum counts answers to regular items only.
    """
    study = enrollment.study
    if study.min_answers <= 1:
        return has_judged(enrollment=enrollment)
    answered = _Judgment.objects.filter(study=study, rater=enrollment.rater, item__is_attention_check=False)
    return answered.count() >= study.min_answers


@_dataclass(frozen=True)
class RankedResponse:
    rank: int
    text: str
    context: str
    votes: int


@_dataclass(frozen=True)
class PromptLeaderboard:
    prompt: str
    text: str
    total_votes: int
    responses: list[RankedResponse]


def vote_leaderboard(*, study: _Study, offset: int = 0, limit: int | None = None) -> list[PromptLeaderboard]:
    """Each prompt's responses ranked by the votes people gave them (ties share a rank).

    Counts only human raters who were not excluded (e.g. for failed attention
    checks); LLM judges' votes belong in the analysis, not on this board.
    ``offset`` and ``limit`` choose a page of prompts in listed order; only
    that page's items and votes are read.
    """
    items = _Item.objects.filter(study=study, is_attention_check=False).order_by("position", "id")
    offset = max(offset, 0)
    items = list((items[offset:] if limit is None else items[offset : offset + limit]).prefetch_related("candidates"))
    excluded = _Enrollment.objects.filter(study=study, excluded=True).values("rater_id")
    rows = (
        _Judgment.objects.filter(
            study=study,
            item__in=[item.pk for item in items],
            status=_Judgment.Status.OK,
            rater__kind__in=[_Rater.Kind.EXPERT, _Rater.Kind.CROWD],
        )
        .exclude(rater_id__in=excluded)
        .values_list("item_id", "value")
    )
    totals: dict[int, _Counter] = _defaultdict(_Counter)
    for item_id, value in rows.iterator(chunk_size=2000):
        for key, count in (value or {}).get("votes", {}).items():
            totals[item_id][key] += int(count)
    boards = []
    for item in items:
        votes = totals.get(item.pk, _Counter())
        ordered = sorted(item.candidates.all(), key=lambda c: (-votes[c.key], c.position, c.pk))
        ranked: list[RankedResponse] = []
        for index, candidate in enumerate(ordered):
            tied = ranked and ranked[-1].votes == votes[candidate.key]
            rank = ranked[-1].rank if tied else index + 1
            ranked.append(RankedResponse(rank, candidate.text, candidate.context, votes[candidate.key]))
        boards.append(PromptLeaderboard(item.prompt, item.text, sum(votes.values()), ranked))
    return boards


def leaderboard_prompts(*, study: _Study) -> int:
    """How many prompts the leaderboard has, for its page links."""
    return _Item.objects.filter(study=study, is_attention_check=False).count()


def study_is_full(*, study: _Study) -> bool:
    """Every regular item has all the answers its quota asks for: nothing is left for anyone, ever.

    No regular item has a free place, and no place is held by a lease (a leased
    item may still come free). Two index lookups, whatever the study's size.
    """
    with_room = _Item.objects.filter(study=study, is_attention_check=False, places_taken__lt=study.quota_per_item)
    leased = _Assignment.objects.filter(_takes_place(), study=study, state=_Assignment.State.LEASED).filter(
        item__is_attention_check=False
    )
    return not with_room.exists() and not leased.exists()


@_dataclass(frozen=True)
class OutcomeCode:
    """What a participant is given at the end: the study's code, message and link for how it ended."""

    code: str
    message: str
    redirect_url: str


# The study fields (code, message, redirect URL) of each way a participant's session can end.
OUTCOME_FIELDS = {
    "complete": ("completion_code", "completion_message", "completion_redirect_url"),
    "empty": ("no_work_code", "no_work_message", "no_work_redirect_url"),
    "ended": ("failed_checks_code", "failed_checks_message", "failed_checks_redirect_url"),
    "declined": ("declined_code", "declined_message", "declined_redirect_url"),
}


def outcome_for(*, study: _Study, outcome: str) -> OutcomeCode | None:
    """The study's code, message and redirect for this outcome; None when it has none of them."""
    fields = OUTCOME_FIELDS.get(outcome)
    if fields is None:
        return None
    found = OutcomeCode(*(str(getattr(study, name) or "").strip() for name in fields))
    return found if any((found.code, found.message, found.redirect_url)) else None
