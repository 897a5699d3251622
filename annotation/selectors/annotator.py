"""Reads for the annotator's pages: what one rater may see of their own study.

These helpers hand templates plain values built for display only: never a
candidate key, provenance, item metadata, a gold answer, nor anyone else's
answers (vote totals appear only on the closed-study leaderboard). The
researcher's reads are in :mod:`annotation.selectors.researcher`.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.db import connection

from ..media import MediaRef, item_media, rater_media_url
from ..models import HUMAN_KINDS, Assignment, Enrollment, Item, Judgment, Rater, Study
from ..outcomes import answered_enough
from ..plainsql import fetch, shape, table
from ..services.places import takes_place


def enrollment_by_token(*, enrollment_ids: list[int], entry_token: str) -> Enrollment | None:
    """Of these enrollments, the one in the study with this entry token (not a draft), read with its
    study and rater in one query: every annotator request starts here. Plain SQL (``plainsql``)."""
    if not enrollment_ids:
        return None
    e, s, r = (shape(model, alias) for model, alias in ((Enrollment, "e"), (Study, "s"), (Rater, "r")))
    marks = ", ".join(["%s"] * len(enrollment_ids))
    found = fetch(
        f"SELECT {e.select}, {s.select}, {r.select} FROM {table(Enrollment)} e"  # noqa: S608 - fixed text
        f" JOIN {table(Study)} s ON s.id = e.study_id JOIN {table(Rater)} r ON r.id = e.rater_id"
        f" WHERE e.id IN ({marks}) AND s.entry_token = %s AND s.state <> %s ORDER BY e.id LIMIT 1",
        [*enrollment_ids, entry_token, Study.State.DRAFT],
        e,
        s,
        r,
    )
    if found is None:
        return None
    enrollment, study, rater = found
    enrollment.study, enrollment.rater = study, rater
    return enrollment


@dataclass(frozen=True)
class ShownPicture:
    """One picture (or sound, or clip) as the rater's page shows it: the blind address the media home
    gives this rater, the researcher's alt text, and the size the page reserves for it."""

    url: str
    alt: str
    width: int | None
    height: int | None
    content_type: str

    @property
    def is_image(self) -> bool:
        return self.content_type.startswith("image/")

    @property
    def is_audio(self) -> bool:
        return self.content_type.startswith("audio/")


@dataclass(frozen=True)
class ShownCandidate:
    """A candidate as the rater sees it: its place on the page, its texts and its own pictures."""

    position: int  # 0-based index into the assignment's shown_order; what the form posts
    text: str
    context: str
    pictures: tuple[ShownPicture, ...] = ()

    @property
    def number(self) -> int:
        return self.position + 1


@dataclass(frozen=True)
class ShownItem:
    prompt: str
    text: str
    candidates: list[ShownCandidate]
    prompt_pictures: tuple[ShownPicture, ...] = ()
    pictures: tuple[ShownPicture, ...] = ()

    @property
    def pictures_first(self) -> bool:
        """The item's own pictures are the first on the page (the prompt has none): load them at once."""
        return not self.prompt_pictures


def _shown(refs: list[MediaRef]) -> tuple[ShownPicture, ...]:
    return tuple(
        ShownPicture(rater_media_url(ref), ref.alt, ref.width, ref.height, ref.content_type)
        for ref in sorted(refs, key=lambda ref: ref.position)
    )


def shown_item(*, assignment: Assignment) -> ShownItem:
    """The item's texts, with its candidates in the order this rater was shown them."""
    item = assignment.item
    # Items of task types without candidates were shown none: no query for them.
    by_key = {c.key: c for c in item.candidates.all()} if assignment.shown_order else {}
    # The item's pictures, its candidates' by candidate key: one query (the media home's read).
    refs = item_media([item.pk]).get(item.pk, [])
    theirs: dict[str, list[MediaRef]] = defaultdict(list)
    for ref in refs:
        if ref.role == "candidate":
            theirs[ref.candidate_key].append(ref)
    candidates = [
        ShownCandidate(
            position=index, text=by_key[key].text, context=by_key[key].context, pictures=_shown(theirs.get(key, []))
        )
        for index, key in enumerate(assignment.shown_order)
        if key in by_key
    ]
    return ShownItem(
        prompt=item.prompt,
        text=item.text,
        candidates=candidates,
        prompt_pictures=_shown([ref for ref in refs if ref.role == "prompt"]),
        pictures=_shown([ref for ref in refs if ref.role == "item"]),
    )


