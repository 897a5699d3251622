"""Forms for the judge pages. The API key field is write-only: it is never rendered back."""

from typing import Any

from django import forms

from annotation.access import owned_by
from annotation.allocation import UNIFORM, policy_choices
from annotation.task_types import TASK_TYPES

from .keys import key_env_help
from .models import GeneratorConfig, JudgeConfig, PromptTemplate, Tournament
from .services.generation import DEFAULT_GENERATOR_PROMPT, GENERATOR_SETTINGS
from .services.templates import template_choices
from .task_types import default_template_name

JUDGE_FIELDS = [
    "name",
    "baseline",
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "structured_output",
    "sees_images",
    "timeout_seconds",
    "max_retries",
    "backoff_seconds",
    "concurrency",
    "rate_limit_per_minute",
    "trials",
    "both_orders",
    "input_cost_per_million",
    "output_cost_per_million",
]


# Labels of the endpoint settings a judge and a generator share.
ENDPOINT_LABELS = {
    "base_url": "Base URL",
    "api_key_env": "API key environment variable",
    "max_tokens": "Max tokens",
    "timeout_seconds": "Timeout (seconds)",
    "sees_images": "The model sees images",
    "backoff_seconds": "First retry wait (seconds)",
    "rate_limit_per_minute": "Rate limit (requests per minute)",
}


