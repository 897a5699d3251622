"""Exports and alignment reports become leased jobs (annotation.jobs.LeasedJob).

Existing rows are mapped so that recovery reads them correctly:
- an export's ``progress_at`` (its last sign of life) becomes ``heartbeat_at``;
- a running report, which had no sign of life, gets ``heartbeat_at = started_at``
  (a running export without one gets its ``started_at`` or ``created_at``), so one
  whose worker is gone is found stale by recovery;
- a job that was ever started counts one attempt; a finished report gets
  ``finished_at`` from when its result was computed.
"""

from django.db import migrations, models
from django.db.models import F, Q
from django.db.models.functions import Coalesce


def map_existing_rows(apps, schema_editor):
    Export = apps.get_model("ratings", "Export")
    AlignmentReport = apps.get_model("ratings", "AlignmentReport")
    for model in (Export, AlignmentReport):
        model.objects.filter(started_at__isnull=False).update(attempts=1)
    Export.objects.filter(status="running", heartbeat_at__isnull=True).update(
        heartbeat_at=Coalesce(F("started_at"), F("created_at"))
    )
    AlignmentReport.objects.filter(status="running").update(heartbeat_at=Coalesce(F("started_at"), F("requested_at")))
    AlignmentReport.objects.filter(Q(status="done") | Q(status="failed"), finished_at__isnull=True).update(
        finished_at=Coalesce(F("computed_at"), F("started_at"), F("requested_at"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0006_import_jobs_lease"),
        ("ratings", "0003_export_progress_at"),
    ]

    operations = [
        migrations.RenameField(model_name="export", old_name="progress_at", new_name="heartbeat_at"),
        migrations.AddField(
            model_name="export",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0, help_text="How many times a worker claimed it."),
        ),
        migrations.AddField(
            model_name="export",
            name="claimed_by",
            field=models.CharField(blank=True, help_text="Token of the worker holding the job.", max_length=64),
        ),
        migrations.AddField(
            model_name="alignmentreport",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0, help_text="How many times a worker claimed it."),
        ),
        migrations.AddField(
            model_name="alignmentreport",
            name="claimed_by",
            field=models.CharField(blank=True, help_text="Token of the worker holding the job.", max_length=64),
        ),
        migrations.AddField(
            model_name="alignmentreport",
            name="finished_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="alignmentreport",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(map_existing_rows, migrations.RunPython.noop, elidable=True),
    ]