# Without a per-rater cap, the progress bar counts at most this many unseen items with room.
PROGRESS_LOOKAHEAD = 500


@dataclass(frozen=True)
class AnnotatorProgress:
    done: int
    expected: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.expected) if self.expected else 0


def annotator_progress(*, enrollment: Enrollment) -> AnnotatorProgress:
    """Regular items this rater has judged, out of what they can expect to judge.

    Expected is what is still reachable: the rater's open item plus the items
    they have not seen that have a place for them now or may have one soon,
    capped by the per-rater cap. A place may come soon where a lease holds it:
    someone else's, live or lapsed (a lapsed lease keeps its place until a
    request releases it), as ``services.assignment`` waits for them. So a rater
    waiting for leased items, or looking at items whose leases lapsed, is told
    how many are still ahead, not "0 of 0". Attention checks are left out of
    both numbers. The items with room are counted through their index and only
    as far as the cap (or ``PROGRESS_LOOKAHEAD`` without one), the leased ones
    through the index of open leases, so a big study costs no more than a small one.
    """
    study, rater = enrollment.study, enrollment.rater
    quota, preview = study.quota_per_item, rater.is_preview
    # Plain SQL, one round trip: this runs on every item page, and building it with the ORM cost more
    # CPU than everything else on the page. The rater's regular assignments give what they have done
    # (an assignment is done in the transaction that stores its judgment), their open item and the
    # items they have seen that still have room; then the items with room are read along their index
    # only as far as the rater could still go, less the ones seen.
    item, assignment = table(Item), table(Assignment)
    # A preview is not bound by the quota (services.assignment): every unseen item is reachable.
    seen_room = "1" if preview else "CASE WHEN i.places_taken < %s THEN 1 ELSE 0 END"
    with_room = "" if preview else " AND places_taken < %s ORDER BY places_taken, position"
    if study.per_rater_cap is None:
        wanted, wanted_params = "%s", [PROGRESS_LOOKAHEAD]
    else:
        wanted, wanted_params = (
            "CASE WHEN %s - done - open_mine > 0 THEN %s - done - open_mine ELSE 0 END",
            [study.per_rater_cap] * 2,
        )
    room_params = [] if preview else [quota]
    if preview:
        leased, leased_params = "0", []
    else:
        # Full items (no room in the index) whose places people's leases hold: they may come free.
        kinds = ", ".join(["%s"] * len(HUMAN_KINDS))
        leased = (
            f"(SELECT COUNT(DISTINCT x.item_id) FROM {assignment} x JOIN {item} f ON f.id = x.item_id"  # noqa: S608
            f" JOIN {table(Rater)} p ON p.id = x.rater_id WHERE x.study_id = %s AND x.state = %s"
            f" AND x.rater_id <> %s AND p.kind IN ({kinds}) AND f.is_attention_check = %s AND f.places_taken >= %s"
            f" AND NOT EXISTS (SELECT 1 FROM {assignment} m WHERE m.rater_id = %s AND m.item_id = x.item_id))"
        )
        leased_params = [study.pk, Assignment.State.LEASED, rater.pk, *HUMAN_KINDS, False, quota, rater.pk]
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH mine AS (SELECT COALESCE(SUM(CASE WHEN a.state = %s THEN 1 ELSE 0 END), 0) AS done,"  # noqa: S608
            f" COALESCE(SUM(CASE WHEN a.state = %s THEN 1 ELSE 0 END), 0) AS open_mine,"
            f" COALESCE(SUM({seen_room}), 0) AS seen"
            f" FROM {assignment} a JOIN {item} i ON i.id = a.item_id"
            f" WHERE a.study_id = %s AND a.rater_id = %s AND i.is_attention_check = %s)"
            f" SELECT done, open_mine, seen, (SELECT COUNT(*) FROM (SELECT 1 FROM {item}"
            f" WHERE study_id = %s AND is_attention_check = %s{with_room}"
            f" LIMIT (SELECT {wanted} + seen FROM mine)) r), {leased} FROM mine",
            [Assignment.State.DONE, Assignment.State.LEASED, *room_params, study.pk, rater.pk, False]
            + [study.pk, False, *room_params, *wanted_params, *leased_params],
        )
        done, open_mine, seen_with_room, with_room_count, leased_elsewhere = cursor.fetchone()
    room = max(0, with_room_count - seen_with_room) + leased_elsewhere
    expected = done + open_mine + room
    if study.per_rater_cap is not None:
        expected = min(expected, study.per_rater_cap)
    return AnnotatorProgress(done=done, expected=max(expected, done))


