"""The study builder: a study's settings in sections, each task type's settings as fields, and a preview.

A section is a form class registered here (``register_builder_section``) with
its title, its place on the page and the template fragment that draws it; the
builder page (``views/builder.py``) shows every registered section, checks
them together and writes what they give through ``study_create`` /
``study_update``. Another app adds a section by registering one (docs/study-builder.md).

The rules stay in their homes: each setting's check is its declaration in
``study_settings.py`` (the fields come from ``forms.setting_form_field``); a
task type's settings are its ``config_fields`` and its ``check_config``; the
config's unknown keys and language are ``study_files.config_problems``.
The crowd outcomes' fields are read from the outcome registry (``outcomes.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from .forms import setting_form_field
from .json_limits import DataTooComplex, load_json
from .models import Study
from .outcomes import SESSION_OUTCOMES
from .study_files import config_problems
from .study_settings import KEPT_WHEN_LEFT_OUT, SETTINGS_BY_NAME, STUDY_SETTINGS
from .task_types import TASK_TYPES, ConfigField, TaskType, get_task_type

#: Settings every task type's config takes besides its own (study_files.COMMON_CONFIG_KEYS), as fields.
COMMON_CONFIG_FIELDS = (
    ConfigField("question", "text", "Question", "The heading above each item; empty keeps the task type's own."),
    ConfigField(
        "language",
        "text",
        "Items' language",
        "A language tag such as en, zh or ja: the rater's pages use it (and its translation where there is one).",
    ),
)
#: Posted by the builder page with the task type whose fields it drew: without it, config fields are not read.
FIELDS_SHOWN = "config_fields_for"


def config_field_name(key: str) -> str:
    return f"config_{key}"


# -- a task type's settings as form fields ---------------------------------------------------------


class ConfigFormField(forms.Field):
    """A form field for one ConfigField: it turns typed text into the config's value and back."""

    def __init__(self, spec: ConfigField, **kwargs: Any) -> None:
        self.spec = spec
        widget: forms.Widget
        if spec.kind in ("lines", "options"):
            widget = forms.Textarea(attrs={"rows": max(spec.count or 4, 2), "spellcheck": "false"})
        elif spec.kind == "whole_number":
            widget = forms.NumberInput(attrs={"step": 1})
        elif spec.kind == "boolean":
            widget = forms.CheckboxInput()
        else:
            widget = forms.TextInput()
        # Never required by the field itself: the task section asks for it only when it drew it (FIELDS_SHOWN).
        super().__init__(label=spec.label, help_text=spec.help_text, required=False, widget=widget, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        """The config's value as the widget shows it."""
        kind = self.spec.kind
        if kind == "lines" and isinstance(value, list):
            return "\n".join(str(v) for v in value)
        if kind == "numbers" and isinstance(value, list):
            return ", ".join(str(v) for v in value)
        if kind == "options" and isinstance(value, list):
            return "\n".join(f"{o.get('value', '')}: {o.get('label', '')}" for o in value if isinstance(o, dict))
        return value

    def to_python(self, value: Any) -> Any:
        kind = self.spec.kind
        if kind == "boolean":
            return forms.BooleanField().to_python(value)
        if kind == "whole_number":
            return forms.IntegerField(error_messages={"invalid": "Must be a whole number."}).to_python(value)
        text = str(value or "")
        if not text.strip():
            return None
        if kind == "text":
            return text.strip()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if kind == "numbers":
            numbers = []
            for part in (p.strip() for p in text.replace("\n", ",").split(",")):
                if not part:
                    continue
                try:
                    numbers.append(int(part))
                except ValueError:
                    raise ValidationError(f"“{part}” is not a whole number; separate the points by commas.") from None
            return numbers
        if self.spec.count is not None and len(lines) != self.spec.count:
            raise ValidationError(f"Write exactly {self.spec.count} lines (this has {len(lines)}).")
        if kind == "options":
            options = []
            for number, line in enumerate(lines, start=1):
                value_part, colon, label = line.partition(":")
                if not colon or not value_part.strip() or not label.strip():
                    raise ValidationError(f"Line {number} must read “value: label”, e.g. “funny: Funny”.")
                options.append({"value": value_part.strip(), "label": label.strip()})
            return options
        return lines


# -- sections -------------------------------------------------------------------------------------


class SectionForm(forms.Form):
    """A section of the builder: fields, and what they change.

    ``changes()`` gives keyword arguments for ``study_create`` / ``study_update``;
    ``config_changes()`` gives keys of the task's config (None removes a key).
    ``save(study=, actor=)`` runs after the study is written, in the same
    transaction, for a section that writes more than the study's own fields.
    """

    def __init__(self, data: Any = None, *, study: Study, task_type: TaskType | None, config: dict[str, Any]):
        self.study, self.task_type, self.start_config = study, task_type, config
        super().__init__(data)

    def changes(self) -> dict[str, Any]:
        return {}

    def config_changes(self) -> dict[str, Any]:
        return {}

    def save(self, *, study: Study, actor: Any) -> None:
        return None


class SettingsSectionForm(SectionForm):
    """A section of study settings (annotation/study_settings.py): ``setting_names`` picks them."""

    setting_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.setting_names:
            self.fields[name] = setting_form_field(SETTINGS_BY_NAME[name])
            self.initial.setdefault(name, getattr(self.study, name))
        if "completion_code" in self.fields:
            code = self.fields["completion_code"]
            code.required = False
            code.help_text = "Shown to crowdworkers at the end (use Prolific's code); empty keeps the current one."
        for name in KEPT_WHEN_LEFT_OUT:
            # Left out of a form posted before the setting existed: keep what the study has.
            if name in self.fields:
                self.fields[name].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name in KEPT_WHEN_LEFT_OUT:
            if name in self.fields and cleaned.get(name) in (None, ""):
                cleaned[name] = getattr(self.study, name)
        return cleaned

    def clean_completion_code(self) -> str:
        # Empty keeps the current code (a new study's is its random default).
        return self.cleaned_data["completion_code"].strip() or self.study.completion_code

    def changes(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.setting_names}


class TaskSection(SettingsSectionForm):
    """Name, task type, the task type's own settings as fields, the question, and other config keys as JSON."""

    setting_names = ("description", "protocol")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name_field = Study._meta.get_field("name")
        fields: dict[str, forms.Field] = {"name": forms.CharField(max_length=name_field.max_length, label="Name")}
        self.initial.setdefault("name", self.study.name)
        if not self.study.pk:
            fields["task_type"] = forms.ChoiceField(
                choices=[(name, f"{t.title} ({name})") for name, t in TASK_TYPES.items()],
                help_text="What raters do with each item. It cannot change later.",
            )
            if self.task_type is not None:
                self.initial.setdefault("task_type", self.task_type.name)
        fields.update(self.fields)
        for spec in self.config_specs():
            fields[config_field_name(spec.key)] = ConfigFormField(spec)
            self.initial.setdefault(config_field_name(spec.key), self.start_config.get(spec.key, ""))
        covered = {spec.key for spec in self.config_specs()} | {"language"}
        rest = {k: v for k, v in self.start_config.items() if k not in covered}
        fields["config"] = forms.CharField(
            widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"}),
            required=False,
            label="Other settings (JSON)",
            help_text="Settings without a field of their own, as a JSON object; the fields above win.",
        )
        self.initial.setdefault("config", json.dumps(rest, ensure_ascii=False) if rest else "")
        self.fields = fields

    def config_specs(self) -> tuple[ConfigField, ...]:
        if self.task_type is None:
            return ()
        return (*self.task_type.config_fields, COMMON_CONFIG_FIELDS[0])

    def clean_config(self) -> dict[str, Any]:
        raw = (self.cleaned_data.get("config") or "").strip()
        if not raw:
            return {}
        try:
            config = load_json(raw)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"This is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            ) from None
        except DataTooComplex as exc:
            raise ValidationError(str(exc)) from None
        if not isinstance(config, dict):
            raise ValidationError('The configuration must be a JSON object, e.g. {"points": [0, 1, 2, 3], ...}.')
        return config

    def fields_shown(self) -> bool:
        """Whether the posted form drew this task type's fields (a form without them leaves the config be)."""
        return self.task_type is not None and self.data.get(FIELDS_SHOWN) == self.task_type.name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.fields_shown():
            for spec in self.config_specs():
                name = config_field_name(spec.key)
                missing = spec.kind != "boolean" and spec.key != "question" and cleaned.get(name) is None
                if missing and name not in self.errors:
                    self.add_error(name, forms.Field.default_error_messages["required"])
        return cleaned

    def changes(self) -> dict[str, Any]:
        changes = {"name": self.cleaned_data["name"], **super().changes()}
        if "task_type" in self.fields:
            changes["task_type"] = self.cleaned_data["task_type"]
        return changes

    def config_changes(self) -> dict[str, Any]:
        found = dict(self.cleaned_data.get("config") or {})
        if self.fields_shown():
            for spec in self.config_specs():
                # An empty question (None) keeps the task type's own.
                found[spec.key] = self.cleaned_data.get(config_field_name(spec.key))
        return found


class TextsSection(SettingsSectionForm):
    setting_names = ("consent_text", "instructions_text")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        spec = COMMON_CONFIG_FIELDS[1]
        self.fields[config_field_name(spec.key)] = ConfigFormField(spec)
        self.initial.setdefault(config_field_name(spec.key), self.start_config.get(spec.key, ""))

    def config_changes(self) -> dict[str, Any]:
        name = config_field_name(COMMON_CONFIG_FIELDS[1].key)
        if name not in self.data:
            return {}
        return {COMMON_CONFIG_FIELDS[1].key: self.cleaned_data.get(name) or None}


def _settings_section(key: str, names: tuple[str, ...]) -> type[SettingsSectionForm]:
    return type(f"{key.title().replace('_', '')}Section", (SettingsSectionForm,), {"setting_names": names})


def outcome_setting_names() -> tuple[str, ...]:
    """The study fields of every crowd outcome (its code, message and redirect), in the registry's order."""
    names = []
    for outcome in SESSION_OUTCOMES.values():
        names += [n for n in (outcome.code_field, outcome.message_field, outcome.redirect_field) if n]
    return tuple(names)


@dataclass(frozen=True)
class BuilderSection:
    key: str
    title: str
    form_class: type[SectionForm]
    order: int
    intro: str = ""
    template: str = "researcher/builder/_section.html"


BUILDER_SECTIONS: dict[str, BuilderSection] = {}


def register_builder_section(section: BuilderSection) -> BuilderSection:
    if section.key in BUILDER_SECTIONS and BUILDER_SECTIONS[section.key] is not section:
        raise ValueError(f"Builder section {section.key!r} is registered twice.")
    BUILDER_SECTIONS[section.key] = section
    return section


def builder_sections() -> list[BuilderSection]:
    return sorted(BUILDER_SECTIONS.values(), key=lambda s: (s.order, s.key))


register_builder_section(
    BuilderSection(
        "task",
        "Task and scale",
        TaskSection,
        10,
        "What raters do with each item, and its scale.",
        template="researcher/builder/_task_section.html",
    )
)
register_builder_section(
    BuilderSection(
        "raters",
        "Raters and quotas",
        _settings_section("raters", ("quota_per_item", "per_rater_cap", "item_order", "recruitment", "min_answers")),
        30,
        "How many answers each item gets, and how much one rater does.",
    )
)
register_builder_section(
    BuilderSection(
        "quality",
        "Quality",
        _settings_section(
            "quality",
            (
                "attention_check_rate",
                "attention_check_policy",
                "attention_check_max_failures",
                "min_seconds_per_item",
                "qualification_mode",
            ),
        ),
        40,
        "Attention checks (items marked as checks in the item file), answers given too fast, and who is admitted "
        "(the qualification test itself is on the study's Qualification and questions page).",
    )
)
register_builder_section(
    BuilderSection(
        "allocation",
        "How judgments are spent",
        _settings_section(
            "allocation",
            (
                "allocation_policy",
                "allocation_k",
                "allocation_delta",
                "allocation_target_width",
                "allocation_min_worth",
                "allocation_passive_share",
                "allocation_budget",
            ),
        ),
        35,
        "Every item its quota (uniform), or adaptively: the top k, each mean to a target width, or the pairs that "
        "most sharpen a ranking (docs/adaptive.md).",
    )
)
register_builder_section(
    BuilderSection(
        "outcomes",
        "Crowd outcomes",
        _settings_section("outcomes", outcome_setting_names()),
        50,
        "What a crowdworker gets at the end of each way a session can end: a code, a message, a link back.",
    )
)


class OtherSettingsSection(SettingsSectionForm):
    """Study settings no other section shows (one added to study_settings.py before a section claims it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.setting_names = unclaimed_settings()
        super().__init__(*args, **kwargs)


def unclaimed_settings() -> tuple[str, ...]:
    claimed = {
        name
        for section in BUILDER_SECTIONS.values()
        if section.form_class is not OtherSettingsSection
        for name in getattr(section.form_class, "setting_names", ())
    }
    return tuple(name for name in STUDY_SETTINGS if name not in claimed)


register_builder_section(
    BuilderSection("other", "Other settings", OtherSettingsSection, 1000, "Settings without a section of their own.")
)
register_builder_section(
    BuilderSection(
        "texts", "Texts and languages", TextsSection, 60, "What raters read before they start, and in which language."
    )
)


# -- the builder: every section together ----------------------------------------------------------


@dataclass
class StudyBuilder:
    """Every registered section's form on one study (new or existing), checked together."""

    study: Study
    data: Any = None
    start_config: dict[str, Any] = field(default_factory=dict)
    task_type_name: str = ""
    forms: list[tuple[BuilderSection, SectionForm]] = field(init=False)
    #: The checked task config; None until ``is_valid`` found it sound.
    config: dict[str, Any] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.study.pk:
            self.task_type_name = self.study.task_type
            self.start_config = dict(self.study.config)
        elif self.data is not None:
            self.task_type_name = str(self.data.get("task_type", ""))
        kind = TASK_TYPES.get(self.task_type_name)
        self.forms = [
            (section, section.form_class(self.data, study=self.study, task_type=kind, config=self.start_config))
            for section in builder_sections()
        ]

    @property
    def task_type(self) -> TaskType | None:
        return TASK_TYPES.get(self.task_type_name)

    @property
    def task_kind(self) -> TaskType | None:
        """The task type, for templates: ``builder.task_type`` there is the task type field (``__getitem__``)."""
        return self.task_type

    @property
    def is_bound(self) -> bool:
        return self.data is not None

    def __getitem__(self, name: str) -> forms.BoundField:
        return self._form_of(name)[name]

    def _form_of(self, name: str) -> SectionForm:
        for _section, form in self.forms:
            if name in form.fields:
                return form
        return self.forms[0][1]

    def add_error(self, name: str | None, error: Any) -> None:
        form = self._form_of(name) if name else self.forms[0][1]
        form.add_error(name if name in form.fields else None, error)

    @property
    def errors(self) -> dict[str, list[str]]:
        merged: dict[str, list[str]] = {}
        for _section, form in self.forms:
            for name, errors in form.errors.items():
                merged.setdefault(name, []).extend(errors)
        return merged

    def is_valid(self) -> bool:
        for _section, form in self.forms:
            form.is_valid()
        # The config is checked once its own fields read well, whatever else is wrong: the preview needs it.
        if not any(name == "config" or name.startswith("config_") for name in self.errors):
            self._check_config()
        return not self.errors

    def _config_field_posted(self, key: str) -> str | None:
        name = config_field_name(key)
        return name if self.data is not None and name in self.data else None

    def _check_config(self) -> None:
        kind = self.task_type
        if kind is None:
            return
        config = dict(self.start_config)
        for _section, form in self.forms:
            if not hasattr(form, "cleaned_data"):
                continue
            for key, value in form.config_changes().items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
        for problem in config_problems(kind, config):
            language = problem.startswith("language:")
            target = self._config_field_posted("language") if language else None
            self.add_error(target or "config", problem[0].upper() + problem[1:])
        try:
            checked = kind.config(config)
        except ValidationError as exc:
            first = next((s.key for s in kind.config_fields if self._config_field_posted(s.key)), None)
            for message in exc.messages:
                self.add_error(config_field_name(first) if first else "config", message)
        else:
            if not any(name == "config" or name.startswith("config_") for name in self.errors):
                self.config = checked

    def changes(self) -> dict[str, Any]:
        """The checked sections as keyword arguments for ``study_create`` (task type included) or ``study_update``."""
        found: dict[str, Any] = {}
        for _section, form in self.forms:
            found.update(form.changes())
        found["config"] = self.config
        return found

    def save_sections(self, *, study: Study, actor: Any) -> None:
        for _section, form in self.forms:
            form.save(study=study, actor=actor)

    def field_errors(self, names: Iterator[str] | list[str]) -> dict[str, list[str]]:
        errors = self.errors
        return {name: errors.get(name, []) for name in names}

    def field_names(self) -> list[str]:
        return [name for _section, form in self.forms for name in form.fields]


# -- starting points --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Starter:
    """A starting point of the builder that is not a published protocol: its task type and settings."""

    key: str
    title: str
    description: str
    task_type: str
    config: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


def starters() -> list[Starter]:
    """A caption-contest rating, and a blank study of each task type (its defaults)."""
    ordinal = get_task_type("ordinal")
    caption = Starter(
        "caption-contest",
        "Caption contest (three-point rating)",
        "Each caption rated unfunny, somewhat funny or funny, as in The New Yorker's caption contest.",
        ordinal.name,
        config={
            "points": [1, 2, 3],
            "labels": ["Unfunny", "Somewhat funny", "Funny"],
            "question": "How funny is this caption?",
        },
        settings={"quota_per_item": 5},
    )
    blanks = [
        Starter(f"blank-{name}", f"Blank: {kind.title}", "The task type's defaults.", name, dict(kind.default_config))
        for name, kind in TASK_TYPES.items()
    ]
    return [caption, *blanks]


def starter(key: str) -> Starter | None:
    return next((s for s in starters() if s.key == key), None)
