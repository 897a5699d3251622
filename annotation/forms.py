"""Forms of the researcher pages. They check input; the services do the writing."""

import json
from typing import Any

from django import forms

from .json_limits import DataTooComplex, load_json
from .models import Study
from .services.studies import STUDY_SETTINGS
from .study_files import config_problems
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


class StudySettingsForm(forms.ModelForm):
    """The settings shared by every study; the task configuration as JSON."""

    config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
        required=False,
        help_text="The task type's settings as a JSON object; leave empty for its defaults.",
    )

    class Meta:
        model = Study
        fields = SETTINGS_FIELDS
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "consent_text": forms.Textarea(attrs={"rows": 5}),
            "instructions_text": forms.Textarea(attrs={"rows": 5}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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

    def clean_attention_check_rate(self) -> float:
        rate = self.cleaned_data["attention_check_rate"]
        if not 0 <= rate < 1:
            raise forms.ValidationError("Give a share from 0 up to (not including) 1, e.g. 0.1 for one item in ten.")
        return rate

    def clean_recruitment(self) -> str:
        return self.cleaned_data.get("recruitment") or self.instance.recruitment

    def clean_min_answers(self) -> int:
        answers = self.cleaned_data.get("min_answers")
        return self.instance.min_answers if answers is None else answers

    def clean_completion_code(self) -> str:
        # Empty keeps the current code (a new study's is its random default).
        return self.cleaned_data["completion_code"].strip() or self.instance.completion_code

    def clean_quota_per_item(self) -> int:
        quota = self.cleaned_data["quota_per_item"]
        if quota < 1:
            raise forms.ValidationError("Each item needs at least one judgment.")
        return quota

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
    file = forms.FileField(help_text="CSV (UTF-8), XLSX or JSON Lines; see the format guide.")
    replace = forms.BooleanField(required=False, label="Replace the study's items (only while it has no judgments)")


class InvitationForm(forms.Form):
    email = forms.EmailField(required=False, help_text="Optional: whom the invitation is for (not sent; a note).")
