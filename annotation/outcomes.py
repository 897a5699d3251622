"""How a participant's session ends: one registry of outcomes, like the task types' registry.

Each outcome says what the end page shows (its title, heading and message, in
the annotator's language), which of the study's fields hold its completion
code, message and redirect, and what an expert reads instead where the crowd
wording ("return the study on the site you came from") would not fit. The
annotator views ask ``session_outcome`` which outcome an enrollment reached and
hand the ``SessionOutcome`` to the template: no view or template names an
outcome by a literal (``tests/annotation/test_session_outcomes.py`` holds that).

The codes are stable names of outcomes, not stored anywhere: a study stores
only each outcome's fields (``no_work_code`` and so on), whose names the
outcomes keep.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .models import Enrollment, Rater, Study


@dataclass(frozen=True)
class OutcomeCode:
    """What a participant is given at the end: the study's code, message and link for how it ended."""

    code: str
    message: str
    redirect_url: str


@dataclass(frozen=True)
class SessionOutcome:
    """One way a session can end, and everything the end page and the study's settings say about it."""

    code: str  # the outcome's stable name, shown as the end page's data-outcome
    title: Promise  # the browser tab's title
    heading: Promise
    message: Promise
    # Shown when the study gives no code for this outcome (what the participant does next).
    note: Promise | str = ""
    # The study's field prefix for its code, message and redirect ("" when the study sets none).
    fields: str = ""
    # What an invited expert reads instead of ``message`` and ``note`` ("" keeps them).
    expert_message: Promise | str = ""
    expert_note: Promise | str = ""
    # What the researcher's pages (English only) say of a rater who ended this way.
    researcher_label: str = ""

    @property
    def code_field(self) -> str:
        return f"{self.fields}_code" if self.fields else ""

    @property
    def message_field(self) -> str:
        return f"{self.fields}_message" if self.fields else ""

    @property
    def redirect_field(self) -> str:
        return f"{self.fields}_redirect_url" if self.fields else ""

    def for_study(self, study: Study) -> OutcomeCode | None:
        """The study's code, message and redirect for this outcome; None when it sets none of them."""
        if not self.fields:
            return None
        fields = (self.code_field, self.message_field, self.redirect_field)
        found = OutcomeCode(*(str(getattr(study, name) or "").strip() for name in fields))
        return found if any((found.code, found.message, found.redirect_url)) else None


COMPLETED = SessionOutcome(
    code="completed",
    title=_("Thank you"),
    heading=_("Thank you!"),
    message=_("You have finished this study."),
    fields="completion",
    researcher_label="finished",
)
FAILED_CHECKS = SessionOutcome(
    code="failed_checks",
    title=_("Session ended"),
    heading=_("Your session has ended"),
    message=_(
        "Thank you for your time. This session has ended because some of the check questions were not "
        "answered as asked, so there are no more items for you."
    ),
    note=_(
        "You can close this page now. If you believe this is a mistake, please contact the researchers "
        "through the site you came from."
    ),
    fields="failed_checks",
    researcher_label="ended on attention checks",
    expert_note=_("You can close this page now. If you believe this is a mistake, please contact the researcher."),
)
CLOSED = SessionOutcome(
    code="closed",
    title=_("Study closed"),
    heading=_("This study is closed"),
    message=_("This study stopped taking answers. Thank you for the answers you gave; they are kept."),
    note=_("If you have questions, please contact the researchers through the site you came from."),
    expert_note=_("If you have questions, please contact the researcher who invited you."),
    researcher_label="study closed before they finished",
)
NO_WORK = SessionOutcome(
    code="no_work",
    title=_("No items left"),
    heading=_("No items left"),
    message=_(
        "Thank you for coming. Enough people have already answered every item, so there is nothing left "
        "for you to do in this study."
    ),
    note=_("Please return the study on the site you came from; you can close this page now."),
    fields="no_work",
    researcher_label="nothing left to rate: every item already had its answers",
    expert_message=_(
        "Thank you for accepting the invitation. Every item of this study already has all the ratings "
        "it asks for, so there is nothing for you to rate."
    ),
    expert_note=_(
        "The researcher who invited you can see this; please contact them if they want your ratings. "
        "You can close this page now."
    ),
)
DECLINED = SessionOutcome(
    code="declined",
    title=_("Thank you"),
    heading=_("Thank you for considering this study"),
    message=_("You chose not to take part, and nothing more will be asked of you. You can close this page now."),
    note=_(
        "If you came from a recruitment site, please return the study there so that your place goes to someone else."
    ),
    fields="declined",
)

