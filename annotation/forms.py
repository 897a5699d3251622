"""Forms of the researcher pages. They check input; the services do the writing."""

import json
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext_lazy as _

from .json_limits import DataTooComplex, load_json
from .models import Study
from .study_files import config_problems
from .study_settings import SETTINGS, STUDY_SETTINGS, StudySetting
from .task_types import TASK_TYPES, get_task_type

SETTINGS_FIELDS = ["name", *STUDY_SETTINGS]


def _clean_config(raw: str, task_type: str) -> dict[str, Any]:
    raw = (raw or "").strip()
    if not raw:
        return get_task_type(task_type).config({})
    try:
        config = load_json(raw)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(
            f"This is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except DataTooComplex as exc:
        raise forms.ValidationError(str(exc)) from None
    if not isinstance(config, dict):
        raise forms.ValidationError('The configuration must be a JSON object, e.g. {"points": [0, 1, 2, 3], ...}.')
    kind = get_task_type(task_type)
    unknown = config_problems(kind, config)
    if unknown:
        raise forms.ValidationError([m[0].upper() + m[1:] for m in unknown])
    return kind.config(config)


class _SettingField:
    """Mixin: the field checks its value with the setting's own check first.

    Django's bound validators stay (they give the browser its min/max/maxlength)
    but only run once the setting's check, at least as strict, has passed: so
    the page says what the API and a study file say.
    """

    def __init__(self, *, setting: StudySetting, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.setting = setting

    def run_validators(self, value: Any) -> None:
        if value not in self.empty_values:
            problems = self.setting.problems(value)
            if problems:
                raise forms.ValidationError(problems)
        super().run_validators(value)


class SettingIntegerField(_SettingField, forms.IntegerField):
    pass


class SettingFloatField(_SettingField, forms.FloatField):
    pass


class SettingChoiceField(_SettingField, forms.ChoiceField):
    pass


class SettingCharField(_SettingField, forms.CharField):
    pass


def setting_form_field(setting: StudySetting) -> forms.Field:
    """The form field of a study setting, from its declaration in annotation/study_settings.py."""
    common: dict[str, Any] = {
        "setting": setting,
        "label": setting.label,
        "help_text": setting.help_text,
        "required": not (setting.nullable or (setting.kind in ("text", "url") and setting.allow_blank)),
    }
    invalid = {"invalid": setting.type_message}
    if setting.kind == "whole_number":
        return SettingIntegerField(
            min_value=setting.minimum, max_value=setting.maximum, error_messages=invalid, **common
        )
    if setting.kind == "number":
        field = SettingFloatField(min_value=setting.minimum, error_messages=invalid, **common)
        if setting.below is not None:
            # The browser's max= includes the bound itself; the setting's check refuses it.
            field.widget.attrs["max"] = setting.below
        return field
    if setting.kind == "choice":
        return SettingChoiceField(
            choices=setting.model_field.choices,
            error_messages={"invalid_choice": setting.choice_message},
            **common,
        )
    if setting.multiline:
        widget: forms.Widget = forms.Textarea(attrs={"rows": 3 if setting.name == "description" else 5})
    else:
        widget = forms.URLInput() if setting.kind == "url" else forms.TextInput()
    # A plain text field for URLs too: Django's URLField would quietly add a scheme the API and files refuse.
    return SettingCharField(max_length=setting.max_length, widget=widget, **common)


# The settings' fields, declared on a plain form so the model forms below inherit them.
_SettingsFields = type("_SettingsFields", (forms.Form,), {s.name: setting_form_field(s) for s in SETTINGS})


class StudySettingsForm(_SettingsFields, forms.ModelForm):
    """The settings shared by every study (built from annotation/study_settings.py); the task configuration as JSON."""

    config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
        required=False,
        help_text="The task type's settings as a JSON object; leave empty for its defaults.",
    )

    field_order = [*SETTINGS_FIELDS, "config"]

    class Meta:
        model = Study
        # Only the name is the model's field; the settings come from their declarations.
        fields = ["name"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in STUDY_SETTINGS:
            # Meta.fields holds only the name, so the model form does not fill these in itself.
            self.initial.setdefault(name, getattr(self.instance, name))
        if self.instance.pk and not self.is_bound:
            self.initial["config"] = json.dumps(self.instance.config, indent=2, ensure_ascii=False)
        code = self.fields["completion_code"]
        code.required = False
        code.help_text = "Shown to crowdworkers at the end (use Prolific's code); empty keeps the current one."
        # Left out of a form posted before the setting existed: keep what the study has.
        self.fields["recruitment"].required = False
        self.fields["min_answers"].required = False

    def task_type_name(self) -> str:
        return self.instance.task_type

    def clean_config(self) -> dict[str, Any]:
        return _clean_config(self.cleaned_data.get("config", ""), self.task_type_name())

    def clean_recruitment(self) -> str:
        return self.cleaned_data.get("recruitment") or self.instance.recruitment

    def clean_min_answers(self) -> int:
        answers = self.cleaned_data.get("min_answers")
        return self.instance.min_answers if answers is None else answers

    def clean_completion_code(self) -> str:
        # Empty keeps the current code (a new study's is its random default).
        return self.cleaned_data["completion_code"].strip() or self.instance.completion_code

    def changes(self) -> dict[str, Any]:
        """The cleaned settings as keyword arguments for the study services."""
        return {name: self.cleaned_data[name] for name in [*SETTINGS_FIELDS, "config"]}


class StudyCreateForm(StudySettingsForm):
    task_type = forms.ChoiceField(
        choices=[(name, f"{t.title} ({name})") for name, t in TASK_TYPES.items()],
        help_text="What raters do with each item. It cannot change later.",
    )

    field_order = ["name", "task_type", "config"]

    def task_type_name(self) -> str:
        return self.cleaned_data.get("task_type") or ""

    def clean_config(self) -> dict[str, Any]:
        # The task type is cleaned before the config (field order), so a bad type only reports once.
        if not self.task_type_name():
            return {}
        return super().clean_config()


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="CSV (UTF-8), XLSX or JSON Lines; or a ZIP of one of them and its media.")
    replace = forms.BooleanField(required=False, label="Replace the study's items (only while it has no judgments)")


class InvitationForm(forms.Form):
    name = forms.CharField(
        required=False, max_length=200, help_text="Optional: whom the invitation is for; the expert sees it."
    )
    email = forms.EmailField(required=False, help_text="Optional: a note for you; nothing is sent.")


class ExpertSignupForm(UserCreationForm):
    """The invited expert's new account: their name, a username and a password that passes Django's validators."""

    name = forms.CharField(
        label=_("Your name"), max_length=150, help_text=_("Shown to the researcher who invited you.")
    )
    email = forms.EmailField(label=_("Email (optional)"), required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("name", "email", "username")

    def clean_username(self) -> str:
        # Whether the name is free is asked last, in _post_clean: a form with any other
        # problem must not say whether a username exists (a probe with a bad password
        # would list the accounts without ever creating one).
        return self.cleaned_data.get("username")

    def validate_unique(self) -> None:
        """Not the model's "A user with that username already exists.": ``_post_clean`` says it without naming why."""

    def _post_clean(self) -> None:
        # The password validators compare the password with the name too.
        self.instance.first_name = self.cleaned_data.get("name", "")
        super()._post_clean()
        username = self.cleaned_data.get("username")
        if not self.errors and username and username_unusable(username):
            self.add_error("username", USERNAME_UNUSABLE)


# One answer for a username that is taken, whichever way it was taken (before, or by a request a moment
# ago): it does not say that an account of that name exists.
USERNAME_UNUSABLE = _("This username cannot be used. Please choose another.")


def username_unusable(username: str) -> bool:
    """Whether a new account cannot take this username: one exists whose name differs at most in case."""
    return get_user_model().objects.filter(username__iexact=username).exists()
