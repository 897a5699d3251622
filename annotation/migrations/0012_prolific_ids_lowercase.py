"""Prolific ids stored in another case than Prolific's lower case, written in lower case.

Before, ``28B7C7AE0B21C55FBEF47409`` and ``28b7c7ae0b21c55fbef47409`` were two
raters; entry now writes every Prolific id in lower case
(``services.enrollment.prolific_id_normal``), so a rater stored in upper or
mixed case would never be found again. Only crowd raters enrolled in a Prolific
study are touched. Where both spellings already exist (the worker enrolled
twice), the two raters are left apart: merging someone's answers is the
researcher's call, not a migration's.
"""

import re

from django.db import migrations

PROLIFIC_ID = re.compile(r"^[0-9a-fA-F]{24}$")


def lowercase_prolific_ids(apps, schema_editor):
    Rater = apps.get_model("annotation", "Rater")
    candidates = (
        Rater.objects.filter(kind="crowd", enrollments__study__recruitment="prolific")
        .exclude(external_id="")
        .distinct()
        .values_list("pk", "external_id")
    )
    for pk, external_id in candidates.iterator():
        lowered = external_id.lower()
        if lowered == external_id or not PROLIFIC_ID.match(external_id):
            continue
        if Rater.objects.filter(kind="crowd", external_id=lowered).exists():
            continue
        Rater.objects.filter(pk=pk).update(external_id=lowered)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_study_inputs_revision"),
    ]

    operations = [
        migrations.RunPython(lowercase_prolific_ids, migrations.RunPython.noop),
    ]