class EndpointForm(forms.ModelForm):
    """A judge's or a generator's settings with a write-only API key field: the key is never rendered back."""

    api_key = forms.CharField(
        required=False,
        label="API key",
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted and never shown again. Leave empty to keep the stored key.",
    )
    remove_api_key = forms.BooleanField(required=False, label="Remove the stored API key")

    #: The form's fields in groups, as the page shows them: (heading, field names). Fields in no group come last.
    groups: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("Endpoint", ("name", "baseline", "base_url", "model")),
        ("API key", ("api_key", "api_key_env", "remove_api_key")),
        ("Sampling", ("temperature", "max_tokens", "structured_output", "system_text", "user_text")),
        ("Calls", ("timeout_seconds", "max_retries", "backoff_seconds", "concurrency", "rate_limit_per_minute")),
        ("Judging", ("trials", "both_orders")),
        ("Prices", ("input_cost_per_million", "output_cost_per_million")),
    )

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # Say up front which variables may be named (judging.keys refuses the others).
        self.fields["api_key_env"].help_text = key_env_help()
        if not self.instance.api_key_encrypted:
            # Nothing stored, nothing to remove.
            del self.fields["remove_api_key"]

    def field_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The bound fields in their groups (empty groups left out); the rest under "More"."""
        placed: set[str] = set()
        groups = []
        for heading, names in self.groups:
            fields = [self[name] for name in names if name in self.fields]
            placed.update(names)
            if fields:
                groups.append((heading, fields))
        rest = [self[name] for name in self.fields if name not in placed]
        if rest:
            groups.append(("Prompt templates", rest))
        return groups

    def api_key_change(self) -> str | None:
        """None keeps the stored key, "" removes it, anything else replaces it."""
        if self.cleaned_data.get("remove_api_key"):
            return ""
        return self.cleaned_data.get("api_key") or None

    def _post_clean(self) -> None:
        # Validation happens in the services (judge_create, generator_update, ...), not on the bare instance.
        return


class JudgeForm(EndpointForm):
    class Meta:
        model = JudgeConfig
        fields = JUDGE_FIELDS
        labels = {
            **ENDPOINT_LABELS,
            "both_orders": "Judge pairwise items in both orders",
            "input_cost_per_million": "Price per million prompt tokens",
            "output_cost_per_million": "Price per million completion tokens",
        }

    def __init__(self, *args: Any, owner=None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # Choices: the newest version of the owner's own templates and of the shared ones, plus the version
        # the judge is pinned to (which may be older). Another researcher's templates are never offered.
        own, shared = template_choices(user=owner)
        pins = self.instance.template_pins.select_related("template") if self.instance.pk else []
        pinned = {pin.task_type: pin.template for pin in pins}
        self._offered: dict[str, dict[str, PromptTemplate]] = {}
        for task_type in TASK_TYPES:
            offered = {str(t.pk): t for t in [*own, *shared, pinned.get(task_type)] if t and t.task_type == task_type}
            self._offered[task_type] = offered
            current = pinned.get(task_type)
            choices = [
                (
                    "",
                    f"(default: {default_template_name(task_type) or 'none'}, built in; a protocol study asks its own)",
                )
            ]
            choices += [(pk, _template_label(t, pinned=t == current)) for pk, t in offered.items()]
            self.fields[f"template_{task_type}"] = forms.ChoiceField(
                choices=choices,
                required=False,
                initial=str(current.pk) if current else "",
                label=f"Prompt template for {TASK_TYPES[task_type].title.lower()} items",
            )
        if self.instance.pk:
            self.fields["baseline"].disabled = True

    def settings(self) -> dict[str, Any]:
        """The cleaned settings in the shape the services take (no key, no name, no baseline)."""
        data = {k: v for k, v in self.cleaned_data.items() if k in JUDGE_FIELDS and k not in ("name", "baseline")}
        data["templates"] = {
            task_type: self._offered[task_type][self.cleaned_data[f"template_{task_type}"]]
            for task_type in TASK_TYPES
            if self.cleaned_data.get(f"template_{task_type}")
        }
        return data


def _template_label(template: PromptTemplate, *, pinned: bool) -> str:
    whose = "built in" if template.builtin else ("shared" if template.shared else "yours")
    return f"{template.name} v{template.version} ({whose}{', pinned' if pinned else ''})"


class RunForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none())
    trials = forms.IntegerField(min_value=1, max_value=20, required=False, help_text="Default: the judge's own.")
    both_orders = forms.BooleanField(required=False, help_text="Pairwise studies: judge A/B and B/A.")
    allocation_policy = forms.ChoiceField(
        choices=policy_choices,
        initial=UNIFORM,
        required=False,
        label="Trials per item",
        help_text="Uniform: every item every trial. An adaptive policy (docs/adaptive.md) asks further trials "
        "only of the items it still needs, up to the number of trials.",
    )

    def __init__(self, *args: Any, owner=None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["judge"].queryset = owned_by(JudgeConfig, user=owner).current()


class TemplateForm(forms.Form):
    name = forms.SlugField(max_length=80)
    task_type = forms.ChoiceField(choices=[(k, t.title) for k, t in TASK_TYPES.items()])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    system_text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), label="System message")
    user_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 14}), label="User message")


class TournamentForm(forms.Form):
    name = forms.CharField(max_length=200)
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none())
    schedule = forms.ChoiceField(choices=Tournament.Schedule.choices)
    budget = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="Most judge calls (a both-orders judge spends two per match); empty for every match.",
    )

    def __init__(self, *args: Any, owner=None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["judge"].queryset = owned_by(JudgeConfig, user=owner).current()


class GeneratorForm(EndpointForm):
    class Meta:
        model = GeneratorConfig
        fields = ["name", *GENERATOR_SETTINGS]
        labels = {
            **ENDPOINT_LABELS,
            "max_retries": "Retries",
            "system_text": "System message",
            "user_text": "Prompt",
        }
        widgets = {
            "system_text": forms.Textarea(attrs={"rows": 3}),
            "user_text": forms.Textarea(attrs={"rows": 6}),
        }

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if not self.instance.pk:
            # A generator's defaults, not the judge's (the model field's default is a judge's 0.1).
            self.initial.update(temperature=0.7, user_text=DEFAULT_GENERATOR_PROMPT)
        self.fields["user_text"].required = False
        self.fields["base_url"].required = True
        self.fields["model"].required = True

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if k in GENERATOR_SETTINGS}


class GenerationForm(forms.Form):
    generators = forms.ModelMultipleChoiceField(
        queryset=GeneratorConfig.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Each generator writes one candidate per prompt, keyed by its name.",
    )

    def __init__(self, *args: Any, owner=None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["generators"].queryset = owned_by(GeneratorConfig, user=owner)


class HumanCheckForm(forms.Form):
    pairs = forms.IntegerField(min_value=1, max_value=5000, initial=60, label="Pairs to sample")
    seed = forms.IntegerField(min_value=0, initial=0, label="Sampling seed")
