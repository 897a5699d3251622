"""LLM and baseline judges, their prompt templates, runs and units of work.

A judge is a rater (``annotation.Rater`` of kind llm or baseline) plus the
configuration that says how it answers. A run is the judge working through a
study: one ``JudgeUnit`` row per (item, trial, order), claimed with a
conditional update so no two workers do the same unit. Every unit ends in
exactly one ``annotation.Judgment`` (ok, unparseable or failed), written
through ``annotation.services.judgments.judgment_submit``. Progress is always
counted from those rows, never kept in counters.

API keys are never stored in clear: either the name of an environment
variable, or the key encrypted with Fernet (see ``judging.keys``). No field
holding a key appears in ``__str__``, forms, serializers or exports.
"""

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from annotation.jobs import ACTIVE, JobStatus, LeasedJob
from annotation.models import Item, Rater, Study

ENV_NAME = RegexValidator(r"^[A-Za-z_][A-Za-z0-9_]*$", "An environment variable name: letters, digits and _.")


class EndpointSettings(models.Model):
    """How to reach an OpenAI-compatible chat-completions endpoint and how hard to push it."""

    base_url = models.CharField(max_length=500, blank=True, help_text="e.g. http://127.0.0.1:8080/v1")
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(
        max_length=100, blank=True, validators=[ENV_NAME], help_text="Environment variable holding the API key."
    )
    api_key_encrypted = models.TextField(blank=True, editable=False)
    temperature = models.FloatField(default=0.1, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    max_tokens = models.PositiveIntegerField(default=512, validators=[MinValueValidator(1)])
    structured_output = models.BooleanField(
        default=True, help_text="Send the answer's JSON schema as response_format (when the server supports it)."
    )
    sees_images = models.BooleanField(
        default=False,
        help_text=(
            "The model takes images (OpenAI image_url parts). A text-only model is refused on items "
            "that carry pictures."
        ),
    )
    timeout_seconds = models.FloatField(default=60.0, validators=[MinValueValidator(0.1)])
    max_retries = models.PositiveSmallIntegerField(default=3, validators=[MaxValueValidator(10)])
    backoff_seconds = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(60.0)],
        help_text="First retry waits about this long; each further retry doubles it (with jitter).",
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(256)], help_text="Requests in flight at once."
    )
    rate_limit_per_minute = models.PositiveIntegerField(default=0, help_text="Requests per minute; 0 = no limit.")
    input_cost_per_million = models.FloatField(default=0.0, help_text="Price per million prompt tokens.")
    output_cost_per_million = models.FloatField(default=0.0, help_text="Price per million completion tokens.")

    class Meta:
        abstract = True

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted or self.api_key_env)

    @property
    def key_source(self) -> str:
        """Where the key comes from, safe to show: never the key itself."""
        # A named variable first: api_key_encrypted then holds only an operator's grant (judging.keys).
        if self.api_key_env:
            return f"environment variable {self.api_key_env}"
        if self.api_key_encrypted:
            return "stored (encrypted)"
        return "none"


class JudgeQuerySet(models.QuerySet):
    def current(self) -> "JudgeQuerySet":
        """The judges as they stand now: each name's newest version."""
        return self.filter(superseded_at__isnull=True)


class JudgeConfig(EndpointSettings):
    """One version of a judge: what produced its answers, fixed once it has any.

    Changing what shapes an answer (``judging.services.judges.ANSWER_SETTINGS``) on a judge that has
    run makes a new row with the same name, the next ``version`` and a rater of its own, so each
    version's judgments stay its own and are compared side by side, never merged. The older row is
    kept with ``superseded_at`` set; only the newest version of a name can be changed.
    """

    class Baseline(models.TextChoices):
        NONE = "", "Not a baseline (LLM)"
        RANDOM = "random", "Baseline: random"
        CONSTANT = "constant", "Baseline: constant (mean or majority of human labels)"
        LENGTH = "length", "Baseline: length (shorter is funnier)"

    rater = models.OneToOneField(Rater, on_delete=models.CASCADE, related_name="judge")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judges")
    name = models.CharField(max_length=200)
    baseline = models.CharField(max_length=10, choices=Baseline, default=Baseline.NONE, blank=True)
    trials = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(20)])
    both_orders = models.BooleanField(
        default=False, help_text="Judge pairwise items in both orders (A/B and B/A) and record consistency."
    )
    seed = models.PositiveIntegerField(default=0, help_text="Seed for baselines and sampling.")
    version = models.PositiveIntegerField(default=1, editable=False)
    previous_version = models.OneToOneField(
        "self", null=True, blank=True, editable=False, on_delete=models.PROTECT, related_name="next_version"
    )
    superseded_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When a newer version of this judge took its place."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JudgeQuerySet.as_manager()

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"], condition=Q(superseded_at__isnull=True), name="judge_unique_current_name"
            ),
            models.UniqueConstraint(fields=["owner", "name", "version"], name="judge_unique_version"),
            models.CheckConstraint(condition=~Q(baseline="") | ~Q(model=""), name="judge_llm_has_model"),
        ]

    def __str__(self) -> str:
        return self.name if self.version == 1 else f"{self.name} v{self.version}"

    def __repr__(self) -> str:
        return f"<JudgeConfig {self.pk} {self.name!r} v{self.version}>"

    @property
    def is_current(self) -> bool:
        return self.superseded_at is None

    @property
    def is_baseline(self) -> bool:
        return bool(self.baseline)

    @property
    def templates(self) -> dict[str, dict[str, Any]]:
        """The pinned template versions per task type, ``{task_type: {"name": ..., "version": ...}}``.

        Task types not listed use their built-in default. Read through ``template_pins.all()`` so a
        ``prefetch_related("template_pins__template")`` on a list of judges serves it without queries.
        """
        return {
            pin.task_type: {"name": pin.template.name, "version": pin.template.version}
            for pin in sorted(self.template_pins.all(), key=lambda pin: pin.task_type)
        }


