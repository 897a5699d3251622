# SPDX-License-Identifier: GPL-3.0-or-later
"""Raters grouped by their answer to one questionnaire question: the by-group breakdowns' one source.

The analysis page (α per group, ``ratings.analysis``) and the alignment page
(each judge against each group, ``ratings.alignment.study``) both split raters
here: the groups of a choice or scale question of the study, each with its
raters, in the question's order, and whether a group is too small to read
much into (``FUNNYBONE_SMALL_GROUP_RATERS``, read when asked).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from annotation.models import Study
from annotation.rater_steps import Question, rater_answers, study_questions


@dataclass(frozen=True)
class RaterGroup:
    value: str  # the stored answer
    label: str  # what the question's option says
    rater_ids: tuple[int, ...]


def small_group_raters() -> int:
    """Groups with fewer raters than this are flagged as small."""
    return settings.FUNNYBONE_SMALL_GROUP_RATERS


def groupable_questions(study: Study) -> list[Question]:
    """The study's questions whose answers split raters into groups (choice and scale)."""
    return [q for q in study_questions(study) if q.groupable]


def rater_groups(*, study: Study, key: str, within: set[int] | None = None) -> list[RaterGroup]:
    """The counted raters of each answer to question ``key`` (only those in ``within``, when given).

    Groups come in the question's order of options (or points); an answer given
    by nobody has no group. ValueError if the study has no such question to group by.
    """
    question = next((q for q in groupable_questions(study) if q.key == key), None)
    if question is None:
        raise ValueError(f"this study has no choice or scale question {key!r} to group raters by")
    answers = rater_answers(study=study, key=key)
    order = [value for value, _label in question.options] or [str(p) for p in question.scale_points]
    members: dict[str, list[int]] = {}
    for rater_id, value in answers.items():
        if within is None or rater_id in within:
            members.setdefault(str(value), []).append(rater_id)
    ranked = sorted(members, key=lambda v: (order.index(v) if v in order else len(order), v))
    return [RaterGroup(v, question.label_of(v) or v, tuple(sorted(members[v]))) for v in ranked]
