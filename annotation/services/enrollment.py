"""Bringing raters into a study: crowd entry links and expert invitations."""

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Permission
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from ..api.permissions import is_researcher
from ..models import Assignment, Enrollment, Invitation, Rater, Study

CROWD_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
# A link whose id was never filled in: {{%PROLIFIC_PID%}}, %PID%, <PID>, ${PID}, {PID}, ...
TEMPLATED_ID = re.compile(r"\{\{|\}\}|%[^%]*%|<[^>]*>|\$\{|^\{.*\}$")
# What any platform's participant id looks like: no spaces, no markup, a sane length.
PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,99}$")
PROLIFIC_ID = re.compile(r"^[0-9a-fA-F]{24}$")
# Mechanical Turk's worker ids: upper-case letters and digits (A1B2C3D4E5F6G7, usually 12 to 14 long).
MTURK_WORKER_ID = re.compile(r"^[A-Z0-9]{6,64}$")


def prolific_id_normal(participant_id: str) -> str:
    """The one spelling of a Prolific id (24 hex digits): lower case, as Prolific writes it."""
    return participant_id.lower()


def participant_id_check(*, study: Study, participant_id: str) -> str:
    """The participant id, stripped, or a ValidationError saying why it cannot be anyone's.

    Codes: ``placeholder`` for an empty or unfilled template (the link as the
    study page shows it), ``shape`` for an id that cannot come from the platform.
    """
    participant_id = (participant_id or "").strip()
    if not participant_id or TEMPLATED_ID.search(participant_id):
        raise ValidationError(gettext("The entry link has no participant id filled in."), code="placeholder")
    if study.recruitment == Study.Recruitment.PROLIFIC:
        if not PROLIFIC_ID.match(participant_id):
            raise ValidationError(
                gettext("This is not a Prolific participant id (24 letters a-f and digits)."), code="shape"
            )
        # A hex number is the same whatever its case: one worker, one rater (Prolific writes them in lower case).
        return prolific_id_normal(participant_id)
    if study.recruitment == Study.Recruitment.MTURK:
        if not MTURK_WORKER_ID.match(participant_id):
            raise ValidationError(
                gettext("This is not a Mechanical Turk worker id (capital letters and digits)."), code="shape"
            )
        return participant_id
    elif not PARTICIPANT_ID.match(participant_id):
        raise ValidationError(
            gettext(
                "The participant id in the link is not valid (letters, digits and . _ @ : + - only, "
                "at most 100 characters)."
            ),
            code="shape",
        )
    return participant_id


def enroll_crowdworker(*, study: Study, participant_id: str, params: dict[str, Any] | None = None) -> Enrollment:
    """Enrol (or find again) the crowdworker with this participant id."""
    participant_id = participant_id_check(study=study, participant_id=participant_id)
    if not study.is_open:
        raise ValidationError(gettext("This study is not open."))
    try:
        with transaction.atomic():
            rater, _ = Rater.objects.get_or_create(kind=Rater.Kind.CROWD, external_id=participant_id)
    except IntegrityError:
        rater = Rater.objects.get(kind=Rater.Kind.CROWD, external_id=participant_id)
    enrollment = _enroll(study=study, rater=rater, params=params or {})
    if study.recruitment == Study.Recruitment.MTURK and params and enrollment.entry_params != params:
        # A worker who returned an assignment and accepted another submits the new one at the end.
        enrollment.entry_params = {**enrollment.entry_params, **params}
        enrollment.save(update_fields=["entry_params"])
    return enrollment


def _enroll(*, study: Study, rater: Rater, params: dict[str, Any]) -> Enrollment:
    try:
        with transaction.atomic():
            enrollment, _ = Enrollment.objects.get_or_create(
                study=study, rater=rater, defaults={"entry_params": params}
            )
    except IntegrityError:
        enrollment = Enrollment.objects.get(study=study, rater=rater)
    return enrollment


