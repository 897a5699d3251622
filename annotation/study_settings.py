"""The study settings, each declared once, and the one check every way in uses.

A researcher sets these on the study page (the study builder's sections, ``annotation.builder``),
through the API (``api.serializers.StudySettingsInput``), in a study file
(``study_files``) or from code (``services.studies.study_create`` /
``study_update``). All four build their fields or run their checks from
``SETTINGS`` below, so the same bad value gets the same message everywhere,
and ``study_file_schema`` turns the same declarations into a JSON Schema for
editors.

What the database column records (type, default, choices, length, null) is
read from the ``Study`` model rather than repeated here: changing those needs
a migration anyway. What the model cannot say — lower and upper bounds, why a
bound exists, whether a text may be empty, help for the researcher — is
declared here. Every setting is the study owner's to set; the other columns
of ``Study`` (slug, entry token, seed, state) are not settings.
"""

import math
from dataclasses import dataclass
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models
from django.utils.text import capfirst

from .json_limits import unstorable
from .models import Study

Kind = Literal["text", "whole_number", "number", "choice", "url"]

# PostgreSQL's integer column (Django's PositiveIntegerField): a bigger number fails on save.
WHOLE_NUMBER_MAX = 2**31 - 1

_URL = URLValidator(schemes=["http", "https"])


