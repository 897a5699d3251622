# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a study's judgments out of the database as arrays for ``ratings.stats``.

Only judgments with status OK on real items (not attention checks) count.
Rows are fetched with ``values_list`` and turned into numbers by the study's
task type (``to_number``), so a study with a million judgments costs one
query and one pass over tuples, never a model instance per row.

Rater groups say whose judgments go in; every rater, person or LLM judge, is
one column of the matrix:

* ``humans``   experts and crowdworkers;
* ``passers``  humans whose enrollment was not excluded (the attention-check
  policy excludes a rater after too many failed checks);
* ``experts`` / ``crowd``  one kind of human only;
* ``judges``   LLM and baseline judges;
* ``everyone`` humans and judges together.

``rater_ids`` narrows any group to a chosen subset of raters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from annotation.models import Candidate, Enrollment, Item, Judgment, Rater, Study, counted_raters
from annotation.privacy import shown_name
from annotation.task_types import MATRIX_LEVELS, PICK_BEST, PICK_WORST, Level, TaskType, get_task_type

from .pairwise import item_candidates
from .stats import category_counts

GROUPS: dict[str, str] = {
    "humans": "All human raters",
    "passers": "Humans who passed the attention checks",
    "experts": "Experts only",
    "crowd": "Crowdworkers only",
    "judges": "LLM and baseline judges",
    "everyone": "Humans and judges",
}
HUMAN_KINDS = (Rater.Kind.EXPERT, Rater.Kind.CROWD)
JUDGE_KINDS = (Rater.Kind.LLM, Rater.Kind.BASELINE)


class NoNumericCoding(ValueError):
    """The study's task type has no numeric coding (free text, vote allocation)."""


@dataclass(frozen=True)
class RaterInfo:
    id: int
    label: str
    kind: str


@dataclass(frozen=True)
class Scale:
    """The numbers a study's values code to, with a readable name for each."""

    codes: np.ndarray
    names: list[str]
    nominal: bool


@dataclass
class StudyMatrix:
    """Items × raters matrix of a study's coded judgments (NaN = not judged)."""

    values: np.ndarray
    item_ids: list[int]
    item_labels: list[str]
    raters: list[RaterInfo]
    scale: Scale
    n_judgments: int
    warnings: list[str] = field(default_factory=list)
    #: Items with one rating that are not rows (``paired`` reading); each would be a row with one rating.
    left_out: int = 0
    #: With ``left_out``: raters × scale points, how often each rater used each point over every item.
    rater_counts: np.ndarray | None = None
    #: With ``left_out``: the first judged items as a whole matrix (``first_rows`` of them), for per-item tables.
    first: StudyMatrix | None = None
    #: Judged items in all, rows or not.
    n_items: int = 0
    #: With ``left_out``: every judged item's id, and the (item position, rater column, value) of each rating.
    judged_ids: list[int] | None = None
    cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: With ``left_out``: the positions of the rows among the judged items.
    row_positions: np.ndarray | None = None

    @property
    def rater_ids(self) -> list[int]:
        return [r.id for r in self.raters]

    @property
    def whole(self) -> bool:
        """Every judged item is a row."""
        return self.left_out == 0

    def columns(self, cols: np.ndarray) -> np.ndarray:
        """Every judged item × the raters ``cols`` (positions in ``raters``), read paired or not."""
        if self.cells is None:
            return self.values[:, cols]
        r, c, values = self.cells
        where = np.full(len(self.raters), -1, dtype=np.int64)
        where[cols] = np.arange(len(cols))
        chosen = where[c] >= 0
        return _filled(self.n_items, len(cols), r[chosen], where[c[chosen]], values[chosen])

    def packed(self) -> np.ndarray:
        """Every judged item's ratings side by side from the left (NaN after them), raters not kept apart.

        What a figure computed item by item from its ratings, whoever gave them, needs
        (a consensus, a mean, a majority): as many columns as the most ratings an item has.
        """
        if self.cells is None:
            return self.values
        r, _, values = self.cells
        order = np.argsort(r, kind="stable")
        r, values = r[order], values[order]
        start = np.searchsorted(r, r)  # each rating's item's first rating, r being sorted
        place = np.arange(r.size) - start
        width = int(place.max()) + 1 if place.size else 0
        return _filled(self.n_items, width, r, place, values)


@dataclass
class PairwiseOutcomes:
    """One match per judgment: contestant a (the item's first candidate) against b."""

    a: list[str]
    b: list[str]
    score: np.ndarray  # 1 a won, 0.5 tie, 0 b won
    warnings: list[str] = field(default_factory=list)