class PromptTemplate(models.Model):
    """One version of a named prompt for one task type. Editing creates a new version.

    A template belongs to its owner; built-ins have none and are read-only to everyone (so are
    the few templates from before templates had owners whose author could not be told, see
    migration 0004). Names are per owner: a researcher's "funniness-digit" is their own copy of
    the built-in, numbered after it (version 2, 3, ...), and nobody else ever sees it.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="prompt_templates",
        help_text="Empty for the built-in (shared, read-only) templates.",
    )
    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    task_type = models.CharField(max_length=40)
    description = models.TextField(blank=True)
    system_text = models.TextField(blank=True)
    user_text = models.TextField()
    response_schema = models.JSONField(
        null=True, blank=True, help_text="JSON schema of the answer; empty for the task type's default."
    )
    builtin = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_type", "name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name", "version"],
                condition=Q(owner__isnull=False),
                name="prompt_template_unique_owned_version",
            ),
            models.UniqueConstraint(
                fields=["name", "version"],
                condition=Q(owner__isnull=True),
                name="prompt_template_unique_shared_version",
            ),
            models.CheckConstraint(
                condition=Q(builtin=False) | Q(owner__isnull=True), name="prompt_template_builtin_unowned"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def shared(self) -> bool:
        """A built-in (or ownerless) template: everyone reads it, nobody changes it."""
        return self.owner_id is None


class JudgeTemplate(models.Model):
    """The template version a judge uses for one task type, fixed when the template is chosen.

    Saving a new version of that template (by anyone) does not move the pin: a judge's prompt
    changes only when its owner chooses a template for it again.
    """

    judge = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="template_pins")
    task_type = models.CharField(max_length=40)
    template = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "task_type"], name="judge_template_one_per_task_type")]

    def __str__(self) -> str:
        return f"{self.judge} uses {self.template} for {self.task_type}"


# Runs, generations and tournaments speak the one status vocabulary of background jobs.
RunStatus = JobStatus
ACTIVE_RUN_STATES = ACTIVE


class UnitStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    CLAIMED = "claimed", "In progress"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class WorkUnit(models.Model):
    """A unit of work claimed with a lease: ``claimed_until`` is renewed while a worker is alive."""

    status = models.CharField(max_length=10, choices=UnitStatus, default=UnitStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_by = models.CharField(max_length=100, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Driven(models.Model):
    """Who drives a run or tournament and their last sign of life (``annotation.jobs.heartbeat`` renews it).

    Not exclusive, unlike ``annotation.jobs.LeasedJob``: several workers may drive one run, as its
    units are claimed one by one under their own leases; the run's heartbeat only tells recovery
    that someone is still at it (``judging.services.recovery``).
    """

    claimed_by = models.CharField(max_length=64, blank=True, help_text="Token of the worker driving it.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class JudgeRun(Driven):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.ForeignKey(JudgeConfig, on_delete=models.CASCADE, related_name="runs")
    retry_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="retries",
        help_text="The run whose failed and unparseable units this run judges again.",
    )
    template = models.ForeignKey(PromptTemplate, null=True, blank=True, on_delete=models.PROTECT)
    tournament = models.ForeignKey("Tournament", null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    preparing = models.BooleanField(
        default=False,
        help_text="Its units are still to be made: by the worker, before it asks anything (a run over a big study).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    trials = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    both_orders = models.BooleanField(default=False)
    # An adaptive policy (annotation.allocation) asks items further trials in waves, ``trials`` being the
    # most any item gets (judging/services/adaptive_runs.py); "uniform" asks every item every trial.
    allocation_policy = models.CharField(max_length=20, default="uniform", db_default="uniform")
    status = models.CharField(max_length=10, choices=RunStatus, default=RunStatus.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "status"])]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.judge} on {self.study}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATES


class JudgeWave(models.Model):
    """One wave of an adaptive judge run (``services.adaptive_runs``): what the decision was made from
    (``annotation.allocation.state.decision_state``, the crowd's ``AllocationLog`` shape), whose items are
    listed in the order the wave gave them their next trial, best first, so ``adaptive_runs.replay_run``
    can check that the rule ranks them the same way again. The tie order is the run's judge's
    (``run.judge.rater``, fixed for a judge version). The first wave (one trial of every item) decides
    nothing and is not logged."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="waves")
    number = models.PositiveIntegerField(help_text="2 for the first adaptive wave (the first asks every item).")
    policy = models.CharField(max_length=20)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="judge_wave_unique")]

    def __str__(self) -> str:
        return f"wave {self.number} of run {self.run_id}"

    @property
    def items(self) -> list[int]:
        """The item ids the wave gave a trial, best first: its logged rows' order."""
        return [row[0] for row in self.state.get("arms", [])]


