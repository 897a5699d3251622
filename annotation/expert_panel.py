"""Reads about an expert panel: whom a study invited and how far each expert got, and an expert's own studies.

Writes (creating and accepting invitations, the expert's account) live in
:mod:`annotation.services.enrollment`.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import BooleanField, Count, DateTimeField, IntegerField, Max, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from .models import Enrollment, Invitation, Judgment, Study
from .outcomes import SessionOutcome, answered_enough, session_outcome
from .selectors.annotator import AnnotatorProgress, annotator_progress


def _judgments_of_invited(field: str, *, regular: bool = True):
    judgments = Judgment.objects.filter(study=OuterRef("study"), rater=OuterRef("rater"))
    if regular:
        judgments = judgments.filter(item__is_attention_check=False)
    return (
        judgments.values("rater").annotate(value=Count("pk") if field == "count" else Max("created_at")).values("value")
    )


def invitations_with_progress(*, study: Study) -> list[Invitation]:
    """The study's invitations, newest first, each with the accepted expert's answers so far.

    Annotated: ``n_judged`` (regular items answered), ``last_answer_at``,
    ``completed_at`` (when the expert finished, from their enrollment), and
    ``outcome``: how the expert's session ended (``outcomes.SESSION_OUTCOMES``),
    None while it goes on. One query however many invitations.
    """
    enrollment = Enrollment.objects.filter(study=OuterRef("study"), rater=OuterRef("rater"))
    rows = list(
        Invitation.objects.filter(study=study)
        .select_related("rater")
        .annotate(
            n_judged=Coalesce(Subquery(_judgments_of_invited("count"), output_field=IntegerField()), Value(0)),
            n_answers=Coalesce(
                Subquery(_judgments_of_invited("count", regular=False), output_field=IntegerField()), Value(0)
            ),
            last_answer_at=Subquery(_judgments_of_invited("last"), output_field=DateTimeField()),
            completed_at=Subquery(enrollment.values("completed_at")[:1], output_field=DateTimeField()),
            ended_early=Subquery(enrollment.values("ended_early")[:1], output_field=BooleanField()),
        )
        .order_by("-created_at", "-pk")
    )
    for row in rows:
        row.outcome = _outcome_of(row, study)
    return rows


def _outcome_of(row: Invitation, study: Study) -> SessionOutcome | None:
    """How the invited expert's session ended, decided as the end page decides it; None while it goes on."""
    if not (row.completed_at or row.ended_early):
        return None
    finished = Enrollment(completed_at=row.completed_at, ended_early=bool(row.ended_early))
    enough = answered_enough(min_answers=study.min_answers, answers=row.n_answers, regular_answers=row.n_judged)
    return session_outcome(enrollment=finished, done_enough=lambda: enough)


@dataclass(frozen=True)
class ExpertStudy:
    """One study an expert accepted an invitation to, with where they stand in it."""

    study: Study
    token: str  # their invitation's: the link that brings them back
    progress: AnnotatorProgress | None  # None until they reach the study's steps
    finished: bool
    accepted_at: datetime | None


def expert_studies(*, user: AbstractBaseUser) -> list[ExpertStudy]:
    """The studies this account accepted invitations to, most recently accepted first."""
    invitations = (
        Invitation.objects.filter(rater__user=user).select_related("study", "rater").order_by("-accepted_at", "-pk")
    )
    enrollments = {
        e.study_id: e
        for e in Enrollment.objects.filter(
            rater__user=user, study__in=[i.study_id for i in invitations]
        ).select_related("study", "rater")
    }
    rows = []
    for invitation in invitations:
        enrollment = enrollments.get(invitation.study_id)
        finished = enrollment is not None and (enrollment.completed_at is not None or enrollment.ended_early)
        rows.append(
            ExpertStudy(
                study=invitation.study,
                token=invitation.token,
                progress=annotator_progress(enrollment=enrollment) if enrollment is not None else None,
                finished=finished or not invitation.study.is_open,
                accepted_at=invitation.accepted_at,
            )
        )
    return rows
