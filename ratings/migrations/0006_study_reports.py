"""Alignment reports become study reports of several kinds, each with the fingerprint of its inputs.

The table is renamed and keeps its rows (all alignment reports); the analysis,
protocol and tournament pages store their figures in it too. ``AlignmentReport``
stays as a proxy over the alignment rows.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_outcome_codes_preview"),
        ("ratings", "0005_exports_and_reports_running_has_heartbeat"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="alignmentreport", name="alignment_report_unique_params"),
        migrations.RemoveConstraint(model_name="alignmentreport", name="ratings_alignmentreport_running_has_heartbeat"),
        migrations.RenameModel(old_name="AlignmentReport", new_name="StudyReport"),
        migrations.AddField(
            model_name="studyreport",
            name="kind",
            field=models.CharField(
                choices=[
                    ("alignment", "Alignment report"),
                    ("analysis", "Analysis page"),
                    ("protocol", "Protocol report"),
                    ("tournament", "Tournament leaderboard"),
                ],
                default="alignment",
                max_length=20,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="studyreport",
            name="inputs",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Fingerprint of the judgments the latest computation was asked for.",
            ),
        ),
        migrations.AddField(
            model_name="studyreport",
            name="result_inputs",
            field=models.JSONField(
                blank=True, null=True, help_text="Fingerprint of the judgments ``result`` was computed from."
            ),
        ),
        migrations.AlterField(
            model_name="studyreport",
            name="params_key",
            field=models.CharField(
                help_text="Digest of ``params``; one report per study, kind and key.", max_length=64
            ),
        ),
        migrations.AlterField(
            model_name="studyreport",
            name="study",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="reports", to="annotation.study"
            ),
        ),
        migrations.AddConstraint(
            model_name="studyreport",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "running"), _negated=True), ("heartbeat_at__isnull", False), _connector="OR"
                ),
                name="ratings_studyreport_running_has_heartbeat",
            ),
        ),
        migrations.AddConstraint(
            model_name="studyreport",
            constraint=models.UniqueConstraint(
                fields=("study", "kind", "params_key"), name="study_report_unique_params"
            ),
        ),
        migrations.CreateModel(
            name="AlignmentReport",
            fields=[],
            options={"proxy": True, "indexes": [], "constraints": []},
            bases=("ratings.studyreport",),
        ),
    ]
