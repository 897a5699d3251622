"""Small input and output serializers, one pair per API operation.

Inputs only check shapes; the study services and the task types do the
real validation, and their messages come back to the client unchanged.
"""

from django.urls import reverse
from rest_framework import serializers

from ..importers.cells import CellProblem, json_ready
from ..models import Candidate, Item, ItemImport, Judgment, Rater, Study
from ..services.studies import STUDY_SETTINGS
from ..task_types import TASK_TYPES
from .json_input import BoundedJSONField

IMPORT_STATUS_HELP = "One of: " + ", ".join(ItemImport.Status.values) + "."


class StudySettingsInput(serializers.Serializer):
    """Every setting is optional: what is left out keeps its default (or its current value)."""

    name = serializers.CharField(max_length=200, required=False)
    config = BoundedJSONField(nul=False, required=False, help_text="The task type's settings; see docs/study-files.md.")
    description = serializers.CharField(required=False, allow_blank=True)
    protocol = serializers.CharField(max_length=40, required=False, allow_blank=True)
    quota_per_item = serializers.IntegerField(min_value=1, required=False)
    per_rater_cap = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    item_order = serializers.ChoiceField(choices=Study.ItemOrder.choices, required=False)
    attention_check_rate = serializers.FloatField(
        min_value=0, required=False, help_text="Share of a rater's items that are attention checks, below 1."
    )
    attention_check_policy = serializers.ChoiceField(choices=Study.AttentionPolicy.choices, required=False)
    attention_check_max_failures = serializers.IntegerField(min_value=0, required=False)
    min_seconds_per_item = serializers.FloatField(min_value=0, required=False)
    consent_text = serializers.CharField(required=False, allow_blank=True)
    instructions_text = serializers.CharField(required=False, allow_blank=True)
    completion_code = serializers.CharField(max_length=64, required=False)
    completion_redirect_url = serializers.URLField(required=False, allow_blank=True)
    completion_message = serializers.CharField(required=False, allow_blank=True)
    recruitment = serializers.ChoiceField(choices=Study.Recruitment.choices, required=False)
    min_answers = serializers.IntegerField(min_value=0, required=False)
    no_work_code = serializers.CharField(max_length=64, required=False, allow_blank=True)
    no_work_redirect_url = serializers.URLField(required=False, allow_blank=True)
    no_work_message = serializers.CharField(required=False, allow_blank=True)
    failed_checks_code = serializers.CharField(max_length=64, required=False, allow_blank=True)
    failed_checks_redirect_url = serializers.URLField(required=False, allow_blank=True)
    failed_checks_message = serializers.CharField(required=False, allow_blank=True)
    declined_code = serializers.CharField(max_length=64, required=False, allow_blank=True)
    declined_redirect_url = serializers.URLField(required=False, allow_blank=True)
    declined_message = serializers.CharField(required=False, allow_blank=True)

    def validate_attention_check_rate(self, value: float) -> float:
        if value >= 1:
            raise serializers.ValidationError("Must be below 1 (it is a share of the rater's items).")
        return value

    def validate_config(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("The configuration must be a JSON object.")
        try:
            # PostgreSQL's jsonb refuses a NUL character (\u0000): a 400 here, not a DataError on save.
            json_ready(value, field="The configuration")
        except CellProblem as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class StudyCreateInput(StudySettingsInput):
    name = serializers.CharField(max_length=200)
    task_type = serializers.ChoiceField(choices=sorted(TASK_TYPES))


class StudyOutput(serializers.ModelSerializer):
    entry_url = serializers.SerializerMethodField(help_text="The crowd entry link, before Prolific's query string.")

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


class ErrorsOutput(serializers.Serializer):
    errors = serializers.ListField(child=serializers.CharField())
