"""The contract every task type fulfils.

A task type knows the shape of the value it accepts, how its form posts
(by displayed position, so candidate keys never reach the page) and what its
form partial needs, its keyboard shortcuts, how its value becomes a number for
the statistics and which statistics family analyses it, and whether candidates
are shuffled. How an LLM is asked and answers is registered under the same
name in ``judging.task_types`` (this app knows nothing of judging). Adding a
task type means adding one module here, one there, and a form partial; code
elsewhere asks the task type rather than comparing its name
(docs/task-types.md).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_noop

from ..json_limits import has_nul, has_surrogate
from ..languages import platform_text

#: The value a pairwise answer takes for "equally funny".
TIE = "tie"


class Level:
    """A task type's statistics family: which analyses its values get in ``ratings``."""

    NOMINAL = "nominal"  # one unordered label or candidate per judgment
    ORDINAL = "ordinal"  # a point on an ordered scale
    INTERVAL = "interval"
    PAIRWISE = "pairwise"  # first wins / tie / second wins: matches between contestants
    COUNTS = "counts"  # votes spread over candidates: no single number
    TEXT = "text"  # written answers: no numbers at all
    BEST_WORST = "best_worst"  # the best and the worst of a set: counting scores, agreement per pick


#: The picks a best–worst value names (``TaskType.picks``), each analysed as a nominal choice.
PICK_BEST, PICK_WORST = "best", "worst"

#: Families whose values code as one number per judgment (an items × raters matrix).
MATRIX_LEVELS = (Level.NOMINAL, Level.ORDINAL, Level.PAIRWISE)


@dataclass(frozen=True)
class Option:
    """A button on the annotator's form: what it posts, what it says, its key (and a second key)."""

    value: str
    label: str
    shortcut: str
    alt_shortcut: str = ""


@dataclass(frozen=True)
class ConfigField:
    """One of a task type's settings (a key of its config) as the study builder shows it.

    ``kind`` says how it is typed: ``text`` (one line), ``whole_number``,
    ``boolean`` (a checkbox), ``lines`` (a list of texts, one per line; ``count``
    fixes how many), ``numbers`` (whole numbers separated by commas) or
    ``options`` (a list of ``{"value", "label"}``, one ``value: label`` per line).
    The task type's ``check_config`` stays the judge of what makes sense.
    """

    key: str
    kind: str
    label: str
    help_text: str = ""
    count: int | None = None


#: Sample jokes for the study builder's preview of the rater's page (never stored).
SAMPLE_JOKES = (
    "I told my wife she was drawing her eyebrows too high. She looked surprised.",
    "I used to hate facial hair, but then it grew on me.",
    "Why don't skeletons fight each other? They don't have the guts.",
    "I'm reading a book about anti-gravity. It's impossible to put down.",
)


@dataclass(frozen=True)
class Shortcut:
    """A line of the instructions page's keyboard table."""

    keys: tuple[str, ...]
    action: str
    joiner: str = "or"


