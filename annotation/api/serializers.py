"""Small input and output serializers, one pair per API operation.

Inputs only check shapes; the study services and the task types do the
real validation, and their messages come back to the client unchanged.
"""

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from ..importers.cells import CellProblem, json_ready
from ..models import Candidate, Item, ItemImport, Judgment, Rater, Study
from ..study_settings import SETTINGS, STUDY_SETTINGS, StudySetting
from ..task_types import TASK_TYPES
from .json_input import BoundedJSONField

IMPORT_STATUS_HELP = "One of: " + ", ".join(ItemImport.Status.values) + "."


class _SettingField:
    """Mixin: the field checks its value with the setting's own check first.

    DRF's own bound validators stay on the field (the OpenAPI schema is read
    from them) but only run once the setting's check, at least as strict,
    has passed: so a client reads what the study page and a study file say.
    """

    def __init__(self, *, setting: StudySetting, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.setting = setting

    def run_validators(self, value: Any) -> None:
        problems = self.setting.problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        super().run_validators(value)


class SettingIntegerField(_SettingField, serializers.IntegerField):
    pass


class SettingFloatField(_SettingField, serializers.FloatField):
    pass


class SettingChoiceField(_SettingField, serializers.ChoiceField):
    pass


class SettingCharField(_SettingField, serializers.CharField):
    pass


class SettingURLField(_SettingField, serializers.URLField):
    """A web address, or null for none (stored as empty text). The schema says ``format: uri``, so "" is refused."""

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:
            return True, ""
        return super().validate_empty_values(data)


def api_url_help(setting: StudySetting) -> str:
    """A web-address setting's help as the API has it: null, not empty text, means none."""
    return setting.help_text.replace("empty for none", "null for none")


class NullableURLOutput(serializers.URLField):
    """A stored web address, or null where none is set (never "", which is no ``uri``)."""

    def to_representation(self, value: Any) -> str | None:
        return value or None


def setting_api_field(setting: StudySetting) -> serializers.Field:
    """The input field of a study setting, from its declaration in annotation/study_settings.py."""
    common: dict[str, Any] = {"setting": setting, "required": False, "help_text": setting.help_text}
    invalid = {"invalid": setting.type_message}
    if setting.kind == "whole_number":
        return SettingIntegerField(
            min_value=setting.minimum,
            max_value=setting.maximum,
            allow_null=setting.nullable,
            error_messages=invalid,
            **common,
        )
    if setting.kind == "number":
        return SettingFloatField(min_value=setting.minimum, error_messages=invalid, **common)
    if setting.kind == "choice":
        return SettingChoiceField(
            choices=setting.model_field.choices,
            error_messages={"invalid_choice": setting.choice_message},
            **common,
        )
    if setting.kind == "url":
        return SettingURLField(
            max_length=setting.max_length,
            allow_null=True,
            error_messages={**invalid, "blank": "Must be a web address, or null for none."},
            **{**common, "help_text": api_url_help(setting)},
        )
    return SettingCharField(
        max_length=setting.max_length,
        allow_blank=setting.allow_blank,
        error_messages={**invalid, "blank": "Must not be empty."},
        **common,
    )


class StudySettingsInput(serializers.Serializer):
    """Every setting is optional: what is left out keeps its default (or its current value)."""

    # The settings' own fields are built from annotation/study_settings.py, below the class.

    name = serializers.CharField(max_length=200, required=False)
    config = BoundedJSONField(nul=False, required=False, help_text="The task type's settings; see docs/study-files.md.")

    def validate_config(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("The configuration must be a JSON object.")
        try:
            # PostgreSQL's jsonb refuses a NUL character (\u0000): a 400 here, not a DataError on save.
            json_ready(value, field="The configuration")
        except CellProblem as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


for _setting in SETTINGS:
    # DRF collects declared fields when the class is made; these join them after ``config``, in
    # the declarations' order, and StudyCreateInput below inherits them like any declared field.
    StudySettingsInput._declared_fields[_setting.name] = setting_api_field(_setting)


class StudyCreateInput(StudySettingsInput):
    name = serializers.CharField(max_length=200)
    task_type = serializers.ChoiceField(choices=sorted(TASK_TYPES))


class StudyOutput(serializers.ModelSerializer):
    entry_url = serializers.SerializerMethodField(help_text="The crowd entry link, before Prolific's query string.")
    # The web-address settings' own fields are set below the class: null where none is set.

    class Meta:
        model = Study
        fields = (
            "id",
            "name",
            "slug",
            "task_type",
            "config",
            *STUDY_SETTINGS,
            "state",
            "entry_url",
            "created_at",
            "updated_at",
        )
        read_only_fields = fields

    def get_entry_url(self, study: Study) -> str:
        path = reverse("annotator:entry", args=[study.entry_token])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


for _setting in SETTINGS:
    if _setting.kind == "url":
        StudyOutput._declared_fields[_setting.name] = NullableURLOutput(
            read_only=True, allow_null=True, help_text=api_url_help(_setting)
        )


class CandidateOutput(serializers.ModelSerializer):
    class Meta:
        model = Candidate
        fields = ("key", "position", "text", "context", "provenance")
        read_only_fields = fields


class ItemOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    attention_check = serializers.BooleanField(source="is_attention_check")
    candidates = CandidateOutput(many=True)
    gold = serializers.JSONField(allow_null=True)

    class Meta:
        model = Item
        fields = ("id", "position", "prompt", "text", "metadata", "gold", "attention_check", "candidates")
        read_only_fields = fields


class ItemsJsonInput(serializers.Serializer):
    items = serializers.ListField(
        child=BoundedJSONField(nul=False),
        allow_empty=False,
        help_text="Items in the study-file shape: {id, prompt, text, metadata, gold, attention_check, candidates}.",
    )
    replace = serializers.BooleanField(default=False)


class ItemsFileInput(serializers.Serializer):
    file = serializers.FileField(help_text="A .csv (UTF-8), .xlsx or .jsonl file of items.")
    replace = serializers.BooleanField(default=False)


class ImportOutcomeOutput(serializers.Serializer):
    """What became of an import: done, failed (with every row's problem) or still queued/running."""

    # Plain text rather than an enum: the judgments' "status" already names an enum in the schema.
    status = serializers.CharField(help_text=IMPORT_STATUS_HELP)
    items_created = serializers.IntegerField()
    errors = serializers.ListField(child=serializers.CharField())
    import_id = serializers.IntegerField(allow_null=True, help_text="Set for file uploads.")
    status_url = serializers.CharField(allow_null=True, help_text="Poll this until the status is done or failed.")


class ItemImportOutput(serializers.ModelSerializer):
    status = serializers.CharField(help_text=IMPORT_STATUS_HELP)

    class Meta:
        model = ItemImport
        fields = (
            "id",
            "kind",
            "original_name",
            "format",
            "replace",
            "status",
            "items_created",
            "judgments_created",
            "errors",
            "attempts",
            "created_at",
            "started_at",
            "heartbeat_at",
            "finished_at",
        )
        read_only_fields = fields


class JudgmentFilterInput(serializers.Serializer):
    rater_kind = serializers.ChoiceField(choices=Rater.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Judgment.Status.choices, required=False)


class JudgmentOutput(serializers.ModelSerializer):
    item = serializers.CharField(source="item.external_id", help_text="The item's id from the item file.")
    rater_kind = serializers.CharField(source="rater.kind")
    rater_name = serializers.SerializerMethodField()
    value = serializers.JSONField(allow_null=True)

    class Meta:
        model = Judgment
        fields = (
            "id",
            "item",
            "rater",
            "rater_kind",
            "rater_name",
            "status",
            "value",
            "shown_order",
            "duration_ms",
            "too_fast",
            "attention_passed",
            "provenance",
            "created_at",
        )
        read_only_fields = fields

    def get_rater_name(self, judgment: Judgment) -> str:
        return str(judgment.rater)


class ItemProgressOutput(serializers.Serializer):
    item = serializers.CharField(source="external_id")
    done = serializers.IntegerField()
    quota = serializers.IntegerField()
    complete = serializers.BooleanField()


class RaterProgressOutput(serializers.Serializer):
    rater = serializers.IntegerField(source="rater_id")
    name = serializers.CharField()
    kind = serializers.CharField()
    judgments = serializers.IntegerField()
    attention_passed = serializers.IntegerField()
    attention_failed = serializers.IntegerField()
    too_fast = serializers.IntegerField()
    excluded = serializers.BooleanField()
    excluded_reason = serializers.CharField()
    ended_early = serializers.BooleanField()
    completed = serializers.BooleanField()
    started_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


# Rows of the progress answer per page: a million-item study is read a page at a time.
PROGRESS_PAGE = 500
PROGRESS_PAGE_MAX = 1000


class ProgressQueryInput(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=PROGRESS_PAGE_MAX, default=PROGRESS_PAGE)
    offset = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    raters_limit = serializers.IntegerField(min_value=1, max_value=PROGRESS_PAGE_MAX, default=PROGRESS_PAGE)
    raters_offset = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)


class ProgressOutput(serializers.Serializer):
    percent = serializers.FloatField()
    quota = serializers.IntegerField()
    items_total = serializers.IntegerField()
    items_complete = serializers.IntegerField()
    items_started = serializers.IntegerField()
    judgments_done = serializers.IntegerField()
    judgments_needed = serializers.IntegerField()
    judge_judgments = serializers.IntegerField()
    raters_total = serializers.IntegerField()
    raters_completed = serializers.IntegerField()
    raters_excluded = serializers.IntegerField()
    raters = RaterProgressOutput(many=True, help_text="One page of raters (raters_limit, raters_offset).")
    raters_next = serializers.CharField(allow_null=True, help_text="The next page of raters, if any.")
    items = ItemProgressOutput(many=True, help_text="One page of items, least judged first (limit, offset).")
    items_next = serializers.CharField(allow_null=True, help_text="The next page of items, if any.")


class RaterStepsInput(serializers.Serializer):
    """A study's qualification, practice and questionnaire: the study file's sections of those names."""

    qualification = serializers.JSONField(required=False, allow_null=True, help_text="name, min_correct, items")
    practice = serializers.JSONField(required=False, allow_null=True, help_text="items with gold and explanation")
    questionnaire = serializers.JSONField(required=False, allow_null=True, help_text="before and after questions")


class RaterStepsOutput(RaterStepsInput):
    allowlist_url = serializers.CharField(allow_null=True, help_text="The CSV of participant ids who passed.")
