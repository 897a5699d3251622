"""The migration that stores each item's taken places backfills them from the assignments made before it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from annotation.models import Assignment as CurrentAssignment
from annotation.models import Item as CurrentItem
from annotation.models import Study as CurrentStudy
from annotation.services.places import places_recount

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0007_outcome_codes_preview")]


def migrate(targets=None):
    executor = MigrationExecutor(connection)
    targets = targets or executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_places_are_counted_from_people_s_leases_and_answers_and_lapsed_leases_are_released():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Study = apps.get_model("annotation", "Study")
    Item = apps.get_model("annotation", "Item")
    Rater = apps.get_model("annotation", "Rater")
    Assignment = apps.get_model("annotation", "Assignment")
    owner = User.objects.create(username="old-timer")
    study = Study.objects.create(owner=owner, name="old", slug="old", task_type="ordinal", quota_per_item=2)
    items = [Item.objects.create(study=study, external_id=f"i{n}", position=n) for n in range(3)]
    check = Item.objects.create(study=study, external_id="check", position=3, is_attention_check=True, gold=1)
    now = timezone.now()
    later, earlier = now + timedelta(hours=1), now - timedelta(hours=1)

    def assign(item, kind, name, state, expires):
        rater = Rater.objects.create(kind=kind, external_id=name)
        return Assignment.objects.create(
            study=study, item=item, rater=rater, state=state, leased_at=earlier, lease_expires_at=expires
        )

    assign(items[0], "crowd", "done", "done", earlier)
    assign(items[0], "expert", "live", "leased", later)
    lapsed = assign(items[1], "crowd", "lapsed", "leased", earlier)
    assign(items[1], "preview", "preview", "leased", later)
    assign(items[1], "llm", "judge", "done", earlier)
    assign(items[2], "crowd", "gone", "released", earlier)
    assign(check, "crowd", "checked", "done", earlier)

    migrate()
    places = dict(CurrentItem.objects.filter(study_id=study.pk).values_list("external_id", "places_taken"))
    assert places == {"i0": 2, "i1": 0, "i2": 0, "check": 0}
    assert CurrentAssignment.objects.get(pk=lapsed.pk).state == "released"
    assert places_recount(study=CurrentStudy.objects.get(pk=study.pk)) == {}
