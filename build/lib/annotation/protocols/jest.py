# SPDX-License-Identifier: GPL-3.0-or-later
"""Study templates of the jest protocol (PROTOCOLS.md): expert 0–3 ratings of setup + response texts.

Every expert rates every text (fully crossed) in one shared random order. The
data file has the columns ``id``, ``setup`` and ``response`` and then either

* long format: ``rater`` and ``rating`` columns, one row per rating (the same
  ``id`` repeats once per rater), or
* wide format: one column per rater, named after the rater, holding 0–3.

Rater names are kept as written (spaces collapsed), in both shapes, so "Rater 1"
in a long sheet and a "Rater 1" column in a wide sheet are the same rater.

A row without ratings just creates its item, so a file of texts alone sets up
a study for raters to answer on the site.
"""

from __future__ import annotations

from typing import Any

from ..models import Rater, Study
from ..services.imported_judgments import ImportedJudgment
from ..services.studies import ImportErrors, ItemSpec
from ..task_types import get_task_type
from ..task_types.ordinal import FUNNINESS_0_3
from .base import ImportPlan, StudyTemplate, register_template
from .tables import Row, Table

ITEM_COLUMNS = ("id", "setup", "response")
LONG_COLUMNS = ("rater", "rating")

CONSENT = (
    "You are invited to rate short two-part texts for how funny they are. You need no "
    "special knowledge beyond your experience of writing or judging comedy. Your ratings "
    "are stored under an anonymous rater id and used only to study how people and language "
    "models judge humour. Where the texts come from is not shown to you. You may stop at "
    "any point, and what you have not rated is simply left out."
)
INSTRUCTIONS = (
    "Each text has a plain setup sentence followed by a response. Rate how funny a typical "
    "adult audience would find the pair — not only whether it makes you laugh. "
    "0 = Not funny (nobody reacts), 1 = Somewhat funny (a smile at most), 2 = Funny (a "
    "chuckle), 3 = Very funny (a real laugh). Everyone sees the texts in the same order, "
    "and you will not see anyone else's ratings. Use the keys 0 to 3."
)


def _rating(raw: str, points: list[int]) -> int | None:
    """The cell as a point of the scale, or None when it is not one."""
    try:
        number = float(raw)
    except ValueError:
        return None
    if not number.is_integer() or int(number) not in points:
        return None
    return int(number)


def _scale(points: list[int]) -> str:
    return ", ".join(str(p) for p in points)


def _item(row: Row, problems: list[str]) -> ItemSpec | None:
    missing = [c for c in ITEM_COLUMNS if not row.text(c)]
    if missing:
        problems.append(f"{row.where}: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} empty.")
        return None
    return ItemSpec(external_id=row.text("id"), prompt=row.text("setup"), text=row.text("response"), row=row.where)


def _add_item(items: dict[str, ItemSpec], spec: ItemSpec, long: bool, problems: list[str]) -> None:
    seen = items.get(spec.external_id)
    if seen is None:
        items[spec.external_id] = spec
    elif not long:
        problems.append(f"{spec.row}: the id {spec.external_id!r} is used again ({seen.row}).")
    elif (seen.prompt, seen.text) != (spec.prompt, spec.text):
        problems.append(
            f"{spec.row}: the id {spec.external_id!r} has a different setup or response than in {seen.row}."
        )


def import_ratings(table: Table, study: Study) -> ImportPlan:
    """Items and expert ratings from a long or a wide sheet; every bad row is named."""
    table.require(*ITEM_COLUMNS)
    long = "rater" in table.columns or "rating" in table.columns
    if long:
        table.require(*LONG_COLUMNS)
    points: list[int] = get_task_type(study.task_type).config(study.config)["points"]
    rater_columns = [] if long else [c for c in table.columns if c not in ITEM_COLUMNS]
    items: dict[str, ItemSpec] = {}
    judgments: list[ImportedJudgment] = []
    problems: list[str] = []
    for row in table.rows:
        spec = _item(row, problems)
        if spec is not None:
            _add_item(items, spec, long, problems)
        item_id = row.text("id")
        if long:
            _long_rating(row, item_id, points, judgments, problems)
            continue
        for column in rater_columns:
            if raw := row.text(column):
                _add_rating(table.header(column), raw, item_id, row.where, points, judgments, problems)
    if problems:
        raise ImportErrors(problems)
    return ImportPlan(items=list(items.values()), judgments=judgments)


def _long_rating(row: Row, item_id: str, points: list[int], out: list[ImportedJudgment], problems: list[str]) -> None:
    # Spaces collapsed as in a wide sheet's header, so both shapes give the same rater.
    rater, raw = " ".join(row.text("rater").split()), row.text("rating")
    if not rater and not raw:
        return  # a text without ratings: the item alone
    if not rater:
        problems.append(f"{row.where}: the rating {raw!r} has no rater.")
        return
    if not raw:
        problems.append(f"{row.where}: {rater} has no rating.")
        return
    _add_rating(rater, raw, item_id, row.where, points, out, problems)


def _add_rating(
    rater: str, raw: str, item_id: str, where: str, points: list[int], out: list[ImportedJudgment], problems: list[str]
) -> None:
    rating = _rating(raw, points)
    if rating is None:
        problems.append(f"{where}: {rater}'s rating {raw!r} is not one of {_scale(points)}.")
    elif item_id:  # a row without an id is already reported as such
        out.append(
            ImportedJudgment(rater=rater, item=item_id, value={"rating": rating}, kind=Rater.Kind.EXPERT, row=where)
        )


ANALYSES: dict[str, Any] = {"subset_size": 3, "subset_distance": "tv"}

JEST = register_template(
    StudyTemplate(
        key="jest",
        protocol="jest",
        title="JEST: expert 0–3 funniness ratings",
        description=(
            "Setup + response texts rated 0–3 by every expert (fully crossed, one shared random "
            "order). The report compares all raters with the most balanced subset, builds the "
            "median consensus and scores LLM judges against it."
        ),
        task_type="ordinal",
        config={"points": list(FUNNINESS_0_3["points"]), "labels": list(FUNNINESS_0_3["labels"])},
        settings={
            "quota_per_item": 7,
            "item_order": Study.ItemOrder.SHARED_RANDOM,
            # An expert panel: no attention checks, as in the published design.
            "attention_check_rate": 0.0,
            "attention_check_policy": Study.AttentionPolicy.FLAG,
            "attention_check_max_failures": 0,
            "consent_text": CONSENT,
            "instructions_text": INSTRUCTIONS,
        },
        analyses=ANALYSES,
        importer=import_ratings,
        columns=(
            "id, setup, response, then either rater and rating (one row per rating) "
            "or one column per rater holding 0–3; a row without ratings only adds the text"
        ),
    )
)
