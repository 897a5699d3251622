"""Tournament match studies made before the HumorRank report name themselves and their contest.

The contest's report finds a tournament's matches by ``protocol = "humorrank-matches"``
and the contest's slug in the match study's config (the ratings app cannot read the
judging app's Tournament rows); older match studies had neither.
"""

from django.db import migrations


def link_match_studies(apps, schema_editor):
    Tournament = apps.get_model("judging", "Tournament")
    for tournament in Tournament.objects.select_related("source_study", "match_study"):
        study = tournament.match_study
        study.protocol = "humorrank-matches"
        study.config = {
            **(study.config or {}),
            "source_study": tournament.source_study.slug,
            "tournament": tournament.name,
            "schedule": tournament.schedule,
            "budget": tournament.budget,
        }
        study.save(update_fields=["protocol", "config"])


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0001_initial"),
        ("annotation", "0005_protocol_template_keys"),
    ]

    operations = [migrations.RunPython(link_match_studies, migrations.RunPython.noop)]
