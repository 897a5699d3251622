"""The template names per task type are now pins (JudgeTemplate rows, filled by 0004)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("judging", "0004_assign_template_owners_and_pin_judges")]

    operations = [migrations.RemoveField(model_name="judgeconfig", name="templates")]
