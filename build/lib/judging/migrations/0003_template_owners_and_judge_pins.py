"""Prompt templates get an owner; judges pin a template version per task type (JudgeTemplate).

Schema only: migration 0004 fills the owners and the pins from the old ``JudgeConfig.templates``
names, and 0005 drops that field.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0002_match_studies_link_their_contest"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="prompttemplate",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                help_text="Empty for the built-in (shared, read-only) templates.",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="prompt_templates",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RemoveConstraint(model_name="prompttemplate", name="prompt_template_unique_version"),
        migrations.AddConstraint(
            model_name="prompttemplate",
            constraint=models.UniqueConstraint(
                condition=models.Q(("owner__isnull", False)),
                fields=("owner", "name", "version"),
                name="prompt_template_unique_owned_version",
            ),
        ),
        migrations.AddConstraint(
            model_name="prompttemplate",
            constraint=models.UniqueConstraint(
                condition=models.Q(("owner__isnull", True)),
                fields=("name", "version"),
                name="prompt_template_unique_shared_version",
            ),
        ),
        migrations.AddConstraint(
            model_name="prompttemplate",
            constraint=models.CheckConstraint(
                condition=models.Q(("builtin", False), ("owner__isnull", True), _connector="OR"),
                name="prompt_template_builtin_unowned",
            ),
        ),
        migrations.CreateModel(
            name="JudgeTemplate",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("task_type", models.CharField(max_length=40)),
                (
                    "judge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="template_pins",
                        to="judging.judgeconfig",
                    ),
                ),
                (
                    "template",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="+", to="judging.prompttemplate"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("judge", "task_type"), name="judge_template_one_per_task_type")
                ],
            },
        ),
    ]
