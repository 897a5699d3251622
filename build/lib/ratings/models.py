# SPDX-License-Identifier: GPL-3.0-or-later
"""Exports of a study's judgments that are built in the background.

Small studies stream straight to the researcher's browser and leave no row
here; a large one gets an ``Export`` that a Celery worker claims, writes to
``MEDIA_ROOT/exports/`` and marks done (or failed, with the reason).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.jobs import JobStatus, LeasedJob
from annotation.models import Study


class Export(LeasedJob):
    class Format(models.TextChoices):
        XLSX = "xlsx", "Excel workbook"
        CSV = "csv", "CSV, one row per judgment"
        JSONL = "jsonl", "JSON Lines, one judgment per line"

    # status, claimed_by, attempts, started_at, heartbeat_at and finished_at come from LeasedJob.
    Status = JobStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=10, choices=Format)
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


# -- Alignment reports (ratings/alignment.py) ------------------------------------------------
# Kept apart from the exports above: the last computed judge-vs-human alignment
# report of a study for one set of parameters, so the page can show it (with
# its timestamp) without recomputing, and a worker can fill it in the background.


class AlignmentReport(LeasedJob):
    # status, claimed_by, attempts, started_at, heartbeat_at and finished_at come from LeasedJob.
    Status = JobStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="alignment_reports")
    params_key = models.CharField(max_length=64, help_text="Digest of ``params``; one report per study and key.")
    params = models.JSONField(default=dict)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done while running.")
    stage = models.CharField(max_length=200, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The last complete report.")
    error = models.TextField(blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True, help_text="When ``result`` was computed.")

    class Meta(LeasedJob.Meta):
        ordering = ["-requested_at"]
        constraints = [
            *LeasedJob.Meta.constraints,
            models.UniqueConstraint(fields=["study", "params_key"], name="alignment_report_unique_params"),
        ]

    def __str__(self) -> str:
        return f"alignment report {self.pk} of {self.study} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
