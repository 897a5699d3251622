# SPDX-License-Identifier: GPL-3.0-or-later
"""Counting the edits of a study's data that a report's other inputs do not show.

A stored report (``ratings.cached``) is current while the *fingerprint* of
its study is what it was computed from. Added or deleted judgments and items
change its counts and newest ids; an edit in place does not: a judgment's
value or status, an item's gold, metadata or candidates, a rater excluded
while another is let back in, a judge renamed, the task configuration.
Each such write increments ``Study.inputs_revision`` of the studies it
touches, in the writer's transaction, and the fingerprint reads it: one row
by primary key, whatever the number of judgments.

The writers, and how each one counts:

- saving one row through the ORM (the admin's change forms, ``judgment_retry``,
  generated candidates, ``apply_attention_policy``, a shell): the ``post_save``
  receivers below, connected by ``AnnotationConfig.ready``. New judgments and
  items are left to the counts (the answer path and bulk inserts send no
  signal and need none); an enrollment counts only when ``excluded`` is written;
  a study only when a field reports read is.
- writes without ``save`` (``QuerySet.update``, raw SQL) and the admin's
  inline candidates, which it deletes row by row: the writer calls
  :func:`study_inputs_changed` itself (``judging.services.judges`` renaming a
  judge's rater, ``annotation.admin.ItemAdmin``).

Deletions are not counted here: a receiver on them would make every cascade
(a study deleted, items replaced) load its rows into Python, and the counts
already change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import F
from django.db.models.signals import post_save

from .models import Candidate, Enrollment, Item, Judgment, Rater, Study

#: Study fields the reports read; saving any other field (state, quota, texts) leaves the figures current.
STUDY_INPUT_FIELDS = frozenset({"task_type", "config", "protocol", "seed"})


def study_inputs_changed(study_ids: Iterable[int]) -> None:
    """Mark the studies' stored reports out of date: their data changed in a way no count shows."""
    ids = sorted({pk for pk in study_ids if pk is not None})
    if ids:
        Study.objects.filter(pk__in=ids).update(inputs_revision=F("inputs_revision") + 1)


def rater_studies(rater_id: int) -> set[int]:
    """The studies a rater has judgments or an enrollment in (its name and kind are read by their reports)."""
    judged = Judgment.objects.filter(rater_id=rater_id).order_by().values_list("study_id", flat=True).distinct()
    enrolled = Enrollment.objects.filter(rater_id=rater_id).values_list("study_id", flat=True)
    return set(judged) | set(enrolled)


def _judgment_saved(sender, instance: Judgment, created: bool, **kwargs: Any) -> None:
    if not created:
        study_inputs_changed([instance.study_id])


def _item_saved(sender, instance: Item, created: bool, **kwargs: Any) -> None:
    if not created:
        study_inputs_changed([instance.study_id])


def _candidate_saved(sender, instance: Candidate, **kwargs: Any) -> None:
    # A candidate added to an item that exists (generation, the admin) is not seen by the item counts either.
    study_inputs_changed(Item.objects.filter(pk=instance.item_id).values_list("study_id", flat=True))


def _enrollment_saved(sender, instance: Enrollment, created: bool, update_fields=None, **kwargs: Any) -> None:
    if created and not instance.excluded:
        return
    if created or update_fields is None or "excluded" in update_fields:
        study_inputs_changed([instance.study_id])


def _rater_saved(sender, instance: Rater, created: bool, **kwargs: Any) -> None:
    if not created:
        study_inputs_changed(rater_studies(instance.pk))


def _study_saved(sender, instance: Study, created: bool, update_fields=None, **kwargs: Any) -> None:
    # Study.save names every field it writes (so as not to write the revision back).
    if not created and (update_fields is None or STUDY_INPUT_FIELDS & set(update_fields)):
        study_inputs_changed([instance.pk])


def connect() -> None:
    """Count the edits saved through the ORM (called once, from ``AnnotationConfig.ready``)."""
    for model, receiver in (
        (Judgment, _judgment_saved),
        (Item, _item_saved),
        (Candidate, _candidate_saved),
        (Enrollment, _enrollment_saved),
        (Rater, _rater_saved),
        (Study, _study_saved),
    ):
        post_save.connect(receiver, sender=model, dispatch_uid=f"funnybone-inputs-{model.__name__}")
