"""The database refuses a running export or report without a heartbeat (LeasedJob's constraint).

Apart from 0004 so the rows it updates are committed first: PostgreSQL will not
alter a table with deferred foreign-key checks still pending in the transaction.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0004_exports_and_reports_leased"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="alignmentreport",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "running"), _negated=True), ("heartbeat_at__isnull", False), _connector="OR"
                ),
                name="ratings_alignmentreport_running_has_heartbeat",
            ),
        ),
        migrations.AddConstraint(
            model_name="export",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "running"), _negated=True), ("heartbeat_at__isnull", False), _connector="OR"
                ),
                name="ratings_export_running_has_heartbeat",
            ),
        ),
    ]