@dataclass(frozen=True)
class StudySetting:
    name: str
    kind: Kind
    help_text: str
    minimum: float | None = None
    below: float | None = None  # an upper bound the value must stay under (not reach)
    # One sentence for any value out of range, saying why the range is what it is.
    range_message: str = ""
    allow_blank: bool = True
    multiline: bool = False

    @property
    def model_field(self) -> models.Field:
        return Study._meta.get_field(self.name)

    @property
    def label(self) -> str:
        return capfirst(self.model_field.verbose_name)

    @property
    def nullable(self) -> bool:
        return self.model_field.null

    @property
    def default(self) -> Any:
        """The value a new study gets; None when it is generated per study (the completion code)."""
        default = self.model_field.default
        if default is models.NOT_PROVIDED:
            return None if self.nullable else ""
        return None if callable(default) else default

    @property
    def generated_default(self) -> bool:
        return callable(self.model_field.default)

    @property
    def choices(self) -> list[str]:
        return [value for value, _ in self.model_field.choices or []]

    @property
    def max_length(self) -> int | None:
        return self.model_field.max_length if self.kind in ("text", "url") else None

    @property
    def maximum(self) -> int | None:
        return WHOLE_NUMBER_MAX if self.kind == "whole_number" else None

    @property
    def choice_message(self) -> str:
        return f"Must be one of {', '.join(self.choices)}."

    @property
    def type_message(self) -> str:
        return {
            "text": "Must be text.",
            "url": "Must be text: a web address starting with http:// or https://.",
            "choice": self.choice_message,
            "whole_number": "Must be a whole number.",
            "number": "Must be a number.",
        }[self.kind]

    def _range_problem(self, value: float) -> str | None:
        too_low = self.minimum is not None and value < self.minimum
        too_high = self.below is not None and value >= self.below
        if too_low or too_high:
            if self.range_message:
                return self.range_message
            return f"Must be at least {self.minimum:g}." if too_low else f"Must be below {self.below:g}."
        if self.maximum is not None and value > self.maximum:
            return f"Must be at most {self.maximum}."
        return None

    def problems(self, value: Any) -> list[str]:
        """What is wrong with ``value`` for this setting, as sentences; empty when it is fine.

        ``value`` is already of the setting's Python type where a reader
        converts (a form's text to a number); text is judged as stored, i.e.
        without surrounding spaces.
        """
        if value is None:
            return [] if self.nullable else [self.type_message]
        if self.kind in ("whole_number", "number"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                return [self.type_message]
            if self.kind == "whole_number" and not isinstance(value, int):
                return [self.type_message]
            if not math.isfinite(value):
                return ["Must be a finite number."]
            problem = self._range_problem(value)
            return [problem] if problem else []
        if not isinstance(value, str):
            return [self.type_message]
        if self.kind == "choice":
            return [] if value in self.choices else [self.choice_message]
        if problem := unstorable(value):
            return [f"Holds {problem}"]
        text = value.strip()
        if not text:
            return [] if self.allow_blank else ["Must not be empty."]
        if self.max_length is not None and len(text) > self.max_length:
            return [f"Must be at most {self.max_length} characters (this has {len(text):,})."]
        if self.kind == "url":
            try:
                _URL(text)
            except ValidationError:
                return ["Must be a web address starting with http:// or https://."]
        return []

    def clean(self, value: Any) -> Any:
        """``value`` as stored: text without surrounding spaces, numbers as floats. Call after ``problems``."""
        if isinstance(value, str) and self.kind in ("text", "url"):
            return value.strip()
        if self.kind == "number" and value is not None:
            return float(value)
        return value


SETTINGS: tuple[StudySetting, ...] = (
    StudySetting(
        "description",
        "text",
        "What the study is about, for you and your colleagues; raters do not see it.",
        multiline=True,
    ),
    StudySetting("protocol", "text", "The study design it follows, if any (e.g. jest, semeval)."),
    StudySetting(
        "quota_per_item",
        "whole_number",
        "Judgments wanted per item.",
        minimum=1,
        range_message="Must be at least 1: each item needs at least one judgment.",
    ),
    StudySetting(
        "per_rater_cap",
        "whole_number",
        "At most this many items per rater; empty (null) for no limit.",
        minimum=0,
    ),
    StudySetting("item_order", "choice", "The order raters see the items in."),
    StudySetting(
        "attention_check_rate",
        "number",
        "Share of a rater's items that are attention checks, from 0 up to (not including) 1.",
        minimum=0,
        below=1,
        range_message="Must be a share from 0 up to (not including) 1, e.g. 0.1 for one item in ten.",
    ),
    StudySetting("attention_check_policy", "choice", "What happens to a rater who fails attention checks."),
    StudySetting(
        "attention_check_max_failures",
        "whole_number",
        "Failed attention checks allowed before the policy applies.",
        minimum=0,
    ),
    StudySetting(
        "min_seconds_per_item",
        "number",
        "Answers given faster than this many seconds are flagged as too fast.",
        minimum=0,
    ),
    StudySetting(
        "allocation_policy",
        "choice",
        "Which items the next judgments go to (docs/adaptive.md): uniform (every item to its quota), "
        "top_k or precision for ratings, active_pairs for pairwise studies.",
    ),
    StudySetting(
        "allocation_k",
        "whole_number",
        "top_k: how many of the funniest items to find.",
        minimum=1,
        range_message="Must be at least 1: the policy looks for the k funniest items.",
    ),
    StudySetting(
        "allocation_delta",
        "number",
        "Adaptive policies: the error allowed (δ), e.g. 0.05 for 95% confidence.",
        minimum=0.0001,
        below=1,
        range_message="Must be a share from 0.0001 up to (not including) 1, e.g. 0.05 for 95% confidence.",
    ),
    StudySetting(
        "allocation_target_width",
        "number",
        "precision: an item stops receiving raters once its mean's interval is narrower than this, "
        "in points of the scale.",
        minimum=0.01,
        range_message="Must be at least 0.01 points of the scale.",
    ),
    StudySetting(
        "allocation_min_worth",
        "number",
        "precision: an item also needs one more answer to be worth less than this before it stops: how much "
        "that answer would narrow the standard error of its mean, as a share of the scale's range (0.005 is "
        "0.01 points on a 0–2 scale). Higher stops sooner and spends less; lower spends more for smaller errors.",
        minimum=0.0001,
        below=1,
        range_message="Must be a share of the scale's range from 0.0001 up to (not including) 1, e.g. 0.005.",
    ),
    StudySetting(
        "allocation_passive_share",
        "number",
        "Adaptive policies: the share of judgments handed out uniformly, an unbiased sample beside the policy's.",
        minimum=0,
        below=1,
        range_message="Must be a share from 0 up to (not including) 1, e.g. 0.1 for one judgment in ten.",
    ),
    StudySetting(
        "allocation_budget",
        "whole_number",
        "Adaptive policies: at most this many judgments (places taken) in all; empty (null) for no limit "
        "but the quota per item.",
        minimum=1,
    ),
    StudySetting("consent_text", "text", "Shown to raters before they start; they must agree.", multiline=True),
    StudySetting("instructions_text", "text", "Shown to raters after consent and above each item.", multiline=True),
    StudySetting(
        "recruitment",
        "choice",
        "Where participants come from: on Prolific the entry link's id must look like a Prolific id.",
    ),
    StudySetting(
        "min_answers",
        "whole_number",
        "Answers to regular items a participant must give before they get the completion code.",
        minimum=0,
    ),
    StudySetting(
        "completion_code",
        "text",
        "Shown to crowdworkers at the end (use Prolific's code); a new study gets a random one.",
        allow_blank=False,
    ),
    StudySetting(
        "completion_redirect_url",
        "url",
        "Where crowdworkers are sent at the end (Prolific's completion link); empty for none.",
    ),
    StudySetting("completion_message", "text", "Shown with the completion code.", multiline=True),
    StudySetting("no_work_code", "text", "Code for a worker who found no items left; empty for none."),
    StudySetting("no_work_redirect_url", "url", "Where a worker who found no items left is sent; empty for none."),
    StudySetting("no_work_message", "text", "Shown to a worker who found no items left.", multiline=True),
    StudySetting(
        "failed_checks_code", "text", "Code for a worker whose session ended on attention checks; empty for none."
    ),
    StudySetting(
        "failed_checks_redirect_url",
        "url",
        "Where a worker whose session ended on attention checks is sent; empty for none.",
    ),
    StudySetting(
        "failed_checks_message", "text", "Shown to a worker whose session ended on attention checks.", multiline=True
    ),
    StudySetting("declined_code", "text", "Code for a worker who declined consent; empty for none."),
    StudySetting("declined_redirect_url", "url", "Where a worker who declined consent is sent; empty for none."),
    StudySetting("declined_message", "text", "Shown to a worker who declined consent.", multiline=True),
    StudySetting(
        "screened_out_code",
        "text",
        "Code for a worker who did not pass the qualification test (Prolific's screen-out code); empty for none.",
    ),
    StudySetting(
        "screened_out_redirect_url",
        "url",
        "Where a worker who did not pass the qualification test is sent; empty for none.",
    ),
    StudySetting(
        "screened_out_message",
        "text",
        "Shown to a worker who did not pass the qualification test.",
        multiline=True,
    ),
    StudySetting(
        "qualification_mode",
        "choice",
        "With a qualification: give its test in this study, or admit only those who passed it before.",
    ),
)
SETTINGS_BY_NAME = {setting.name: setting for setting in SETTINGS}
# The names in the order forms, the API and study files show them.
STUDY_SETTINGS = tuple(SETTINGS_BY_NAME)


def study_settings_problems(values: dict[str, Any]) -> dict[str, list[str]]:
    """What is wrong with each of the given settings (only those given), by setting name.

    Unknown names are the caller's to report: each reader words them for its
    own input (a file key, an API field, a keyword argument).
    """
    problems: dict[str, list[str]] = {}
    for name, value in values.items():
        setting = SETTINGS_BY_NAME.get(name)
        if setting is not None and (found := setting.problems(value)):
            problems[name] = found
    return problems


#: Settings added after the study form was first published: a form posted without them keeps the study's value.
KEPT_WHEN_LEFT_OUT = (
    "recruitment",
    "min_answers",
    "allocation_policy",
    "allocation_k",
    "allocation_delta",
    "allocation_target_width",
    "allocation_min_worth",
    "allocation_passive_share",
    "qualification_mode",
)
