"""What a study collects: studies, items, candidates, raters, assignments, judgments.

Every judgment, human or model, has the same shape (see ARCHITECTURE.md): who
(a Rater), what (an Item, and for items with candidates the order they were
shown in), the value (validated by the study's task type) and provenance.
Counts such as "judgments per item" are derived from these rows. One count is
stored, because handing out the next item must not count a whole study:
``Item.places_taken``, kept exactly under the item's row lock by
``services.places`` and recounted from the assignments by
``services.places.places_recount`` (the load audit checks they agree).
"""

import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from .jobs import JobStatus, LeasedJob


def _token() -> str:
    return secrets.token_urlsafe(16)


def _completion_code() -> str:
    return secrets.token_hex(4).upper()


def _pseudonym_key() -> str:
    return secrets.token_hex(32)


def _seed() -> int:
    return secrets.randbelow(2**31)


def allocation_policy_choices() -> list[tuple[str, str]]:
    """The registered allocation policies (``annotation.allocation``), read when choices are needed."""
    from .allocation import policy_choices

    return policy_choices()


class Study(models.Model):
    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    class ItemOrder(models.TextChoices):
        RANDOM_PER_RATER = "random_per_rater", "Random, different for each rater"
        SHARED_RANDOM = "shared_random", "Random, the same for every rater"
        AS_LISTED = "as_listed", "As listed"

    class AttentionPolicy(models.TextChoices):
        FLAG = "flag", "Flag the rater and exclude from aggregates"
        END = "end", "End the rater's session"

    class Recruitment(models.TextChoices):
        # On Prolific the entry link's PROLIFIC_PID must look like one of its ids (24 hex digits).
        PROLIFIC = "prolific", "Prolific"
        # Amazon Mechanical Turk's ExternalQuestion: workerId, assignmentId, hitId and turkSubmitTo in the link.
        MTURK = "mturk", "Amazon Mechanical Turk"
        OTHER = "other", "Another site or a direct link"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="studies")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    protocol = models.CharField(max_length=40, blank=True, help_text="Study template it follows, if any.")
    task_type = models.CharField(max_length=40)
    config = models.JSONField(default=dict, blank=True, help_text="Task-type settings: labels, scale, ...")
    quota_per_item = models.PositiveIntegerField(default=3)
    per_rater_cap = models.PositiveIntegerField(null=True, blank=True)
    item_order = models.CharField(max_length=20, choices=ItemOrder, default=ItemOrder.RANDOM_PER_RATER)
    attention_check_rate = models.FloatField(default=0.0, help_text="Share of a rater's items that are checks.")
    attention_check_policy = models.CharField(max_length=10, choices=AttentionPolicy, default=AttentionPolicy.FLAG)
    attention_check_max_failures = models.PositiveIntegerField(
        default=0, help_text="Failures allowed before the policy applies."
    )
    min_seconds_per_item = models.FloatField(default=0.0, help_text="Answers faster than this are flagged.")
    consent_text = models.TextField(blank=True)
    instructions_text = models.TextField(blank=True)
    completion_code = models.CharField(max_length=64, default=_completion_code)
    completion_redirect_url = models.URLField(blank=True)
    completion_message = models.TextField(
        blank=True, default="", db_default="", help_text="Shown with the completion code."
    )
    # One code per outcome, as Prolific allows: blank means no code for that outcome. The database
    # defaults let rows written by code older than these columns (migration tests, old workers) insert.
    no_work_code = models.CharField(
        max_length=64, blank=True, default="", db_default="", help_text="For a worker who found no items left."
    )
    no_work_redirect_url = models.URLField(blank=True, default="", db_default="")
    no_work_message = models.TextField(blank=True, default="", db_default="")
    failed_checks_code = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="For a worker whose session ended on attention checks.",
    )
    failed_checks_redirect_url = models.URLField(blank=True, default="", db_default="")
    failed_checks_message = models.TextField(blank=True, default="", db_default="")
    declined_code = models.CharField(
        max_length=64, blank=True, default="", db_default="", help_text="For a worker who declined consent."
    )
    declined_redirect_url = models.URLField(blank=True, default="", db_default="")
    declined_message = models.TextField(blank=True, default="", db_default="")
    screened_out_code = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="For a worker who did not pass the qualification test (Prolific's screen-out code).",
    )
    screened_out_redirect_url = models.URLField(blank=True, default="", db_default="")
    screened_out_message = models.TextField(blank=True, default="", db_default="")
    # What a rater goes through before and after the items (annotation.rater_steps): a qualification
    # test (its own model, shared by the owner's studies), practice items with feedback, questionnaires.
    qualification = models.ForeignKey(
        "Qualification", null=True, blank=True, on_delete=models.PROTECT, related_name="studies"
    )
    qualification_mode = models.CharField(
        max_length=12,
        choices=[("test", "Take the test here"), ("passed_only", "Admit only those who passed it before")],
        default="test",
        db_default="test",
    )
    practice = models.JSONField(default=list, db_default=[], blank=True, help_text="Practice items with feedback.")
    questionnaire = models.JSONField(
        default=dict, db_default={}, blank=True, help_text="Questions asked before and after the items."
    )
    recruitment = models.CharField(
        max_length=10, choices=Recruitment, default=Recruitment.OTHER, db_default=Recruitment.OTHER
    )
    min_answers = models.PositiveIntegerField(
        default=1,
        db_default=1,
        help_text="Answers to regular items a participant must give before the completion code.",
    )
    entry_token = models.CharField(max_length=40, unique=True, default=_token)
    # The Prolific study this one recruits through (judging.crowd.prolific); blank when none is linked.
    prolific_study_id = models.CharField(max_length=24, blank=True, default="", db_default="")
    # The key of this study's participant pseudonyms (annotation.privacy): never shown, never exported.
    # Rows written by code older than this column get "" and a key on first use (annotation.privacy).
    pseudonym_key = models.CharField(max_length=64, default=_pseudonym_key, db_default="", editable=False)
    seed = models.PositiveIntegerField(default=_seed)
    state = models.CharField(max_length=10, choices=State, default=State.DRAFT)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Adaptive allocation (annotation/allocation, docs/adaptive.md). The quota above stays each item's cap.
    allocation_policy = models.CharField(
        max_length=20, choices=allocation_policy_choices, default="uniform", db_default="uniform"
    )
    allocation_k = models.PositiveIntegerField("top k", default=10, db_default=10)
    allocation_delta = models.FloatField("allocation confidence δ", default=0.05, db_default=0.05)
    allocation_target_width = models.FloatField("target interval width", default=0.5, db_default=0.5)
    allocation_min_worth = models.FloatField("worth threshold", default=0.005, db_default=0.005)
    allocation_passive_share = models.FloatField("passive share", default=0.1, db_default=0.1)
    allocation_budget = models.PositiveIntegerField("allocation budget", null=True, blank=True)
    inputs_revision = models.PositiveBigIntegerField(
        default=0,
        db_default=0,
        editable=False,
        help_text="Counts edits of what reports read that their counts do not show (annotation.study_changes).",
    )

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(attention_check_rate__gte=0) & Q(attention_check_rate__lt=1),
                name="study_attention_rate_range",
            ),
            models.CheckConstraint(condition=Q(quota_per_item__gte=1), name="study_quota_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save the study; an existing study's ``inputs_revision`` is left as the database has it.

        The revision is only ever incremented in the database (``annotation.study_changes``); writing back
        the value this instance was read with would undo an edit's increment made meanwhile.
        """
        whole = not args and kwargs.get("update_fields") is None and not kwargs.get("force_insert")
        if whole and not self._state.adding:
            kwargs["update_fields"] = [
                f.name for f in self._meta.concrete_fields if not f.primary_key and f.name != "inputs_revision"
            ]
        super().save(*args, **kwargs)

    @property
    def is_open(self) -> bool:
        return self.state == self.State.OPEN


class Item(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0, help_text="Order in the imported list.")
    prompt = models.TextField(blank=True, help_text="Prompt, setup or headline shown above the text.")
    text = models.TextField(blank=True, help_text="The joke, response or headline being judged.")
    metadata = models.JSONField(default=dict, blank=True, help_text="Never shown to annotators.")
    gold = models.JSONField(null=True, blank=True, help_text="Known answer, in the task type's value shape.")
    is_attention_check = models.BooleanField(default=False)
    # How many people hold a place on this regular item: their assignments leased (expired or
    # not, until someone releases them) or done. Written only by services.places, under this
    # row's lock; 0 on attention checks, which are outside the quota.
    places_taken = models.PositiveIntegerField(default=0, db_default=0, editable=False)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "external_id"], name="item_unique_external_id"),
            models.CheckConstraint(
                condition=Q(is_attention_check=False) | Q(gold__isnull=False),
                name="item_attention_check_has_gold",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "is_attention_check", "position"]),
            # The regular items with room (places_taken < quota), for a rater whose walk is over.
            models.Index(
                fields=["study", "places_taken", "position"],
                condition=Q(is_attention_check=False),
                name="item_room_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}:{self.external_id}"


class Candidate(models.Model):
    """One of the texts an item offers for comparison or choice.

    ``key`` is the item-local identity stored in judgment values. It and
    ``provenance`` (generating model, explanation source, ...) never reach an
    annotator: forms post the displayed position instead.
    """

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="candidates")
    key = models.CharField(max_length=100)
    position = models.PositiveIntegerField(default=0)
    text = models.TextField()
    context = models.TextField(blank=True, help_text="Its own prompt, when options come from different prompts.")
    provenance = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "key"], name="candidate_unique_key")]

    def __str__(self) -> str:
        return f"{self.item_id}:{self.key}"


class Rater(models.Model):
    class Kind(models.TextChoices):
        EXPERT = "expert", "Expert"
        CROWD = "crowd", "Crowdworker"
        LLM = "llm", "LLM judge"
        BASELINE = "baseline", "Baseline judge"
        # A researcher trying their own study: answers kept, never counted (see ``counted_raters``).
        PREVIEW = "preview", "Researcher preview"

    kind = models.CharField(max_length=10, choices=Kind)
    name = models.CharField(max_length=200, blank=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="rater"
    )
    external_id = models.CharField(max_length=200, blank=True, help_text="e.g. a Prolific participant id")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "external_id"],
                condition=~Q(external_id=""),
                name="rater_unique_external_id",
            )
        ]

    def __str__(self) -> str:
        return self.name or self.external_id or f"rater {self.pk}"

    @property
    def is_human(self) -> bool:
        return self.kind in HUMAN_KINDS

    @property
    def is_preview(self) -> bool:
        return self.kind == self.Kind.PREVIEW


def counted_raters(path: str = "rater") -> Q:
    """The one rule for whose rows count: everyone's but a researcher's preview.

    ``path`` is the lookup from the filtered model to its Rater ("rater" from a
    Judgment, Assignment or Enrollment; "assignments__rater" from an Item).
    Written as a positive list so it also works inside aggregate filters over joins.
    """
    return Q(**{f"{path}__kind__in": COUNTED_KINDS})


COUNTED_KINDS = tuple(kind for kind in Rater.Kind.values if kind != Rater.Kind.PREVIEW)
# People: the only raters who take a place under a study's quota (judges run outside it).
HUMAN_KINDS = (Rater.Kind.EXPERT, Rater.Kind.CROWD)


class Enrollment(models.Model):
    """A rater's session in one study: consent, progress, exclusion, completion."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="enrollments")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="enrollments")
    entry_params = models.JSONField(default=dict, blank=True, help_text="e.g. STUDY_ID, SESSION_ID")
    consented_at = models.DateTimeField(null=True, blank=True)
    instructed_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    excluded = models.BooleanField(default=False)
    excluded_reason = models.CharField(max_length=200, blank=True)
    ended_early = models.BooleanField(default=False)
    declined_at = models.DateTimeField(null=True, blank=True, help_text="When the rater declined consent.")
    # The rater's walk through the study's item positions (services.ordering.ItemWalk):
    # how many positions it covers, fixed when it starts, and how many are behind the rater.
    walk_span = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    walked = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    # The steps around the items (annotation.rater_steps): each set when the rater is through it.
    qualified_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(
        null=True, blank=True, help_text="Failed or not admitted by a qualification."
    )
    practised_at = models.DateTimeField(null=True, blank=True)
    questions_before_at = models.DateTimeField(null=True, blank=True)
    questions_after_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "rater"], name="enrollment_unique")]

    def __str__(self) -> str:
        return f"{self.rater} in {self.study}"


