# SPDX-License-Identifier: GPL-3.0-or-later
"""The judgments of a study as long-format rows: one row per judgment, the columns of every flat export.

Every judgment of the study is a row, human or model, usable or not, on
regular items and attention checks, with what is needed to analyse it
elsewhere: the item, the rater, the value, its numeric coding, the order
candidates were shown in, timing and flags, and the provenance of the
candidate(s) the value chose. The schema is documented in docs/exports.md.

The rows are read once from a server-side cursor in chunks, with the JSON
columns as their stored text. Most of what a row holds repeats (a study has
few distinct values, raters and provenances), so each distinct piece is
turned into its cell once and reused: a million judgments cost a few seconds
of Python, not minutes. How a cell is written (CSV text made inert for
spreadsheets, raw text, native JSON, typed Parquet values) is a ``Cells``
given by the writer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from annotation.media import media_records
from annotation.models import Judgment, counted_raters, trial_as_set

from .safe_cells import scrub_provenance
from .study_data import StudyData, stream

COLUMNS = [
    "study",
    "judgment_id",
    "item",
    "item_is_attention_check",
    "rater_id",
    "rater_kind",
    "rater_external_id",
    "rater_name",
    "rater_excluded",
    "trial",
    "status",
    "value",
    "value_label",
    "numeric",
    "chosen_candidates",
    "chosen_candidate_provenance",
    "shown_order",
    "duration_ms",
    "too_fast",
    "attention_passed",
    "created_at",
    "provenance",
    "media",
]
#: Columns holding a JSON value (objects, lists); flat files write them as JSON text.
JSON_COLUMNS = ("value", "chosen_candidates", "chosen_candidate_provenance", "shown_order", "provenance", "media")
# Distinct provenances remembered at once; LLM provenances rarely repeat, so the memo is emptied when full.
PROVENANCE_MEMO = 20_000


@dataclass(frozen=True)
class Cells:
    """How one kind of export writes each kind of cell."""

    scalar: Callable[[Any], Any]  # text and other single values (ids, names, labels); never None
    json: Callable[[Any], Any]  # a JSON value of a JSON column, parsed
    flag: Callable[[bool | None], Any]
    when: Callable[[datetime], Any]
    none: Any = None  # what an absent value becomes
    keys: Callable[[list[str]], Any] | None = None  # the chosen candidate keys; ``json`` when not given


def _query(data: StudyData):
    return (
        Judgment.objects.filter(counted_raters(), study=data.study)
        .order_by("item__position", "item_id", "rater_id", "assignment__trial", "id")
        .values_list(
            "pk",
            "item_id",
            "item__external_id",
            "item__is_attention_check",
            "rater_id",
            "assignment__trial",
            "status",
            Cast("value", TextField()),
            Cast("shown_order", TextField()),
            "duration_ms",
            "too_fast",
            "attention_passed",
            "created_at",
            Cast("provenance", TextField()),
        )
    )


def judgment_rows(data: StudyData, cells: Cells) -> Iterator[tuple]:
    """Each judgment of the study as a tuple in ``COLUMNS`` order, item by item."""
    scalar, as_json, flag, when, none = cells.scalar, cells.json, cells.flag, cells.when, cells.none
    as_keys = cells.keys or as_json
    ok = Judgment.Status.OK
    slug = scalar(data.study.slug)
    flags = {True: flag(True), False: flag(False), None: flag(None)}
    raters = {
        pk: (
            pk,
            scalar(r.kind),
            scalar(r.external_id),
            scalar(r.name),
            flags[r.excluded],
        )
        for pk, r in data.raters.items()
    }
    statuses: dict[str, Any] = {}
    items_with_provenance = {item_id for item_id, _ in data.candidate_provenance}
    values: dict[str | None, tuple] = {}  # value text → (value cell, label cell, chosen keys, parsed, chosen cell)
    numbers: dict[tuple[str | None, tuple[str, ...]], Any] = {}
    no_provenance: dict[tuple[str, ...], Any] = {}
    orders: dict[str, Any] = {}
    provenances: dict[str, Any] = {}

    # The items' media (docs/media.md), read once per study: few items carry any, and each is written once.
    media = media_records(study_id=data.study.pk)
    item_id_now = None
    item_cell = check_cell = media_cell = None
    keys: tuple[str, ...] = ()
    for (
        pk,
        item_id,
        external_id,
        is_check,
        rater_id,
        trial,
        status,
        value_text,
        order_text,
        duration_ms,
        too_fast,
        attention_passed,
        created_at,
        provenance_text,
    ) in stream(_query(data)):
        if item_id != item_id_now:
            item_id_now = item_id
            item_cell = scalar(external_id)
            check_cell = flags[is_check]
            media_cell = as_json(media[item_id]) if item_id in media else none
            keys = tuple(data.candidate_keys.get(item_id, ()))

        value = values.get(value_text)
        if value is None:
            parsed = json.loads(value_text) if value_text is not None else None
            chosen = tuple(data.chosen_keys(parsed)) if parsed is not None else ()
            label = data.label(parsed) if parsed is not None else None
            value = values[value_text] = (
                as_json(parsed) if parsed is not None else none,
                scalar(label) if label is not None else none,
                chosen,
                parsed,
                as_keys(list(chosen)),
            )
        value_cell, label_cell, chosen, parsed, chosen_cell = value

        if status == ok:
            number_key = (value_text, keys)
            number = numbers.get(number_key, numbers)
            if number is numbers:
                number = numbers[number_key] = data.number(item_id, parsed)
        else:
            number = None

        if item_id in items_with_provenance:
            chosen_provenance = as_json({k: data.candidate_provenance.get((item_id, k), {}) for k in chosen})
        else:
            chosen_provenance = no_provenance.get(chosen)
            if chosen_provenance is None:
                chosen_provenance = no_provenance[chosen] = as_json({k: {} for k in chosen})

        order_cell = orders.get(order_text)
        if order_cell is None:
            order_cell = orders[order_text] = as_json(json.loads(order_text)) if order_text is not None else none

        provenance_cell = provenances.get(provenance_text)
        if provenance_cell is None:
            if len(provenances) >= PROVENANCE_MEMO:
                provenances.clear()
            provenance_cell = provenances[provenance_text] = (
                as_json(scrub_provenance(json.loads(provenance_text))) if provenance_text is not None else none
            )

        status_cell = statuses.get(status)
        if status_cell is None:
            status_cell = statuses[status] = scalar(status)

        rater_pk, kind_cell, rater_external_cell, name_cell, excluded_cell = raters[rater_id]
        yield (
            slug,
            pk,
            item_cell,
            check_cell,
            rater_pk,
            kind_cell,
            rater_external_cell,
            name_cell,
            excluded_cell,
            trial_as_set(trial),
            status_cell,
            value_cell,
            label_cell,
            none if number is None else number,
            chosen_cell,
            chosen_provenance,
            order_cell,
            none if duration_ms is None else duration_ms,
            flags[too_fast],
            flags[attention_passed],
            when(created_at),
            provenance_cell,
            media_cell,
        )
