# SPDX-License-Identifier: GPL-3.0-or-later
"""What a researcher does on Prolific from Funnybone: link, review, reject, pay bonuses, free places.

Each participant's Funnybone outcome (``annotation.outcomes``) stands beside their
Prolific submission. The rules:

- **Approve**: every submission awaiting review whose participant finished with
  the ``completed`` outcome, in one bulk call.
- **Reject**: a submission awaiting review whose participant's session ended on
  the attention checks (``failed_checks``), with that outcome as the reason: the
  category ``FAILED_CHECK`` and a message (the researcher's, or one built from
  the outcome) of at least Prolific's 100 characters. The rejected participant's
  open leases are released at once and their enrollment is excluded (their
  answers stay in the database and the exports, flagged, out of every aggregate:
  the rule of attention-check exclusions).
- **Free places**: participants whose submission is ``RETURNED``, ``TIMED-OUT``
  or ``REJECTED`` give back their open leases at once (``places_give_back``),
  instead of when each lease runs out. Answers they already gave are kept and
  still count (returned and timed-out) or are excluded (rejected, above).
- **Bonuses**: ``participant,amount`` lines (a pseudonym or a Prolific id), set
  up and paid in two calls; the pay call is sent once.

Calls are synchronous with a time limit each; one click sends at most
``BATCH`` rejections (the page says how many are left).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.audit import audit_record
from annotation.models import AuditEntry, Enrollment, Rater, Study
from annotation.outcomes import COMPLETED, FAILED_CHECKS, SessionOutcome, session_outcome
from annotation.privacy import study_pseudonyms
from annotation.selectors.annotator import has_done_enough
from annotation.services.places import places_give_back
from annotation.study_changes import study_inputs_changed

from .prolific import AWAITING_REVIEW, LEFT, REJECT_MESSAGE_MIN, ProlificClient, Submission

PROLIFIC_STUDY_ID = re.compile(r"^[0-9a-f]{24}$")
#: Rejections sent per click, each its own call.
BATCH = 100
#: Participants the page lists at most.
LISTED = 1000
#: The most one bonus line may pay (in the study's currency): a typo of 500 for 5.00 is refused.
BONUS_MAX = Decimal("100")
REJECTED_REASON = "rejected on Prolific"


@dataclass
class Participant:
    enrollment: Enrollment
    pseudonym: str
    participant_id: str
    outcome: SessionOutcome | None
    submission: Submission | None = None

    @property
    def status(self) -> str:
        return self.submission.status if self.submission else ""


def prolific_link(*, study: Study, prolific_study_id: str, actor: AbstractBaseUser) -> None:
    value = (prolific_study_id or "").strip().lower()
    if value and not PROLIFIC_STUDY_ID.match(value):
        raise ValidationError({"prolific_study_id": "A Prolific study id is 24 letters a-f and digits."})
    before = study.prolific_study_id
    study.prolific_study_id = value
    study.save(update_fields=["prolific_study_id"])
    audit_record(
        study=study,
        action=AuditEntry.Action.PROLIFIC_LINKED,
        actor=actor,
        changes={"prolific_study_id": [before, value]},
    )


def _outcome(enrollment: Enrollment) -> SessionOutcome | None:
    if enrollment.consented_at is None:
        return None  # never started (or declined): no outcome to stand on
    return session_outcome(enrollment=enrollment, done_enough=lambda: has_done_enough(enrollment=enrollment))


def participants(*, study: Study, submissions: list[Submission] | None = None) -> list[Participant]:
    """The study's crowd participants with their outcome, pseudonym and (when given) Prolific submission."""
    enrollments = list(
        Enrollment.objects.filter(study=study, rater__kind=Rater.Kind.CROWD)
        .select_related("rater", "study")
        .order_by("pk")[:LISTED]
    )
    aliases = study_pseudonyms(study, [e.rater_id for e in enrollments])
    by_pid = {s.participant_id.lower(): s for s in submissions or []}
    return [
        Participant(
            enrollment=e,
            pseudonym=aliases[e.rater_id],
            participant_id=e.rater.external_id,
            outcome=_outcome(e),
            submission=by_pid.get(e.rater.external_id.lower()) if e.rater.external_id else None,
        )
        for e in enrollments
    ]


def _linked(study: Study) -> str:
    if not study.prolific_study_id:
        raise ValidationError({"prolific_study_id": "Link this study to a Prolific study first."})
    return study.prolific_study_id


def approve_completed(*, study: Study, client: ProlificClient, actor: AbstractBaseUser) -> int:
    linked = _linked(study)
    people = participants(study=study, submissions=list(client.submissions(linked)))
    ids = [p.participant_id for p in people if p.status == AWAITING_REVIEW and p.outcome == COMPLETED]
    if ids:
        client.bulk_approve(linked, ids)
        audit_record(
            study=study, action=AuditEntry.Action.PROLIFIC_REVIEWED, actor=actor, changes={"approved": [0, len(ids)]}
        )
    return len(ids)