# -- groups -----------------------------------------------------------------------------


def check_group(group: str) -> str:
    if group not in GROUPS:
        raise ValueError(f"unknown rater group {group!r}; choose one of {', '.join(GROUPS)}")
    return group


def group_filter(*, study: Study, group: str, rater_ids: Iterable[int] | None = None) -> Q:
    """A filter on Judgment rows selecting the group's raters in this study."""
    check_group(group)
    if group in ("humans", "passers"):
        q = Q(rater__kind__in=HUMAN_KINDS)
    elif group == "experts":
        q = Q(rater__kind=Rater.Kind.EXPERT)
    elif group == "crowd":
        q = Q(rater__kind=Rater.Kind.CROWD)
    elif group == "judges":
        q = Q(rater__kind__in=JUDGE_KINDS)
    else:
        q = counted_raters()
    if group == "passers":
        excluded = Enrollment.objects.filter(study=study, excluded=True).values("rater_id")
        q &= ~Q(rater_id__in=excluded)
    if rater_ids is not None:
        q &= Q(rater_id__in=list(rater_ids))
    return q


def analysable_judgments(*, study: Study, group: str, rater_ids: Iterable[int] | None = None) -> QuerySet[Judgment]:
    """OK judgments of the group on the study's real items (attention checks left out)."""
    return Judgment.objects.filter(
        group_filter(study=study, group=group, rater_ids=rater_ids),
        study=study,
        status=Judgment.Status.OK,
        item__is_attention_check=False,
    ).order_by()


def study_raters(*, study: Study) -> list[RaterInfo]:
    """Every rater with an OK judgment in the study, humans first."""
    ids = (
        Judgment.objects.filter(counted_raters(), study=study, status=Judgment.Status.OK).values("rater_id").distinct()
    )
    return _rater_infos(study, Rater.objects.filter(pk__in=ids).values_list("id", "kind", "name"))


def _rater_infos(study: Study, rows: Iterable[tuple[int, str, str]]) -> list[RaterInfo]:
    """Each rater as the owner's reports name them: by name when they have one (judges, invited experts),
    else a crowdworker by pseudonym, never by platform id (annotation.privacy)."""
    order = {kind: i for i, kind in enumerate(Rater.Kind.values)}
    infos = [
        RaterInfo(id=pk, kind=kind, label=name or shown_name(study=study, rater_id=pk, kind=kind, name=name))
        for pk, kind, name in rows
    ]
    return sorted(infos, key=lambda r: (order.get(r.kind, 99), r.id))


# -- coding values ----------------------------------------------------------------------


def study_scale(study: Study, task_type: TaskType | None = None) -> Scale:
    """The codes a study's values take and their names, in the order the stats use."""
    task_type = task_type or get_task_type(study.task_type)
    points = task_type.scale(
        task_type.config(study.config),
        max_candidates=lambda: max([0, *(len(keys) for keys in _candidate_keys(study).values())]),
    )
    if task_type.level not in MATRIX_LEVELS or not points:
        raise NoNumericCoding(f"{task_type.title} judgments have no numeric coding for agreement statistics")
    return Scale(
        codes=np.array([code for code, _ in points], dtype=float),
        names=[name for _, name in points],
        nominal=task_type.level != Level.ORDINAL,
    )


def _candidate_keys(study: Study) -> dict[int, list[str]]:
    keys: dict[int, list[str]] = {}
    rows = (
        Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id").values_list("item_id", "key")
    )
    for item_id, key in rows:
        keys.setdefault(item_id, []).append(key)
    return keys


