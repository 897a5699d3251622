"""Admin pages for staff: every model of the annotation app, searchable, nothing hidden."""

from django.contrib import admin

from .logins import ThrottledAdminAuthenticationForm
from .models import (
    Assignment,
    AuditEntry,
    Candidate,
    Enrollment,
    Invitation,
    Item,
    ItemImport,
    Judgment,
    Qualification,
    QualificationResult,
    QuestionAnswer,
    Rater,
    StepAnswer,
    Study,
)
from .study_changes import study_inputs_changed

# The admin's login counts failures and pauses like the site's (annotation.logins).
admin.site.login_form = ThrottledAdminAuthenticationForm


class CandidateInline(admin.TabularInline):
    model = Candidate
    extra = 0
    fields = ("key", "position", "text", "context", "provenance")


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "task_type", "state", "quota_per_item", "created_at")
    list_filter = ("state", "task_type", "item_order", "attention_check_policy")
    search_fields = ("name", "slug", "protocol", "owner__username")
    readonly_fields = ("entry_token", "seed", "created_at", "updated_at")
    raw_id_fields = ("owner", "qualification")
    list_select_related = ("owner",)


@admin.register(Qualification)
class QualificationAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "task_type", "min_correct", "created_at")
    search_fields = ("name", "owner__username")
    raw_id_fields = ("owner",)


@admin.register(QualificationResult)
class QualificationResultAdmin(admin.ModelAdmin):
    list_display = ("qualification", "rater", "correct", "total", "passed", "created_at")
    list_filter = ("passed",)
    search_fields = ("rater__external_id", "qualification__name")
    raw_id_fields = ("qualification", "rater", "study")


@admin.register(StepAnswer)
class StepAnswerAdmin(admin.ModelAdmin):
    list_display = ("enrollment", "step", "index", "correct", "created_at")
    list_filter = ("step", "correct")
    raw_id_fields = ("enrollment",)


@admin.register(QuestionAnswer)
class QuestionAnswerAdmin(admin.ModelAdmin):
    list_display = ("enrollment", "key", "value", "created_at")
    search_fields = ("key", "enrollment__rater__external_id")
    raw_id_fields = ("enrollment",)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("external_id", "study", "position", "is_attention_check", "short_text")
    list_filter = ("is_attention_check", "study")
    search_fields = ("external_id", "prompt", "text")
    raw_id_fields = ("study",)
    list_select_related = ("study",)
    inlines = [CandidateInline]

    def save_related(self, request, form, formsets, change) -> None:
        """Save the candidates; one deleted here is an edit no count of the study shows (study_changes)."""
        super().save_related(request, form, formsets, change)
        if any(formset.has_changed() for formset in formsets):
            study_inputs_changed([form.instance.study_id])

    @admin.display(description="text")
    def short_text(self, item: Item) -> str:
        return (item.text or item.prompt)[:80]


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ("__str__", "kind", "user", "external_id", "created_at")
    list_filter = ("kind",)
    search_fields = ("name", "external_id", "user__username")
    raw_id_fields = ("user",)


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ("rater", "study", "consented_at", "completed_at", "excluded", "ended_early")
    list_filter = ("excluded", "ended_early", "study")
    search_fields = ("rater__external_id", "rater__name", "excluded_reason")
    raw_id_fields = ("study", "rater")
    list_select_related = ("rater", "study")


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("study", "email", "rater", "created_at", "accepted_at")
    search_fields = ("email", "token")
    raw_id_fields = ("study", "rater")
    readonly_fields = ("token",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("rater", "item", "study", "trial", "sequence", "state", "lease_expires_at")
    list_filter = ("state", "study")
    raw_id_fields = ("study", "item", "rater")
    list_select_related = ("rater", "item__study", "study")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("rater", "item", "status", "value", "too_fast", "attention_passed", "created_at")
    list_filter = ("status", "too_fast", "attention_passed", "rater__kind", "study")
    search_fields = ("item__external_id", "rater__external_id", "rater__name")
    raw_id_fields = ("assignment", "study", "item", "rater")
    list_select_related = ("rater", "item__study")


@admin.register(ItemImport)
class ItemImportAdmin(admin.ModelAdmin):
    list_display = ("original_name", "study", "kind", "format", "status", "items_created", "created_by", "created_at")
    list_filter = ("status", "kind", "format")
    search_fields = ("original_name", "study__name")
    raw_id_fields = ("study", "created_by")
    readonly_fields = ("created_at", "started_at", "heartbeat_at", "finished_at", "claimed_by", "attempts")


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: the log is evidence, so staff can search it but not rewrite it."""

    list_display = ("created_at", "study_name", "actor", "action")
    list_filter = ("action",)
    search_fields = ("study_name", "actor__username")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