class Qualification(models.Model):
    """A short test with known answers and a pass rule, shared by the owner's studies of one task type.

    ``items`` holds the test's items in the study-file item shape (``prompt``, ``text``, ``candidates``,
    ``gold``); they are never items of a study, so no count, quota or report can read them.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualifications")
    name = models.CharField(max_length=200)
    task_type = models.CharField(max_length=40)
    config = models.JSONField(default=dict, blank=True)
    items = models.JSONField(default=list)
    min_correct = models.PositiveIntegerField(help_text="Correct answers needed to pass.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="qualification_unique_name")]

    def __str__(self) -> str:
        return self.name


class QualificationResult(models.Model):
    """How one participant (a rater identity, such as a Prolific id) did on a qualification: kept across studies."""

    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="results")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="qualification_results")
    study = models.ForeignKey(Study, null=True, on_delete=models.SET_NULL, related_name="+")
    correct = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    passed = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["qualification", "rater"], name="qualification_result_unique")]

    def __str__(self) -> str:
        return f"{self.rater} {'passed' if self.passed else 'failed'} {self.qualification}"


class StepAnswer(models.Model):
    """An answer to a qualification or practice item: kept apart from judgments, so never counted."""

    class Step(models.TextChoices):
        QUALIFICATION = "qualification", "Qualification"
        PRACTICE = "practice", "Practice"

    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="step_answers")
    step = models.CharField(max_length=16, choices=Step)
    index = models.PositiveIntegerField()
    value = models.JSONField(null=True)
    correct = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["enrollment", "step", "index"], name="step_answer_unique")]

    def __str__(self) -> str:
        return f"{self.step} {self.index}: {self.value}"


class QuestionAnswer(models.Model):
    """One answer to a questionnaire question of the study, per enrollment."""

    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="question_answers")
    key = models.CharField(max_length=64)
    value = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["enrollment", "key"], name="question_answer_unique")]

    def __str__(self) -> str:
        return f"{self.key}: {self.value}"


class Invitation(models.Model):
    """An expert's personal invitation to a study; the expert creates an account (or signs in) and accepts it."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    name = models.CharField(max_length=200, blank=True, help_text="Whom it is for: a note, shown to the expert.")
    email = models.EmailField(blank=True)
    token = models.CharField(max_length=40, unique=True, default=_token)
    rater = models.ForeignKey(Rater, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"invitation to {self.study} for {self.name or self.email or 'anyone'}"


#: A judge asked in both orders answers trial t twice; the second (B/A) order is stored as assignment trial
#: ``SWAPPED_TRIAL_OFFSET + t`` so that (rater, item, trial) stays unique. Only storage sees the offset.
SWAPPED_TRIAL_OFFSET = 1000


def trial_as_set(stored_trial: int) -> int:
    """The trial as the researcher set it (0 … trials−1) from an assignment's stored trial, either order."""
    return stored_trial % SWAPPED_TRIAL_OFFSET


class Assignment(models.Model):
    """An item handed to a rater, with the lease and the order candidates were shown in."""

    class State(models.TextChoices):
        LEASED = "leased", "Leased"
        DONE = "done", "Done"
        RELEASED = "released", "Released"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="assignments")
    trial = models.PositiveIntegerField(default=0, help_text="Repeat index for LLM judges; 0 for people.")
    sequence = models.PositiveIntegerField(default=0, help_text="Position in the rater's own sequence.")
    state = models.CharField(max_length=10, choices=State, default=State.LEASED)
    shown_order = models.JSONField(default=list, blank=True, help_text="Candidate keys in display order.")
    leased_at = models.DateTimeField()
    lease_expires_at = models.DateTimeField()
    shown_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "item", "trial"], name="assignment_unique_rater_item_trial")
        ]
        indexes = [
            models.Index(fields=["item", "state", "lease_expires_at"]),
            models.Index(fields=["rater", "study", "state"]),
            # A study's open leases: the expired ones to take back, the live ones a rater may wait for.
            models.Index(
                fields=["study", "lease_expires_at"], condition=Q(state="leased"), name="assignment_open_lease_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} → {self.item}"


class Judgment(models.Model):
    class Status(models.TextChoices):
        OK = "ok", "Judged"
        UNPARSEABLE = "unparseable", "Unparseable answer"
        FAILED = "failed", "Failed"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="judgment")
    # Denormalised from the assignment so the statistics read one table.
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="judgments")
    status = models.CharField(max_length=12, choices=Status, default=Status.OK)
    value = models.JSONField(null=True, blank=True)
    shown_order = models.JSONField(default=list, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    too_fast = models.BooleanField(default=False)
    attention_passed = models.BooleanField(null=True, blank=True, help_text="Set on attention-check items only.")
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status="ok", value__isnull=False) | ~Q(status="ok"),
                name="judgment_ok_has_value",
            )
        ]
        indexes = [
            models.Index(fields=["study", "status"]),
            models.Index(fields=["item", "status"]),
            # A rater's judgments in one study: the annotator's progress and attention checks.
            models.Index(fields=["rater", "study"], name="judgment_rater_study_idx"),
            # A rater's answers given faster than the study's minimum: the progress page's "too fast".
            models.Index(fields=["rater", "study"], condition=Q(too_fast=True), name="judgment_too_fast_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.item}: {self.value}"


class ItemImport(LeasedJob):
    """An uploaded data file and what became of it; big files are imported by a worker under a lease.

    ``kind`` says what the file holds: items (CSV/XLSX/JSONL in the item-file
    shape) or a protocol template's data (its items and any answers already
    given). One record and one status page serve both.
    """

    class Kind(models.TextChoices):
        ITEMS = "items", "Item file"
        PROTOCOL = "protocol", "Protocol data"

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        XLSX = "xlsx", "Excel (XLSX)"
        JSONL = "jsonl", "JSON Lines"
        ZIP = "zip", "Archive (an item file and its media)"

    Status = JobStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="imports")
    kind = models.CharField(max_length=10, choices=Kind, default=Kind.ITEMS)
    file = models.FileField(upload_to="imports/%Y/%m/")
    original_name = models.CharField(max_length=255)
    format = models.CharField(max_length=10, choices=Format)
    replace = models.BooleanField(default=False, help_text="Replace the study's items instead of adding to them.")
    errors = models.JSONField(default=list, blank=True, help_text="Row-level messages when the import failed.")
    items_created = models.PositiveIntegerField(default=0)
    judgments_created = models.PositiveIntegerField(default=0, help_text="Answers a protocol file already held.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="item_imports"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(LeasedJob.Meta):
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["study", "-created_at"]),
            # Recovery looks for running imports whose heartbeat stopped.
            models.Index(fields=["status", "heartbeat_at"], name="itemimport_status_beat_idx"),
        ]
        constraints = [
            *LeasedJob.Meta.constraints,
            models.CheckConstraint(condition=Q(kind="items") | Q(replace=False), name="itemimport_protocol_adds"),
        ]

    def __str__(self) -> str:
        return f"{self.original_name} → {self.study} ({self.status})"


