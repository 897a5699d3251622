"""Bringing raters into a study: crowd entry links and expert invitations."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Enrollment, Invitation, Rater, Study

CROWD_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def enroll_crowdworker(*, study: Study, participant_id: str, params: dict[str, Any] | None = None) -> Enrollment:
    """Enrol (or find again) the crowdworker with this participant id."""
    participant_id = (participant_id or "").strip()
    if not participant_id or len(participant_id) > 200:
        raise ValidationError("The entry link is missing a participant id.")
    if not study.is_open:
        raise ValidationError("This study is not open.")
    try:
        with transaction.atomic():
            rater, _ = Rater.objects.get_or_create(kind=Rater.Kind.CROWD, external_id=participant_id)
    except IntegrityError:
        rater = Rater.objects.get(kind=Rater.Kind.CROWD, external_id=participant_id)
    return _enroll(study=study, rater=rater, params=params or {})


def _enroll(*, study: Study, rater: Rater, params: dict[str, Any]) -> Enrollment:
    try:
        with transaction.atomic():
            enrollment, _ = Enrollment.objects.get_or_create(
                study=study, rater=rater, defaults={"entry_params": params}
            )
    except IntegrityError:
        enrollment = Enrollment.objects.get(study=study, rater=rater)
    return enrollment


def expert_rater(*, user: AbstractBaseUser) -> Rater:
    rater, _ = Rater.objects.get_or_create(
        user=user, defaults={"kind": Rater.Kind.EXPERT, "name": user.get_full_name() or user.get_username()}
    )
    return rater


def invitation_create(*, study: Study, email: str = "") -> Invitation:
    """A personal invitation link for one expert; the email is a note for the researcher, nothing is sent."""
    return Invitation.objects.create(study=study, email=(email or "").strip())


def invitation_accept(*, invitation: Invitation, user: AbstractBaseUser) -> Enrollment:
    # Check before creating anything: opening someone else's accepted link must
    # not turn the visitor (say, a researcher) into an expert rater.
    existing = Rater.objects.filter(user=user).first()
    if invitation.rater_id and (existing is None or invitation.rater_id != existing.pk):
        raise ValidationError("This invitation was already accepted by someone else.")
    rater = existing or expert_rater(user=user)
    if invitation.rater_id is None:
        invitation.rater = rater
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["rater", "accepted_at"])
    return _enroll(study=invitation.study, rater=rater, params={"invitation": invitation.pk})


def enrollment_consent(*, enrollment: Enrollment) -> Enrollment:
    if enrollment.consented_at is None:
        enrollment.consented_at = timezone.now()
        enrollment.save(update_fields=["consented_at"])
    return enrollment


def enrollment_instructed(*, enrollment: Enrollment) -> Enrollment:
    if enrollment.instructed_at is None:
        enrollment.instructed_at = timezone.now()
        enrollment.save(update_fields=["instructed_at"])
    return enrollment


def enrollment_complete(*, enrollment: Enrollment) -> Enrollment:
    if enrollment.completed_at is None:
        enrollment.completed_at = timezone.now()
        enrollment.save(update_fields=["completed_at"])
    return enrollment