def _coded_rows(
    study: Study, task_type: TaskType, judgments: QuerySet[Judgment], *fields: str
) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer columns ``fields`` + ``item_id`` of the judgments, and their coded values.

    A value that cannot be coded is NaN. Values are read as JSON text and
    decoded once per distinct text (and item, when the coding depends on the
    item's candidates), so each row costs a dictionary lookup; rows stream in
    chunks into numpy arrays rather than being held as Python tuples.
    """
    config = task_type.config(study.config)
    uses_candidates = task_type.candidates != (0, 0)
    keys = _candidate_keys(study) if uses_candidates else {}
    memo: dict[tuple[int, str], float] = {}

    def code(item_id: int, text: str | None) -> float:
        try:
            number = task_type.to_number(json.loads(text), candidate_keys=keys.get(item_id, []), config=config)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError):
            number = None
        return math.nan if number is None else float(number)

    if not uses_candidates and connection.vendor == "postgresql":
        return _coded_rows_packed(judgments, fields, code)

    rows = judgments.annotate(value_text=Cast("value", TextField())).values_list(*fields, "item_id", "value_text")
    width = len(fields) + 1
    columns: list[list[int]] = [[] for _ in range(width)]
    values: list[float] = []
    for row in rows.iterator(chunk_size=50_000):
        item_id, text = row[-2], row[-1]
        memo_key = (item_id if uses_candidates else 0, text)
        number = memo.get(memo_key)
        if number is None:
            number = memo[memo_key] = code(item_id, text)
        values.append(number)
        for column, cell in zip(columns, row, strict=False):
            column.append(cell)
    return [np.asarray(c, dtype=np.int64) for c in columns], np.asarray(values, dtype=float)


def _coded_rows_packed(
    judgments: QuerySet[Judgment], fields: tuple[str, ...], code
) -> tuple[list[np.ndarray], np.ndarray]:
    """``_coded_rows`` for a coding that depends on the value alone, in two lean PostgreSQL queries.

    The distinct value texts are coded first (a study has few); then every row
    is reduced to integers (the fields, the item id and the position of its
    value among the distinct texts) and each column comes back as one packed
    array of big-endian int8 (``string_agg`` of ``int8send``), which numpy
    reads as it is: no Python object per row, one message instead of one per row.
    """
    texted = judgments.annotate(value_text=Cast("value", TextField())).order_by()
    distinct = list(texted.values_list("value_text", flat=True).distinct())
    numbers = np.array([math.nan, *(code(0, text) for text in distinct)], dtype=float)
    sql, params = texted.values_list(*fields, "item_id", "value_text").query.sql_with_params()
    names = [f"c{i}" for i in range(len(fields) + 2)]
    # array_position is 1-based; 0 (no value) points at the leading NaN.
    ints = [*(f"{name}::int8" for name in names[:-1]), f"COALESCE(array_position(%s::text[], {names[-1]}), 0)::int8"]
    packed = ", ".join(f"string_agg(int8send({expression}), ''::bytea)" for expression in ints)
    query = f"SELECT {packed} FROM ({sql}) AS rows({', '.join(names)})"  # noqa: S608 - fixed names
    with connection.cursor() as cursor:
        cursor.execute(query, [distinct, *params])  # the array comes first, in the SELECT list
        row = cursor.fetchone()
    columns = [np.frombuffer(bytes(cell or b""), dtype=">i8").astype(np.int64) for cell in row]
    return columns[:-1], numbers[columns[-1]]


# -- the matrix ---------------------------------------------------------------------------


def study_rating_matrix(
    *,
    study: Study,
    group: str = "humans",
    rater_ids: Iterable[int] | None = None,
    max_cells: int | None = None,
    first_rows: int = 0,
) -> StudyMatrix:
    """The group's coded judgments as an items × raters matrix.

    When a rater judged an item more than once (an LLM judge's repeated
    trials), the earliest judgment is used and the others are counted in a
    warning.

    With ``max_cells``, a matrix of more cells than that is read *paired*
    (:func:`_paired_rows`): its rows are the items with two ratings or more,
    the only ones that carry agreement, and one item with a single rating per
    rater who has such items; ``left_out`` counts the other single-rated items,
    ``rater_counts`` and ``first`` (the first ``first_rows`` judged items, whole)
    keep what the page shows of every item.
    """
    task_type = get_task_type(study.task_type)
    if task_type.level not in MATRIX_LEVELS:
        raise NoNumericCoding(f"{task_type.title} judgments have no numeric coding for agreement statistics")
    scale = study_scale(study, task_type)
    judgments = analysable_judgments(study=study, group=group, rater_ids=rater_ids)
    (ids, raters, items), values = _coded_rows(study, task_type, judgments, "id", "rater_id")
    keep = ~np.isnan(values)
    warnings: list[str] = []
    if (~keep).any():
        warnings.append(f"{int((~keep).sum())} judgment(s) could not be coded as numbers and were left out")
    ids, raters, items, values = ids[keep], raters[keep], items[keep], values[keep]

    # Every regular item of the study, then those judged: a list of ids in the query would cost more than it saves.
    item_rows = list(
        Item.objects.filter(study=study, is_attention_check=False)
        .order_by("position", "id")
        .values_list("id", "external_id")
    )
    judged = np.isin(np.fromiter((pk for pk, _ in item_rows), dtype=np.int64, count=len(item_rows)), items)
    item_rows = [row for row, keep in zip(item_rows, judged, strict=True) if keep]
    infos = _rater_infos(
        study, Rater.objects.filter(pk__in=np.unique(raters).tolist()).values_list("id", "kind", "name")
    )
    n_cols = len(infos)
    r = c = np.empty(0, dtype=np.int64)
    if items.size:
        # Map database ids to row and column positions with a sorted lookup, not a Python loop.
        item_pk = np.array([pk for pk, _ in item_rows], dtype=np.int64)
        rater_pk = np.array([info.id for info in infos], dtype=np.int64)
        item_order, rater_order = np.argsort(item_pk), np.argsort(rater_pk)
        r = item_order[np.searchsorted(item_pk[item_order], items)]
        c = rater_order[np.searchsorted(rater_pk[rater_order], raters)]
        cells = r * n_cols + c
        # Per cell, latest judgment first and earliest last: the last of each cell is the one used.
        order = np.lexsort((-ids, cells))
        cells = cells[order]
        used = order[np.append(cells[1:] != cells[:-1], True)]
        repeats = cells.size - used.size
        if repeats:
            warnings.append(
                f"{repeats} repeated judgment(s) of the same item by the same rater: the earliest one is used"
            )
        r, c, values = r[used], c[used], values[used]
    found = StudyMatrix(
        values=np.empty((0, n_cols)),
        item_ids=[pk for pk, _ in item_rows],
        item_labels=[external_id for _, external_id in item_rows],
        raters=infos,
        scale=scale,
        n_judgments=int(items.size),
        warnings=warnings,
        n_items=len(item_rows),
    )
    if max_cells is not None and len(item_rows) * n_cols > max_cells:
        return _paired_rows(found, r, c, values, first_rows)
    found.values = _filled(len(item_rows), n_cols, r, c, values)
    return found


def _filled(n_rows: int, n_cols: int, r: np.ndarray, c: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An n_rows × n_cols matrix holding ``values`` at (r, c), NaN elsewhere."""
    matrix = np.full((n_rows, n_cols), np.nan)
    matrix.reshape(-1)[r * n_cols + c] = values
    return matrix


def _paired_rows(found: StudyMatrix, r: np.ndarray, c: np.ndarray, values: np.ndarray, first_rows: int) -> StudyMatrix:
    """``found`` with the rows agreement needs: every item rated twice or more, one single-rated item per rater.

    Each of the study's agreement figures (``ratings.reports.rating_report``,
    given ``left_out``) is the same on these rows as on the whole matrix: items
    with one rating take part in no pair (alpha, kappas, correlations, the
    per-item spreads), and what they change elsewhere is kept by the
    representatives: which raters rated anything and which items ICC drops as
    incomplete, and that items carry different numbers of ratings (Fleiss).
    """
    n_rows, n_cols = len(found.item_ids), len(found.raters)
    per_item = np.bincount(r, minlength=n_rows)
    single = per_item[r] == 1
    _, first_of = np.unique(c[single], return_index=True)  # per rater, its first single-rated item
    kept = per_item >= 2
    kept[r[single][first_of]] = True
    rows = np.flatnonzero(kept)
    new_row = np.full(n_rows, -1, dtype=np.int64)
    new_row[rows] = np.arange(rows.size)
    cell = new_row[r] >= 0
    counts = np.zeros((n_cols, found.scale.codes.size), dtype=np.int64)
    if values.size:
        per_point = category_counts(values[:, None], found.scale.codes)  # one row per rating
        for point in range(counts.shape[1]):
            counts[:, point] = np.bincount(c, weights=per_point[:, point], minlength=n_cols)
    head = min(first_rows, n_rows)
    early = r < head
    first = StudyMatrix(
        values=_filled(head, n_cols, r[early], c[early], values[early]),
        item_ids=found.item_ids[:head],
        item_labels=found.item_labels[:head],
        raters=found.raters,
        scale=found.scale,
        n_judgments=int(early.sum()),
        n_items=head,
    )
    return StudyMatrix(
        values=_filled(rows.size, n_cols, new_row[r[cell]], c[cell], values[cell]),
        item_ids=[found.item_ids[i] for i in rows],
        item_labels=[found.item_labels[i] for i in rows],
        raters=found.raters,
        scale=found.scale,
        n_judgments=found.n_judgments,
        warnings=found.warnings,
        left_out=n_rows - rows.size,
        rater_counts=counts,
        first=first,
        n_items=n_rows,
        judged_ids=found.item_ids,
        cells=(r, c, values),
        row_positions=rows,
    )


# -- pairwise matches -----------------------------------------------------------------------


def contestants_by_item(study: Study) -> dict[int, list[str]]:
    """Each regular item's candidates as contestants (``ratings.pairwise.contestant_of``), in order."""
    pairs = item_candidates(study=study, regular_only=True)
    return {item_id: [name for _key, name in pair] for item_id, pair in pairs.items()}


def study_pairwise_outcomes(
    *, study: Study, group: str = "humans", rater_ids: Iterable[int] | None = None
) -> PairwiseOutcomes:
    """Every OK pairwise judgment of the group as a match between the two candidates' contestants."""
    task_type = get_task_type(study.task_type)
    if task_type.level != Level.PAIRWISE:
        raise NoNumericCoding(f"{task_type.title} studies have no pairwise outcomes")
    contestants = contestants_by_item(study)
    judgments = analysable_judgments(study=study, group=group, rater_ids=rater_ids)
    (items,), values = _coded_rows(study, task_type, judgments)
    a: list[str] = []
    b: list[str] = []
    score: list[float] = []
    skipped = 0
    for item_id, number in zip(items.tolist(), values.tolist(), strict=True):
        pair = contestants.get(item_id)
        if math.isnan(number) or pair is None or len(pair) != 2 or pair[0] == pair[1]:
            skipped += 1
            continue
        a.append(pair[0])
        b.append(pair[1])
        score.append(number)
    warnings = []
    if skipped:
        warnings.append(
            f"{skipped} judgment(s) left out: their item has no two distinct contestants or the value could not be coded"
        )
    return PairwiseOutcomes(a=a, b=b, score=np.asarray(score, dtype=float), warnings=warnings)


# -- best-worst picks -------------------------------------------------------------------------


@dataclass
class BestWorstPicks:
    """A best–worst study's picks: per judgment (contestants shown, best, worst), and per pick
    an items × raters matrix of the chosen candidate's listed position (NaN = not judged)."""

    judgments: list[tuple[list[str], str, str]]
    matrices: dict[str, np.ndarray]
    n_positions: int
    warnings: list[str] = field(default_factory=list)


def study_best_worst(*, study: Study, group: str = "humans", rater_ids: Iterable[int] | None = None) -> BestWorstPicks:
    """Every OK best–worst judgment of the group, read through the task type's ``picks``.

    Contestants are named as in the pairwise leaderboard (``ratings.pairwise.contestant_of``). When a rater judged an item more than
    once, the earliest judgment fills the agreement matrices; all count in the scores.
    """
    task_type = get_task_type(study.task_type)
    if task_type.level != Level.BEST_WORST:
        raise NoNumericCoding(f"{task_type.title} studies have no best–worst picks")
    keys = _candidate_keys(study)
    contestants = contestants_by_item(study)
    rows = (
        analysable_judgments(study=study, group=group, rater_ids=rater_ids)
        .order_by("id")
        .values_list("item_id", "rater_id", "value")
    )
    judgments: list[tuple[list[str], str, str]] = []
    cells: dict[str, dict[tuple[int, int], int]] = {PICK_BEST: {}, PICK_WORST: {}}
    skipped = 0
    for item_id, rater_id, value in rows.iterator(chunk_size=20_000):
        listed, names = keys.get(item_id, []), contestants.get(item_id, [])
        try:
            chosen = task_type.picks(value)
            positions = {pick: listed.index(chosen[pick]) for pick in (PICK_BEST, PICK_WORST)}
        except (KeyError, TypeError, ValueError):
            skipped += 1
            continue
        if len(names) != len(listed):
            skipped += 1
            continue
        judgments.append((names, names[positions[PICK_BEST]], names[positions[PICK_WORST]]))
        for pick, position in positions.items():
            cells[pick].setdefault((item_id, rater_id), position)
    item_ids = sorted({item for item, _ in cells[PICK_BEST]})
    raters = sorted({rater for _, rater in cells[PICK_BEST]})
    row_of = {pk: i for i, pk in enumerate(item_ids)}
    col_of = {pk: i for i, pk in enumerate(raters)}
    matrices = {}
    for pick, found in cells.items():
        matrix = np.full((len(item_ids), len(raters)), np.nan)
        for (item_id, rater_id), position in found.items():
            matrix[row_of[item_id], col_of[rater_id]] = position
        matrices[pick] = matrix
    warnings = (
        [f"{skipped} judgment(s) whose picks are not among their item's candidates were left out"] if skipped else []
    )
    most = max([2, *(len(listed) for listed in keys.values())])
    return BestWorstPicks(judgments=judgments, matrices=matrices, n_positions=most, warnings=warnings)
