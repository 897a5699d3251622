# SPDX-License-Identifier: GPL-3.0-or-later
"""Exports of a study's judgments that are built in the background.

Small studies stream straight to the researcher's browser and leave no row
here; a large one gets an ``Export`` that a Celery worker claims, writes to
``MEDIA_ROOT/exports/`` and marks done (or failed, with the reason).
"""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from annotation.jobs import JobStatus, LeasedJob
from annotation.models import Study


def export_format_choices() -> list[tuple[str, str]]:
    """The registered export formats (``ratings.exports.formats``), read when choices are needed.

    Not imported at the top: the formats' writers import these models. A callable, so a new
    format needs no migration.
    """
    from ratings.exports.formats import format_choices

    return format_choices()


class Export(LeasedJob):
    # status, claimed_by, attempts, started_at, heartbeat_at and finished_at come from LeasedJob.
    Status = JobStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=10, choices=export_format_choices)
    # Relative to MEDIA_ROOT, always under exports/; empty until the file is written.
    file = models.CharField(max_length=300, blank=True)
    rater_subset = models.JSONField(
        default=list, blank=True, help_text="Rater ids of a selected subset; empty for none."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exports")
    created_at = models.DateTimeField(auto_now_add=True)
    error = models.TextField(blank=True)
    rows_written = models.PositiveBigIntegerField(default=0)
    rows_expected = models.PositiveBigIntegerField(default=0)

    class Meta(LeasedJob.Meta):
        ordering = ["-created_at"]
        constraints = [
            *LeasedJob.Meta.constraints,
            models.CheckConstraint(
                condition=~Q(status="done") | ~Q(file=""),
                name="export_done_has_file",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_format_display()} of {self.study} ({self.status})"

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        if not self.rows_expected:
            return 0
        return min(99, int(100 * self.rows_written / self.rows_expected))


# -- Reports kept per change of their inputs (ratings/cached.py) ---------------------------------
# The last computed report of one kind (alignment, analysis, protocol, tournament) for a study and one
# set of parameters, with the fingerprint of the judgments it was computed from, so a page shows it
# (and whether it is still current) without recomputing, and a worker fills it in the background.


class StudyReport(LeasedJob):
    class Kind(models.TextChoices):
        ALIGNMENT = "alignment", "Alignment report"
        ANALYSIS = "analysis", "Analysis page"
        PROTOCOL = "protocol", "Protocol report"
        TOURNAMENT = "tournament", "Tournament leaderboard"

    # status, claimed_by, attempts, started_at, heartbeat_at and finished_at come from LeasedJob.
    Status = JobStatus

    kind = models.CharField(max_length=20, choices=Kind)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="reports")
    params_key = models.CharField(max_length=64, help_text="Digest of ``params``; one report per study, kind and key.")
    params = models.JSONField(default=dict)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done while running.")
    stage = models.CharField(max_length=200, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The last complete report.")
    error = models.TextField(blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True, help_text="When ``result`` was computed.")
    inputs = models.JSONField(
        default=dict, blank=True, help_text="Fingerprint of the judgments the latest computation was asked for."
    )
    result_inputs = models.JSONField(
        null=True, blank=True, help_text="Fingerprint of the judgments ``result`` was computed from."
    )

    class Meta(LeasedJob.Meta):
        ordering = ["-requested_at"]
        constraints = [
            *LeasedJob.Meta.constraints,
            models.UniqueConstraint(fields=["study", "kind", "params_key"], name="study_report_unique_params"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk} of {self.study} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class AlignmentReportManager(models.Manager):
    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(kind=StudyReport.Kind.ALIGNMENT)


class AlignmentReport(StudyReport):
    """The alignment reports among the study reports (judges against a human reference)."""

    objects = AlignmentReportManager()

    class Meta:
        proxy = True

    def save(self, *args, **kwargs) -> None:
        self.kind = StudyReport.Kind.ALIGNMENT
        super().save(*args, **kwargs)


class DatasetCard(models.Model):
    """What a study's release bundle says that the study itself does not hold: written by the researcher."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="dataset_card")
    licence = models.CharField(
        max_length=64,
        blank=True,
        validators=[
            RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$", "Write an SPDX licence identifier, e.g. CC-BY-4.0.")
        ],
        help_text="SPDX identifier of the data's licence, e.g. CC-BY-4.0 or CC0-1.0.",
    )
    pay = models.TextField(blank=True, help_text="How raters were paid, e.g. £9.00 an hour on Prolific, median 12 min.")
    recruitment_notes = models.TextField(
        blank=True, help_text="Who was recruited and how: screeners, countries, languages, experts' background."
    )
    citation = models.TextField(blank=True, help_text="How to cite the data (BibTeX or plain text).")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"dataset card of {self.study}"