class AuditEntry(models.Model):
    """One change a researcher made to a study: who, when, what, and the values before and after.

    The study's name is kept as it was, so the entry still reads when the study is gone.
    ``changes`` maps a field to ``[old, new]``; secrets never go in it.
    """

    class Action(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Settings changed"
        OPENED = "opened", "Opened"
        CLOSED = "closed", "Closed"
        REDRAFTED = "draft", "Back to draft"
        ITEMS_IMPORTED = "items_imported", "Items imported"
        ITEMS_REPLACED = "items_replaced", "Items replaced"
        INVITATION_CREATED = "invitation_created", "Invitation created"
        DELETED = "deleted", "Deleted"
        WITHDRAWN = "withdrawn", "Participant withdrawn"
        RAW_IDS_ERASED = "raw_ids_erased", "Participant ids erased"
        PROLIFIC_LINKED = "prolific_linked", "Prolific study linked"
        PROLIFIC_REVIEWED = "prolific_reviewed", "Prolific submissions reviewed"
        PROLIFIC_BONUS = "prolific_bonus", "Prolific bonuses paid"

    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries")
    study_name = models.CharField(max_length=200)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )
    action = models.CharField(max_length=30, choices=Action)
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "-created_at"])]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.study_name}"

    @property
    def change_rows(self) -> list[tuple[str, object, object]]:
        """(field, old, new) rows; templates cannot use ``changes.items`` when a field is named "items"."""
        return [(name, *values) for name, values in sorted(self.changes.items())]