class UnitOutcome(models.TextChoices):
    """What a run did with a unit, kept on the unit so a run reports only its own work."""

    OK = "ok", "Judged"
    UNPARSEABLE = "unparseable", "Unparseable answer"
    FAILED = "failed", "Failed"
    ALREADY = "already", "Already judged"


#: The outcomes of units that got no usable answer.
PROBLEM_OUTCOMES = (UnitOutcome.FAILED, UnitOutcome.UNPARSEABLE)


class JudgeUnit(WorkUnit):
    """One (item, trial, order) of a run. ``swapped`` is the B/A variant in both-orders mode.

    ``outcome`` and the fields after it record what this run did (a later retry run may replace the
    judgment, never these): ``already`` when an earlier run of the same judge version had judged it.
    ``reason`` is the failure's kind (the error without its per-unit details), for counting.
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="units")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    trial = models.PositiveSmallIntegerField(default=0)
    swapped = models.BooleanField(default=False)
    assignment = models.ForeignKey(
        "annotation.Assignment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=12, choices=UnitOutcome, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    answer_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "item", "trial", "swapped"], name="judge_unit_unique"),
            models.CheckConstraint(
                condition=~Q(status="done") | Q(assignment__isnull=False), name="judge_unit_done_has_assignment"
            ),
        ]
        indexes = [
            models.Index(fields=["run", "status", "claimed_until"]),
            # The run page's table: a page of units in id order (which is item order), from the index alone.
            models.Index(fields=["run", "id"], name="judge_unit_run_id_idx"),
            # The failed and unparseable units: the page's reasons and its "only problems" table.
            models.Index(
                fields=["run", "id"], condition=Q(outcome__in=PROBLEM_OUTCOMES), name="judge_unit_problem_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"unit {self.pk} of run {self.run_id}"


class Tournament(Driven):
    """HumorRank: contestants' candidates on shared prompts, compared pair by pair."""

    class Schedule(models.TextChoices):
        ROUND_ROBIN = "round_robin", "Full round robin"
        SWISS = "swiss", "Adaptive Swiss pairing"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tournaments")
    name = models.CharField(max_length=200)
    source_study = models.ForeignKey(
        Study,
        on_delete=models.CASCADE,
        related_name="tournaments_sourced",
        help_text="Prompts with one candidate per contestant.",
    )
    match_study = models.OneToOneField(
        Study, on_delete=models.CASCADE, related_name="tournament", help_text="The pairwise study of scheduled matches."
    )
    judge = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="tournaments")
    schedule = models.CharField(max_length=12, choices=Schedule, default=Schedule.ROUND_ROBIN)
    budget = models.PositiveIntegerField(null=True, blank=True, help_text="Most matches to judge; empty = all.")
    seed = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=RunStatus, default=RunStatus.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class GeneratorConfig(EndpointSettings):
    """A model that writes one contestant's candidates for a set of prompts."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="generators")
    name = models.SlugField(max_length=100, help_text="The contestant's name; becomes the candidate key.")
    system_text = models.TextField(blank=True)
    user_text = models.TextField(help_text="Prompt template; {{ prompt }} is the item's prompt.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="generator_unique_name_per_owner"),
            models.CheckConstraint(condition=~Q(model=""), name="generator_has_model"),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<GeneratorConfig {self.pk} {self.name!r}>"


class GenerationRun(Driven):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="generation_runs")
    generators = models.ManyToManyField(GeneratorConfig, related_name="runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=RunStatus, default=RunStatus.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"generation {self.pk} for {self.study}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATES


class GenerationUnit(WorkUnit):
    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="units")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    generator = models.ForeignKey(GeneratorConfig, on_delete=models.CASCADE, related_name="+")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "item", "generator"], name="generation_unit_unique")]
        indexes = [models.Index(fields=["run", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"generation unit {self.pk}"


class Webhook(models.Model):
    """A researcher's address that is told, in a signed POST, when a study or a judge run changes state."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    study = models.ForeignKey(
        Study, null=True, blank=True, on_delete=models.CASCADE, related_name="webhooks", help_text="Blank: every study."
    )
    url = models.CharField(max_length=500, help_text="Where the events are POSTed, e.g. https://example.org/hook")
    secret = models.CharField(max_length=64, editable=False, help_text="Signs every delivery (HMAC-SHA256).")
    events = models.JSONField(default=list, help_text="The events sent (judging.webhooks.EVENTS).")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(LeasedJob):
    """One event sent to one webhook: a held background job (``judging.webhooks``)."""

    owner_path = "webhook__owner"
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    tries = models.PositiveSmallIntegerField(default=0, help_text="POSTs made by this delivery.")
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(LeasedJob.Meta):
        ordering = ["-created_at", "-id"]
