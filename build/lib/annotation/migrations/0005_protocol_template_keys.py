"""Studies that named only their protocol family now name its study template.

Before the protocol templates, ``Study.protocol`` held the family ("chumor"); the
templates' keys say which study of the protocol it is ("chumor-preference"), and
the protocol pages and reports look studies up by that key. The task type tells
the two studies of a family apart. Tournament match studies (pairwise studies
labelled "humorrank") are relabelled by the judging app's next migration.
"""

from django.db import migrations

TEMPLATE_KEYS = {
    ("humorrank", "pairwise"): "humorrank-human-check",
    ("humorrank", "pick_one"): "humorrank-contest",
    ("oogiri", "vote_allocation"): "oogiri-voting",
    ("oogiri", "binary"): "oogiri-binary",
    ("chumor", "binary"): "chumor-explanation",
    ("chumor", "pairwise"): "chumor-preference",
    ("semeval2020t7", "micro_edit"): "semeval2020t7-editing",
    ("semeval2020t7", "ordinal"): "semeval2020t7-grading",
}


def name_templates(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    for (family, task_type), key in TEMPLATE_KEYS.items():
        Study.objects.filter(protocol=family, task_type=task_type).update(protocol=key)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_auditentry")]

    operations = [migrations.RunPython(name_templates, migrations.RunPython.noop)]