SCREENED_OUT = SessionOutcome(
    code="screened_out",
    title=_("Session ended"),
    heading=_("Thank you for taking the test"),
    message=_(
        "This study needs a certain score on its short test, and your answers did not reach it, so there are "
        "no items for you. Your answers to the test are not used as data."
    ),
    note=_("Please return the study on the site you came from; you can close this page now."),
    fields="screened_out",
    researcher_label="screened out by the qualification test",
    expert_note=_("You can close this page now. If you believe this is a mistake, please contact the researcher."),
)
# Not admitted at entry: the study is open only to those who passed a qualification in an earlier study.
NOT_ADMITTED = SessionOutcome(
    code="not_admitted",
    title=_("Not available"),
    heading=_("This study is not available to you"),
    message=_(
        "This study is open only to participants who passed a qualification test in an earlier study, "
        "and we have no pass recorded for you. Nothing more will be asked of you."
    ),
    note=_("Please return the study on the site you came from; you can close this page now."),
    fields="screened_out",
    researcher_label="not admitted: no pass of the study's qualification",
    expert_note=_("If you believe this is a mistake, please contact the researcher who invited you."),
)

SESSION_OUTCOMES: dict[str, SessionOutcome] = {
    o.code: o for o in (COMPLETED, FAILED_CHECKS, CLOSED, NO_WORK, DECLINED, SCREENED_OUT, NOT_ADMITTED)
}


def answered_enough(*, min_answers: int, answers: int, regular_answers: int) -> bool:
    """Whether a rater gave the answers the study asks for before its completion code.

    At the default of one, any answer will do (attention checks included); a
    higher minimum counts answers to regular items only.
    """
    return answers >= 1 if min_answers <= 1 else regular_answers >= min_answers


def session_outcome(*, enrollment: Enrollment, done_enough: Callable[[], bool]) -> SessionOutcome:
    """How this finished enrollment's session ended.

    Screened out by a qualification; ended early by the attention-check policy; still open when the study closed
    under it; done with the answers the study asks for; or finished without
    them, because nothing was left for this rater. ``done_enough`` is asked
    only of a completed enrollment (it may cost a query).
    """
    if enrollment.screened_out_at is not None:
        # Screened out before the task (annotation.rater_steps): by the test here, or at entry.
        return NOT_ADMITTED if enrollment.study.qualification_mode == "passed_only" else SCREENED_OUT
    if enrollment.ended_early:
        return FAILED_CHECKS
    if enrollment.completed_at is None:
        return CLOSED
    return COMPLETED if done_enough() else NO_WORK


@dataclass(frozen=True)
class EndPage:
    """What the end page shows one rater: the outcome's words in the rater's role, and the study's code."""

    outcome: SessionOutcome
    message: Promise | str
    note: Promise | str
    code: OutcomeCode | None


def end_page(*, outcome: SessionOutcome, study: Study, rater: Rater | None, with_code: bool = True) -> EndPage:
    """The outcome as this rater reads it.

    An invited expert came from no recruitment site: they get the expert wording
    (never "return the study on the site you came from") and none of the study's
    codes, messages or redirects, which are the crowd's ("Code for a worker who ...").
    """
    if rater is not None and rater.kind == Rater.Kind.EXPERT:
        return EndPage(outcome, outcome.expert_message or outcome.message, outcome.expert_note or outcome.note, None)
    return EndPage(outcome, outcome.message, outcome.note, outcome.for_study(study) if with_code else None)