def reject_message(*, study: Study, outcome: SessionOutcome, typed: str = "") -> str:
    """The message a rejection sends: the researcher's, or the outcome's own words; at least 100 characters."""
    message = (typed or "").strip()
    if not message:
        message = (getattr(study, outcome.message_field, "") if outcome.message_field else "") or ""
        message = message.strip()
    if len(message) < REJECT_MESSAGE_MIN:
        message = (f"{message} " if message else "") + (
            f"Your submission to “{study.name}” was rejected because your session {outcome.researcher_label}: "
            "the check questions in the task have one correct answer, stated in the question, and too many of "
            "yours did not give it."
        )
    return message.strip()


def reject_failed_checks(
    *, study: Study, client: ProlificClient, actor: AbstractBaseUser, message: str = ""
) -> tuple[int, int]:
    """Reject (at most ``BATCH``) submissions of participants who failed the checks; (rejected, still to do)."""
    typed = (message or "").strip()
    if typed and len(typed) < REJECT_MESSAGE_MIN:
        raise ValidationError(
            {
                "message": f"Prolific asks for a message of at least {REJECT_MESSAGE_MIN} characters ({len(typed)} given)."
            }
        )
    linked = _linked(study)
    people = participants(study=study, submissions=list(client.submissions(linked)))
    due = [p for p in people if p.status == AWAITING_REVIEW and p.outcome == FAILED_CHECKS]
    text = reject_message(study=study, outcome=FAILED_CHECKS, typed=typed)
    done: list[Participant] = []
    try:
        for person in due[:BATCH]:
            client.reject(person.submission.id, message=text, category="FAILED_CHECK")
            done.append(person)
    finally:
        if done:
            _let_go(study=study, people=done, exclude=True)
            audit_record(
                study=study,
                action=AuditEntry.Action.PROLIFIC_REVIEWED,
                actor=actor,
                changes={"rejected": [0, len(done)]},
            )
    return len(done), len(due) - len(done)


def _let_go(*, study: Study, people: list[Participant], exclude: bool) -> int:
    """Release the open leases of participants who left; with ``exclude``, exclude them from the aggregates."""
    raters = [p.enrollment.rater_id for p in people]
    with transaction.atomic():
        list(Enrollment.objects.select_for_update().filter(study=study, rater_id__in=raters).values_list("pk"))
        freed = places_give_back(study=study, rater_ids=raters)
        if exclude:
            changed = Enrollment.objects.filter(study=study, rater_id__in=raters, excluded=False).update(
                excluded=True, excluded_reason=REJECTED_REASON
            )
            if changed:
                study_inputs_changed([study.pk])
    return freed


def free_places_of_leavers(*, study: Study, client: ProlificClient, actor: AbstractBaseUser) -> tuple[int, int]:
    """Give back the open places of returned, timed-out and rejected participants; (participants, places)."""
    people = participants(study=study, submissions=list(client.submissions(_linked(study))))
    left = [p for p in people if p.status in LEFT]
    rejected = [p for p in left if p.status == "REJECTED"]
    freed = _let_go(study=study, people=[p for p in left if p.status != "REJECTED"], exclude=False) if left else 0
    freed += _let_go(study=study, people=rejected, exclude=True) if rejected else 0
    return len(left), freed


def bonus_lines(*, study: Study, text: str) -> dict[str, Decimal]:
    """``participant,amount`` lines as {Prolific id: amount}; a ValidationError names the line that is wrong."""
    people = {p.pseudonym.lower(): p.participant_id for p in participants(study=study)}
    ids = {p.lower() for p in people.values() if p}
    amounts: dict[str, Decimal] = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        who, _, amount = line.partition(",")
        who = who.strip().lower()
        pid = people.get(who) or (who if who in ids else "")
        if not pid:
            raise ValidationError({"bonuses": f"Line {number}: {who or '(empty)'} is not a participant of this study."})
        try:
            value = Decimal(amount.strip())
        except InvalidOperation:
            raise ValidationError(
                {"bonuses": f"Line {number}: {amount.strip()!r} is not an amount like 1.50."}
            ) from None
        if not value.is_finite() or value <= 0 or value > BONUS_MAX or value != value.quantize(Decimal("0.01")):
            raise ValidationError(
                {
                    "bonuses": f"Line {number}: the amount must be between 0.01 and {BONUS_MAX} with at most two decimals."
                }
            )
        if pid in amounts:
            raise ValidationError({"bonuses": f"Line {number}: {who} has a bonus on an earlier line already."})
        amounts[pid] = value
    if not amounts:
        raise ValidationError({"bonuses": "Give one participant,amount line at least."})
    return amounts


def bonuses_pay(*, study: Study, client: ProlificClient, actor: AbstractBaseUser, text: str) -> tuple[int, Decimal]:
    amounts = bonus_lines(study=study, text=text)
    payment = client.bonuses_set_up(_linked(study), amounts)
    client.bonuses_pay(payment)
    total = sum(amounts.values(), Decimal(0))
    audit_record(
        study=study,
        action=AuditEntry.Action.PROLIFIC_BONUS,
        actor=actor,
        changes={"participants": [0, len(amounts)], "total": [None, str(total)]},
    )
    return len(amounts), total
