"""API shapes for judges, runs and templates. ``api_key`` is accepted on input and never output."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.allocation import policy_choices
from annotation.api.json_input import FIELD_MAPPING

from ..models import GenerationRun, GeneratorConfig, JudgeConfig, JudgeRun, PromptTemplate
from ..services.generation import GENERATOR_SETTINGS
from ..services.judges import JUDGE_SETTINGS


# A judge's or generator's endpoint settings; the key is write-only. A comment, not a docstring: drf-spectacular
# would publish a docstring as the Judge and Generator schemas' description.
class EndpointSerializer(serializers.ModelSerializer):
    serializer_field_mapping = FIELD_MAPPING
    api_key = serializers.CharField(write_only=True, required=False, allow_blank=True, trim_whitespace=True)
    has_api_key = serializers.BooleanField(read_only=True)
    key_source = serializers.CharField(read_only=True)
    setting_names: tuple[str, ...] = ()

    def settings(self) -> dict:
        """The validated settings in the shape the services take (no name, no key)."""
        return {k: v for k, v in self.validated_data.items() if k in self.setting_names}


class JudgeSerializer(EndpointSerializer):
    setting_names = JUDGE_SETTINGS
    rater = serializers.IntegerField(source="rater_id", read_only=True)
    is_current = serializers.BooleanField(
        read_only=True, help_text="False for an older version, kept as it was when a newer one took its place."
    )
    # Not a model field: the judge's pins. In: a name per task type (its newest version) or {name, version};
    # out: {name, version} per pinned task type, so a GET sent back as a PATCH keeps every pin as it is.
    templates = serializers.JSONField(
        required=False,
        help_text="Prompt template per task type, over the built-in defaults: a template name (pins its newest "
        "version among your templates, then the built-ins) or {name, version}. Read back as {name, version}.",
    )

    class Meta:
        model = JudgeConfig
        fields = [
            "id",
            "rater",
            "name",
            "baseline",
            *JUDGE_SETTINGS,
            "api_key",
            "has_api_key",
            "key_source",
            "version",
            "previous_version",
            "is_current",
            "created_at",
        ]
        read_only_fields = ["id", "rater", "version", "previous_version", "is_current", "created_at"]
        # Validation is the services' job; the model's own constraints are checked there.
        validators: list = []


# Ids are 64-bit in the database; a bigger number would fail in the query instead of answering 400.
MAX_ID = 2**63 - 1


class RunFilterSerializer(serializers.Serializer):
    study = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)


class RunCreateSerializer(serializers.Serializer):
    study = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    judge = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    trials = serializers.IntegerField(min_value=1, max_value=20, required=False)
    both_orders = serializers.BooleanField(required=False)
    allocation_policy = serializers.CharField(
        required=False,
        max_length=20,
        help_text="uniform (default): every item every trial; an adaptive policy (top_k, precision, ...) asks "
        "further trials of the items it still needs, up to trials (docs/adaptive.md).",
    )

    def validate_allocation_policy(self, value: str) -> str:
        if value not in dict(policy_choices()):
            raise serializers.ValidationError(f"Must be one of {', '.join(dict(policy_choices()))}.")
        return value


class RunSerializer(serializers.ModelSerializer):
    judge_name = serializers.CharField(source="judge.name", read_only=True)
    judge_version = serializers.IntegerField(source="judge.version", read_only=True)
    template = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRun
        fields = [
            "id",
            "study",
            "judge",
            "judge_name",
            "judge_version",
            "retry_of",
            "template",
            "trials",
            "both_orders",
            "allocation_policy",
            "status",
            "preparing",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "progress",
        ]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_template(self, run: JudgeRun):
        return {"name": run.template.name, "version": run.template.version} if run.template else None

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_progress(self, run: JudgeRun):
        from ..selectors import run_progress

        return run_progress(run=run).as_dict() if self.context.get("with_progress") else None


class TemplateSerializer(serializers.ModelSerializer):
    serializer_field_mapping = FIELD_MAPPING
    # Lists mix your own versions with the shared ones; this tells them apart (shared ones are read-only).
    shared = serializers.BooleanField(
        read_only=True, help_text="A built-in: read-only, saving its name makes your copy."
    )

    class Meta:
        model = PromptTemplate
        fields = [
            "id",
            "name",
            "version",
            "task_type",
            "description",
            "system_text",
            "user_text",
            "response_schema",
            "builtin",
            "shared",
            "created_at",
        ]
        read_only_fields = ["id", "version", "builtin", "shared", "created_at"]
        validators: list = []


class GeneratorSerializer(EndpointSerializer):
    setting_names = GENERATOR_SETTINGS

    class Meta:
        model = GeneratorConfig
        fields = ["id", "name", *GENERATOR_SETTINGS, "api_key", "has_api_key", "key_source", "created_at"]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {"user_text": {"required": False}}
        # Validation is the services' job; the model's own constraints are checked there.
        validators: list = []


class GenerationRunCreateSerializer(serializers.Serializer):
    study = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    generators = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), min_length=1, max_length=100
    )


class GenerationRunSerializer(serializers.ModelSerializer):
    generators = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = GenerationRun
        fields = ["id", "study", "generators", "status", "error", "created_at", "finished_at", "progress"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_generators(self, run: GenerationRun):
        return [{"id": g.pk, "name": g.name} for g in run.generators.all()]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_progress(self, run: GenerationRun):
        from ..generation_selectors import generation_progress

        return generation_progress(run=run).as_dict() if self.context.get("with_progress") else None
