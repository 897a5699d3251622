# SPDX-License-Identifier: GPL-3.0-or-later
"""What an export needs to know about a study before it streams the judgments.

Everything here grows with the number of items, candidates and raters, never
with the number of judgments: the judgments themselves are read once, in
chunks, by the writers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from annotation.models import COUNTED_KINDS, Candidate, Enrollment, Item, Judgment, Rater, Study, counted_raters
from annotation.privacy import shown_name
from annotation.task_types import Level, TaskType, get_task_type

CHUNK = 5000
# Rows fetched from the server-side cursor per round trip when a whole study is streamed.
STREAM_CHUNK = 5_000
# Distinct judgment values kept parsed at once (written answers rarely repeat).
PARSED_MEMO = 20_000
HUMAN_KINDS = (Rater.Kind.EXPERT, Rater.Kind.CROWD)


@dataclass
class RaterInfo:
    pk: int
    kind: str
    name: str
    external_id: str
    excluded: bool = False
    excluded_reason: str = ""
    in_subset: bool = False
    #: How exports name the rater: a person's pseudonym in this study, a judge's name (annotation.privacy).
    shown: str = ""

    @property
    def is_human(self) -> bool:
        return self.kind in HUMAN_KINDS

    @property
    def pseudonym(self) -> str:
        """A person's pseudonym in this study; "" for a judge."""
        return self.shown if self.is_human else ""

    @property
    def judge_name(self) -> str:
        """A judge's name; "" for a person (whose name, like their platform id, stays out of exports)."""
        return "" if self.is_human else self.name

    @property
    def label(self) -> str:
        """A column header: the pseudonym of a person, the name of a judge (unique: a judge's id is added)."""
        return self.shown if self.is_human else f"{self.shown} (#{self.pk})"


@dataclass
class StudyData:
    study: Study
    task_type: TaskType
    config: dict[str, Any]
    item_ids: list[int]
    candidate_keys: dict[int, list[str]]
    candidate_provenance: dict[tuple[int, str], dict[str, Any]]
    raters: dict[int, RaterInfo]
    subset: list[int] = field(default_factory=list)

    @property
    def level(self) -> str:
        return self.task_type.level

    @property
    def is_scale(self) -> bool:
        return self.level in (Level.ORDINAL, Level.INTERVAL)

    @property
    def humans(self) -> list[RaterInfo]:
        return [r for r in self.raters.values() if r.is_human]

    @property
    def judges(self) -> list[RaterInfo]:
        return [r for r in self.raters.values() if not r.is_human]

    @property
    def included(self) -> list[RaterInfo]:
        return [r for r in self.humans if not r.excluded]

    @property
    def consensus_raters(self) -> list[RaterInfo]:
        """Whose judgments make the consensus: the subset if one was chosen, else every included human."""
        if self.subset:
            return [r for r in self.included if r.in_subset]
        return self.included

    def number(self, item_id: int, value: Any) -> float | None:
        if value is None:
            return None
        try:
            return self.task_type.to_number(
                value, candidate_keys=self.candidate_keys.get(item_id, []), config=self.config
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None

    def label(self, value: Any) -> Any:
        return self.task_type.value_label(value)

    def chosen_keys(self, value: Any) -> list[str]:
        """Candidate keys a value picks (none for a tie or a task type without candidates)."""
        return self.task_type.chosen_keys(value)

    def scale_points(self) -> list[float]:
        points = self.config.get("points")
        return [float(p) for p in points] if isinstance(points, list) else []


def load_study(study: Study, *, rater_subset: Iterable[int] = ()) -> StudyData:
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    item_ids = list(
        Item.objects.filter(study=study, is_attention_check=False)
        .order_by("position", "id")
        .values_list("pk", flat=True)
    )
    keys: dict[int, list[str]] = {}
    provenance: dict[tuple[int, str], dict[str, Any]] = {}
    candidates = (
        Candidate.objects.filter(item__study=study)
        .order_by("item_id", "position", "id")
        .values_list("item_id", "key", "provenance")
    )
    for item_id, key, prov in candidates.iterator(chunk_size=CHUNK):
        keys.setdefault(item_id, []).append(key)
        if prov:
            provenance[(item_id, key)] = prov
    subset = sorted({int(pk) for pk in rater_subset})
    return StudyData(
        study=study,
        task_type=task_type,
        config=config,
        item_ids=item_ids,
        candidate_keys=keys,
        candidate_provenance=provenance,
        raters=_raters(study, set(subset)),
        subset=subset,
    )


def _raters(study: Study, subset: set[int]) -> dict[int, RaterInfo]:
    """Everyone enrolled in the study or with a judgment in it, ordered humans first, then by id."""
    found: dict[int, RaterInfo] = {}
    judged = (
        Rater.objects.filter(Q(enrollments__study=study) | Q(judgments__study=study))
        .filter(kind__in=COUNTED_KINDS)
        .distinct()
    )
    for pk, kind, name, external_id in judged.values_list("pk", "kind", "name", "external_id"):
        found[pk] = RaterInfo(
            pk=pk,
            kind=kind,
            name=name,
            external_id=external_id,
            in_subset=pk in subset,
            shown=shown_name(study=study, rater_id=pk, kind=kind, name=name),
        )
    for rater_id, excluded, reason in Enrollment.objects.filter(counted_raters(), study=study).values_list(
        "rater_id", "excluded", "excluded_reason"
    ):
        found[rater_id].excluded = excluded
        found[rater_id].excluded_reason = reason
    ordered = sorted(found.values(), key=lambda r: (not r.is_human, r.pk))
    return {r.pk: r for r in ordered}


@contextmanager
def whole_result_plans() -> Iterator[None]:
    """Let PostgreSQL plan a server-side cursor for reading every row, not the first few.

    A cursor is planned for its first tenth by default (``cursor_tuple_fraction``),
    which picks nested loops over an index: fine for a page of rows, several
    times slower than hash joins and one sort for a whole study's judgments.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET cursor_tuple_fraction = 1.0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET cursor_tuple_fraction")


def stream(rows: QuerySet) -> Iterator[Any]:
    """Every row of a query, from a server-side cursor planned for reading them all."""
    with whole_result_plans():
        yield from rows.iterator(chunk_size=STREAM_CHUNK)


def human_judgments(data: StudyData) -> Iterator[tuple[int, int, Any]]:
    """(item id, rater id, value) of every usable human judgment on a regular item, item by item.

    Values are read as JSON text and parsed once per distinct text (a study
    has few distinct values), so equal values are one shared object: read them, never change them.
    """
    rows = (
        Judgment.objects.filter(
            study=data.study,
            status=Judgment.Status.OK,
            item__is_attention_check=False,
            rater__kind__in=HUMAN_KINDS,
        )
        .order_by("item__position", "item_id", "rater_id", "id")
        .values_list("item_id", "rater_id", Cast("value", TextField()))
    )
    parsed: dict[str | None, Any] = {}
    for item_id, rater_id, text in stream(rows):
        value = parsed.get(text, parsed)
        if value is parsed:
            if len(parsed) >= PARSED_MEMO:
                parsed.clear()
            value = parsed[text] = json.loads(text) if text is not None else None
        yield item_id, rater_id, value
