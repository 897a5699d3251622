# SPDX-License-Identifier: GPL-3.0-or-later
"""Participants' privacy: the pseudonym every export shows, and when raw platform ids are erased.

Pseudonyms
    A participant (a crowdworker or an invited expert) appears in exports,
    workbook columns and reports as ``P-`` and eight hex digits: an HMAC-SHA256
    of the study's and the rater's database ids under the study's own key
    (``Study.pseudonym_key``, random, never shown). So one person has one
    pseudonym within a study and unrelated ones across studies, nobody without
    the key can compute it from a Prolific or MTurk id, and it stays the same
    after the raw id is erased (the rater row keeps its id). Judges are not
    people: they are shown by their name.

Raw ids
    The platform's id (``Rater.external_id``) and the ids an entry link brought
    (``Enrollment.entry_params``: Prolific's STUDY_ID and SESSION_ID, MTurk's
    workerId, assignmentId, hitId) are needed to pay and review people. They
    appear only in the owner-only key export (``ratings/exports/formats/raw_ids.py``)
    and are erased ``FUNNYBONE_RAW_ID_RETENTION_DAYS`` days after a participant
    entered the study (``erase_expired_raw_ids``, run by the worker every hour
    and by ``manage.py erase_raw_ids``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import HUMAN_KINDS, AuditEntry, Enrollment, Rater, Study, _pseudonym_key

PREFIX = "P-"
DIGITS = 8


def pseudonym(*, study_id: int, key: str, rater_id: int) -> str:
    """The participant's pseudonym in one study: ``P-`` and eight hex digits."""
    digest = hmac.new(key.encode(), f"{study_id}:{rater_id}".encode(), hashlib.sha256).hexdigest()
    return PREFIX + digest[:DIGITS]


def study_key(study: Study) -> str:
    """The study's pseudonym key; a study written without one (by older code) gets one now, once."""
    if not study.pseudonym_key:
        Study.objects.filter(pk=study.pk, pseudonym_key="").update(pseudonym_key=_pseudonym_key())
        study.pseudonym_key = Study.objects.filter(pk=study.pk).values_list("pseudonym_key", flat=True).get()
    return study.pseudonym_key


def study_pseudonyms(study: Study, rater_ids: Iterable[int]) -> dict[int, str]:
    """{rater id: pseudonym} in this study."""
    key = study_key(study)
    return {pk: pseudonym(study_id=study.pk, key=key, rater_id=pk) for pk in rater_ids}


def shown_name(*, study: Study, rater_id: int, kind: str, name: str) -> str:
    """How a rater is named in exports and reports: a person by pseudonym, a judge by its name."""
    if kind in HUMAN_KINDS:
        return pseudonym(study_id=study.pk, key=study_key(study), rater_id=rater_id)
    return name or f"judge {rater_id}"


# -- retention of raw ids ------------------------------------------------------------

#: The entry link's parameters that identify a person or their session on a platform.
RAW_ENTRY_PARAMS = ("STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId", "turkSubmitTo")
ERASED = "erased_at"


def retention_days() -> int | None:
    """Days a participant's raw ids are kept after they entered a study; None keeps them (0 is refused)."""
    days = getattr(settings, "FUNNYBONE_RAW_ID_RETENTION_DAYS", None)
    return int(days) if days else None


def erase_expired_raw_ids(*, now: datetime | None = None) -> int:
    """Erase the raw ids of participants whose retention ran out; returns how many enrollments were cleared.

    An enrollment older than the retention loses its entry link's ids; a rater
    whose every enrollment is that old loses its platform id (the row stays, so
    its pseudonym and answers stay). One audit entry per study says how many.
    """
    days = retention_days()
    if days is None:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = Enrollment.objects.filter(created_at__lt=cutoff, rater__kind__in=HUMAN_KINDS).exclude(
        entry_params__has_key=ERASED
    )
    erased = 0
    per_study: dict[int, int] = {}
    with transaction.atomic():
        for enrollment in old.select_for_update(of=("self",)).only("pk", "study_id", "entry_params").iterator():
            params = {k: v for k, v in enrollment.entry_params.items() if k not in RAW_ENTRY_PARAMS}
            params[ERASED] = timezone.now().isoformat()
            Enrollment.objects.filter(pk=enrollment.pk).update(entry_params=params)
            per_study[enrollment.study_id] = per_study.get(enrollment.study_id, 0) + 1
            erased += 1
        recent = Enrollment.objects.filter(created_at__gte=cutoff).values("rater_id")
        Rater.objects.filter(kind__in=HUMAN_KINDS, enrollments__created_at__lt=cutoff).exclude(external_id="").exclude(
            pk__in=recent
        ).update(external_id="")
        for study in Study.objects.filter(pk__in=per_study):
            AuditEntry.objects.create(
                study=study,
                study_name=study.name,
                action=AuditEntry.Action.RAW_IDS_ERASED,
                changes={"participants": [None, per_study[study.pk]], "retention_days": [None, days]},
            )
    return erased