class AllocationArm(models.Model):
    """An adaptive policy's state for one regular item: people's usable answers, as rewards in [0, 1].

    Added to on each answer (``allocation.state.arm_add``) under the item's row lock the answer
    already holds; rebuilt from the judgments by ``allocation.state.arms_recount``.
    """

    item = models.OneToOneField(Item, primary_key=True, on_delete=models.CASCADE, related_name="arm")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="arms")
    n = models.PositiveIntegerField(default=0)
    total = models.FloatField(default=0.0)
    total_sq = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"item {self.item_id}: {self.n} answer(s)"


class AllocationLog(models.Model):
    """One item handed out under an adaptive policy, with what the decision was made from.

    ``passive``: the rater's passive share drew this one (the study's own walk). Otherwise
    ``state`` keeps the policy's context and, for the items ranked ahead of the one handed out
    and that item, their counts and columns, so ``allocation.state.replay`` reaches the same choice.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="allocation_log")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="allocation")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=20)
    passive = models.BooleanField(default=False)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["study", "id"], name="allocation_log_study_idx")]

    def __str__(self) -> str:
        return f"{self.policy}{' (passive)' if self.passive else ''}: item {self.item_id} to rater {self.rater_id}"


class ProlificToken(models.Model):
    """A researcher's Prolific API token, encrypted (``judging.keys``); it is never shown again, only replaced."""

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prolific_token")
    token_encrypted = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Prolific token of {self.owner}"