def has_judged(*, enrollment: Enrollment) -> bool:
    return Judgment.objects.filter(study=enrollment.study, rater=enrollment.rater).exists()


def has_done_enough(*, enrollment: Enrollment) -> bool:
    """Whether the rater gave the answers the study asks for (``outcomes.answered_enough``), in one cheap query."""
    study = enrollment.study
    if study.min_answers <= 1:
        # Any answer will do: whether there is one is enough to know.
        answers = int(has_judged(enrollment=enrollment))
        return answered_enough(min_answers=study.min_answers, answers=answers, regular_answers=0)
    answered = Judgment.objects.filter(study=study, rater=enrollment.rater, item__is_attention_check=False)
    count = answered.count()
    return answered_enough(min_answers=study.min_answers, answers=count, regular_answers=count)


@dataclass(frozen=True)
class RankedResponse:
    rank: int
    text: str
    context: str
    votes: int


@dataclass(frozen=True)
class PromptLeaderboard:
    prompt: str
    text: str
    total_votes: int
    responses: list[RankedResponse]


def vote_leaderboard(*, study: Study, offset: int = 0, limit: int | None = None) -> list[PromptLeaderboard]:
    """Each prompt's responses ranked by the votes people gave them (ties share a rank).

    Counts only human raters who were not excluded (e.g. for failed attention
    checks); LLM judges' votes belong in the analysis, not on this board.
    ``offset`` and ``limit`` choose a page of prompts in listed order; only
    that page's items and votes are read.
    """
    items = Item.objects.filter(study=study, is_attention_check=False).order_by("position", "id")
    offset = max(offset, 0)
    items = list((items[offset:] if limit is None else items[offset : offset + limit]).prefetch_related("candidates"))
    excluded = Enrollment.objects.filter(study=study, excluded=True).values("rater_id")
    rows = (
        Judgment.objects.filter(
            study=study,
            item__in=[item.pk for item in items],
            status=Judgment.Status.OK,
            rater__kind__in=[Rater.Kind.EXPERT, Rater.Kind.CROWD],
        )
        .exclude(rater_id__in=excluded)
        .values_list("item_id", "value")
    )
    totals: dict[int, Counter] = defaultdict(Counter)
    for item_id, value in rows.iterator(chunk_size=2000):
        for key, count in (value or {}).get("votes", {}).items():
            totals[item_id][key] += int(count)
    boards = []
    for item in items:
        votes = totals.get(item.pk, Counter())
        ordered = sorted(item.candidates.all(), key=lambda c: (-votes[c.key], c.position, c.pk))
        ranked: list[RankedResponse] = []
        for index, candidate in enumerate(ordered):
            tied = ranked and ranked[-1].votes == votes[candidate.key]
            rank = ranked[-1].rank if tied else index + 1
            ranked.append(RankedResponse(rank, candidate.text, candidate.context, votes[candidate.key]))
        boards.append(PromptLeaderboard(item.prompt, item.text, sum(votes.values()), ranked))
    return boards


def leaderboard_prompts(*, study: Study) -> int:
    """How many prompts the leaderboard has, for its page links."""
    return Item.objects.filter(study=study, is_attention_check=False).count()


def study_is_full(*, study: Study) -> bool:
    """Every regular item has all the answers its quota asks for: nothing is left for anyone, ever.

    No regular item has a free place, and no place is held by a lease (a leased
    item may still come free). Two index lookups, whatever the study's size.
    """
    with_room = Item.objects.filter(study=study, is_attention_check=False, places_taken__lt=study.quota_per_item)
    leased = Assignment.objects.filter(takes_place(), study=study, state=Assignment.State.LEASED).filter(
        item__is_attention_check=False
    )
    return not with_room.exists() and not leased.exists()
