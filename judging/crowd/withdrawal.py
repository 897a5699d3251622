# SPDX-License-Identifier: GPL-3.0-or-later
"""A participant's withdrawal from a study: everything they gave is deleted, and that is written down.

``participant_withdraw`` deletes, in one transaction, the participant's
assignments and judgments in the study (the places they held are given back
through ``annotation.services.places``), their enrollment (with everything kept
per enrolment: entry ids, consent, questionnaire answers), and the rater itself
when it has nothing left anywhere. It writes an ``AuditEntry`` that names the
participant by pseudonym only, marks the study's stored reports out of date
(``annotation.study_changes``) and deletes the study's written exports, which
may hold the participant (``ratings.exports.services.exports_discard``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.audit import audit_record
from annotation.models import HUMAN_KINDS, AuditEntry, Enrollment, Judgment, Rater, Study
from annotation.privacy import study_pseudonyms
from annotation.services.places import places_give_back
from annotation.study_changes import study_inputs_changed
from ratings.exports.services import exports_discard


@dataclass(frozen=True)
class Withdrawn:
    pseudonym: str
    answers: int
    places: int
    exports: int


def participant_find(*, study: Study, who: str) -> Rater:
    """The study's participant named by pseudonym (``P-…``) or by platform id; a ValidationError otherwise."""
    who = (who or "").strip()
    raters = Rater.objects.filter(kind__in=HUMAN_KINDS, enrollments__study=study)
    if who.upper().startswith("P-"):
        ids = list(raters.values_list("pk", flat=True))
        for pk, alias in study_pseudonyms(study, ids).items():
            if alias.lower() == who.lower():
                return raters.get(pk=pk)
    else:
        found = raters.filter(external_id__iexact=who).first()
        if found is not None and who:
            return found
    raise ValidationError({"participant": f"No participant {who!r} in this study (give a pseudonym or a platform id)."})


def participant_withdraw(*, study: Study, rater: Rater, actor: AbstractBaseUser | None) -> Withdrawn:
    """Delete the participant's data in this study (see the module's doc)."""
    if rater.kind not in HUMAN_KINDS:
        raise ValidationError({"participant": "Only a person can withdraw; judges are removed on the judging pages."})
    alias = study_pseudonyms(study, [rater.pk])[rater.pk]
    with transaction.atomic():
        # The enrollment first: the order the answer path locks in, so an answer in flight waits.
        enrolled = list(Enrollment.objects.select_for_update().filter(study=study, rater=rater).values_list("pk"))
        answers = Judgment.objects.filter(study=study, rater=rater).count()
        if not enrolled and not answers:
            raise ValidationError({"participant": f"{alias} has nothing in this study."})
        places = places_give_back(study=study, rater_ids=[rater.pk], drop_answers=True)
        Judgment.objects.filter(study=study, rater=rater).delete()
        Enrollment.objects.filter(study=study, rater=rater).delete()
        if not rater.enrollments.exists() and not rater.judgments.exists() and rater.user_id is None:
            rater.delete()
        exports = exports_discard(study=study)
        study_inputs_changed([study.pk])
        audit_record(
            study=study,
            action=AuditEntry.Action.WITHDRAWN,
            actor=actor,
            changes={"participant": [alias, None], "answers": [answers, 0], "exports_deleted": [exports, None]},
        )
    return Withdrawn(pseudonym=alias, answers=answers, places=places, exports=exports)