def enroll_preview(*, study: Study, user: AbstractBaseUser) -> Enrollment:
    """A fresh run through the study as a participant, for the researcher who owns it.

    The researcher's preview rater is kept apart by its kind (see
    ``models.counted_raters``); each preview starts over, so the earlier
    preview's answers in this study are deleted rather than resumed.
    """
    if not study.is_open:
        raise ValidationError("Open the study to try it as a participant.")
    with transaction.atomic():
        rater, _ = Rater.objects.get_or_create(
            kind=Rater.Kind.PREVIEW,
            external_id=f"user-{user.pk}",
            defaults={"name": f"Preview by {user.get_username()}"},
        )
        # Judgments go with their assignments (cascade).
        Assignment.objects.filter(study=study, rater=rater).delete()
        Enrollment.objects.filter(study=study, rater=rater).delete()
        return Enrollment.objects.create(study=study, rater=rater, entry_params={"preview": True})


def preview_owner_matches(*, rater: Rater, user: AbstractBaseUser) -> bool:
    """Whether this preview rater is the signed-in researcher's own."""
    return rater.external_id == f"user-{user.pk}"


def expert_rater(*, user: AbstractBaseUser) -> Rater:
    rater, _ = Rater.objects.get_or_create(
        user=user, defaults={"kind": Rater.Kind.EXPERT, "name": user.get_full_name() or user.get_username()}
    )
    return rater


def invitation_create(*, study: Study, email: str = "", name: str = "") -> Invitation:
    """A personal invitation link for one expert; name and email are notes for the researcher, nothing is sent."""
    return Invitation.objects.create(study=study, email=(email or "").strip(), name=(name or "").strip())


def invitation_taken_by_another(*, invitation: Invitation, user: AbstractBaseUser) -> bool:
    """Whether someone other than this account accepted the invitation."""
    return invitation.rater_id is not None and not Rater.objects.filter(pk=invitation.rater_id, user=user).exists()


def invitation_accept(*, invitation: Invitation, user: AbstractBaseUser) -> Enrollment:
    """Link the invitation to the account's expert rater and enrol it; accepting again resumes.

    The invitation row is locked first: two people opening one link at once
    cannot both accept it.
    """
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("study").get(pk=invitation.pk)
        # Check before creating anything: opening someone else's accepted link must
        # not turn the visitor (say, a researcher) into an expert rater.
        existing = Rater.objects.filter(user=user).first()
        if invitation.rater_id and (existing is None or invitation.rater_id != existing.pk):
            raise ValidationError(gettext("This invitation was already accepted by someone else."))
        if existing is None and is_researcher(user):
            # An account with no rater is a researcher's (is_researcher); the expert rater made
            # next would take that away, and with it her studies' pages and the API. Write down
            # what she is, so rating for a colleague adds a role and removes none.
            researcher_keep(user=user)
        rater = existing or expert_rater(user=user)
        if invitation.rater_id is None:
            invitation.rater = rater
            invitation.accepted_at = timezone.now()
            invitation.save(update_fields=["rater", "accepted_at"])
        return _enroll(study=invitation.study, rater=rater, params={"invitation": invitation.pk})


def expert_account_create(
    *, invitation: Invitation, username: str, password: str, name: str, email: str = ""
) -> tuple[AbstractBaseUser, Enrollment]:
    """A new account for the invited expert, with the invitation accepted: both or neither.

    The password is checked by the caller's form (Django's password validators).
    """
    user_model = get_user_model()
    with transaction.atomic():
        user = user_model.objects.create_user(username=username, email=email, password=password, first_name=name)
        expert_rater(user=user)  # an expert's account from the start, never a researcher's
        return user, invitation_accept(invitation=invitation, user=user)


def researcher_keep(*, user: AbstractBaseUser) -> None:
    """Give the account the researcher's permission ("Can add study"), which a rater of its own does not undo."""
    permission = Permission.objects.get(content_type__app_label="annotation", codename="add_study")
    user.user_permissions.add(permission)
    # Django caches an account's permissions on the instance: read them afresh next time.
    for cached in ("_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cached, None)


def enrollment_consent(*, enrollment: Enrollment) -> Enrollment:
    if enrollment.consented_at is None:
        enrollment.consented_at = timezone.now()
        # Agreeing after a decline (the "I changed my mind" link) takes the decline back.
        enrollment.declined_at = None
        enrollment.save(update_fields=["consented_at", "declined_at"])
    return enrollment


def enrollment_decline(*, enrollment: Enrollment) -> Enrollment:
    """Record that the rater declined consent; they may still change their mind before agreeing."""
    if enrollment.consented_at is None and enrollment.declined_at is None:
        enrollment.declined_at = timezone.now()
        enrollment.save(update_fields=["declined_at"])
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