class TaskType(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    level: ClassVar[str]
    template: ClassVar[str]
    # How many candidates an item needs: (min, max); (0, 0) for none.
    candidates: ClassVar[tuple[int, int | None]] = (0, 0)
    shuffle_candidates: ClassVar[bool] = False
    default_config: ClassVar[dict[str, Any]] = {}
    #: The annotator form's heading when the study's config sets no ``question`` (translated when shown).
    question: ClassVar[str] = gettext_noop("Your answer")
    #: Two labels, one of them positive: classification scores (MCC, FPR, FNR) apply.
    dichotomous: ClassVar[bool] = False
    #: Totals are shown to annotators once the study is closed (OOGIRI-style voting).
    public_leaderboard: ClassVar[bool] = False
    #: The value field a bare gold cell fills ("rating", "label", "choice", "votes",
    #: "replacement", "text"); empty when gold must be written as the whole object.
    gold_field: ClassVar[str] = ""
    #: The settings of ``default_config`` as the study builder's fields: every key once (docs/study-builder.md).
    config_fields: ClassVar[tuple[ConfigField, ...]] = ()
    #: The item the builder's preview shows; ``candidates`` is filled from SAMPLE_JOKES when left empty.
    sample_prompt: ClassVar[str] = ""
    sample_text: ClassVar[str] = ""

    def sample_item(self) -> tuple[str, str, list[str]]:
        """The preview's sample item: prompt, text and candidate texts (as many as an item takes, up to four)."""
        low, high = self.candidates
        wanted = max(low, min(4 if high is None else high, 4))
        text = self.sample_text or ("" if wanted else SAMPLE_JOKES[0])
        return self.sample_prompt, text, list(SAMPLE_JOKES[:wanted])

    def config(self, study_config: dict[str, Any] | None) -> dict[str, Any]:
        """The study's config merged over this type's defaults, validated."""
        merged = {**self.default_config, **(study_config or {})}
        self.check_config(merged)
        return merged

    def check_config(self, config: dict[str, Any]) -> None:
        """Raise ValidationError when a study config makes no sense (nothing to check by default)."""
        return

    # -- candidates ---------------------------------------------------------
    def check_candidates(self, keys: list[str]) -> None:
        low, high = self.candidates
        if len(keys) < low or (high is not None and len(keys) > high):
            wanted = f"{low}" if low == high else f"{low} to {high if high is not None else 'many'}"
            raise ValidationError(f"{self.title} items need {wanted} candidates, got {len(keys)}.")
        if len(set(keys)) != len(keys):
            raise ValidationError("Candidate keys must be unique within an item.")

    def check_item_text(self, text: str) -> None:
        """Raise ValidationError when an item's text does not suit this type (nothing to check by default)."""
        return

    def display_order(self, keys: list[str], rng: random.Random) -> list[str]:
        order = list(keys)
        if self.shuffle_candidates:
            rng.shuffle(order)
        return order

    # -- values -------------------------------------------------------------
    def options(self, config: dict[str, Any]) -> list[Option]:
        """Fixed answer buttons (empty for task types whose form is bespoke)."""
        return []

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        """The keyboard shortcuts the instructions page lists: one per answer button by default."""
        return [
            Shortcut(
                (o.shortcut, o.alt_shortcut.upper()) if o.alt_shortcut else (o.shortcut,),
                gettext("Choose “%(label)s”") % {"label": platform_text(o.label)},
            )
            for o in self.options(config)
        ]

    def form_context(self, *, item: Any, config: dict[str, Any], posted: Any) -> dict[str, Any]:
        """What this type's form partial needs beyond the shared context (``item`` is the shown item)."""
        return {}

    @abstractmethod
    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        """Turn posted form data into a raw value (candidate keys, not positions)."""

    @abstractmethod
    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        """Return the cleaned value or raise ValidationError."""

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        """The value coded for statistics; None when the type has no numeric coding."""
        return None

    def scale(self, config: dict[str, Any], *, max_candidates: Callable[[], int]) -> list[tuple[float, str]]:
        """Every number ``to_number`` gives, ascending, with a readable name; empty without a numeric coding.

        ``max_candidates`` counts the most candidates any item of the study has (a query; call it only if needed).
        """
        return []

    def picks(self, value: Any) -> dict[str, str]:
        """Named candidate picks in a value, each analysed as its own nominal choice (best–worst: best, worst)."""
        return {}

    def coding_note(self, config: dict[str, Any]) -> str:
        """How ``to_number`` codes a value, for the export's readers ("" when the number speaks for itself)."""
        return ""

    def value_label(self, value: Any) -> Any:
        """A value as one readable cell: a rating, a label, a candidate key, votes or text."""
        if not isinstance(value, dict):
            return value
        for key in ("rating", "label", "choice", "replacement", "text"):
            if key in value:
                return value[key]
        votes = value.get("votes")
        if isinstance(votes, dict):
            return ", ".join(f"{k}×{n}" for k, n in sorted(votes.items()))
        return value

    def chosen_keys(self, value: Any) -> list[str]:
        """Candidate keys a value picks (none for a tie or a type without candidates)."""
        if not isinstance(value, dict):
            return []
        if "choice" in value:
            return [] if value["choice"] == TIE else [str(value["choice"])]
        if isinstance(value.get("votes"), dict):
            return sorted(str(k) for k in value["votes"])
        return []

    def matches_gold(self, value: Any, gold: Any, *, config: dict[str, Any]) -> bool:
        return value == gold


def require_dict(value: Any, *keys: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError("The answer must be an object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValidationError(f"The answer is missing {', '.join(missing)}.")
    return value


def check_storable(text: str) -> None:
    """Refuse written text the database cannot store: PostgreSQL keeps no NUL character (0x00) in
    text or jsonb, and no unpaired UTF-16 surrogate (which only a JSON escape such as \\ud800 makes)."""
    if has_nul(text):
        raise ValidationError(gettext("Your answer contains a NUL character (0x00); please remove it."))
    if has_surrogate(text):
        raise ValidationError(gettext("Your answer contains an unpaired surrogate character; please remove it."))


def posted_position(data: Any, field: str, shown_order: list[str]) -> str:
    """Map a posted display position ("0", "1", ...) back to a candidate key."""
    raw = data.get(field, "")
    try:
        index = int(raw)
    except (TypeError, ValueError):
        raise ValidationError(gettext("Please choose one of the options.")) from None
    if not 0 <= index < len(shown_order):
        raise ValidationError(gettext("Please choose one of the options."))
    return shown_order[index]