def _media_public_id() -> str:
    return secrets.token_urlsafe(16)


class MediaFile(models.Model):
    """An image (or sound, or short video) stored once per study, named by the hash of its bytes.

    The stored bytes are the checked ones (``annotation.media.checks``: type by content, limits,
    metadata stripped), so ``sha256`` is the hash of what is served. ``public_id`` is what URLs
    and exports name; ``original_name`` is kept for the researcher and never reaches a rater.
    """

    class Kind(models.TextChoices):
        IMAGE = "image", "Image"
        ANIMATED = "animated", "Animated image"
        AUDIO = "audio", "Audio"
        VIDEO = "video", "Video"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="media_files")
    public_id = models.CharField(max_length=32, unique=True, default=_media_public_id, editable=False)
    sha256 = models.CharField(max_length=64)
    content_type = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind)
    size_bytes = models.PositiveBigIntegerField()
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    original_name = models.CharField(max_length=255, blank=True, help_text="Never shown to raters.")
    file = models.FileField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["study", "sha256"], name="mediafile_unique_sha_per_study")]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.content_type})"


class MediaAttachment(models.Model):
    """A media file shown with an item: as the item's own picture, its prompt's, or one candidate's."""

    class Role(models.TextChoices):
        ITEM = "item", "Item"
        PROMPT = "prompt", "Prompt"
        CANDIDATE = "candidate", "Candidate"

    owner_path = "item__study__owner"

    media = models.ForeignKey(MediaFile, on_delete=models.CASCADE, related_name="attachments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="media_attachments")
    candidate = models.ForeignKey(
        Candidate, null=True, blank=True, on_delete=models.CASCADE, related_name="media_attachments"
    )
    role = models.CharField(max_length=10, choices=Role, default=Role.ITEM)
    alt_text = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["item", "role", "position", "id"]
        indexes = [models.Index(fields=["item", "position"], name="mediaattach_item_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(role="candidate", candidate__isnull=False)
                | (~Q(role="candidate") & Q(candidate__isnull=True)),
                name="mediaattach_candidate_role",
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_id}:{self.role}:{self.media_id}"
