"""A Prolific worker is one rater whatever the case of their id: 24 hex digits name one number."""

import pytest
from django.test import Client

from annotation.models import Enrollment, Judgment, Rater
from annotation.models import Rater as CurrentRater
from tests.test_migrations import migrate

from .test_annotator_flow import begin, enter, fresh_rate_limits, url  # noqa: F401

LOWER = "28b7c7ae0b21c55fbef47409"
UPPER = "28B7C7AE0B21C55FBEF47409"


@pytest.mark.django_db
class TestOneWorkerOneRater:
    def test_the_same_id_in_capitals_resumes_the_same_rater_and_enrollment(self, make_study):
        study = make_study(recruitment="prolific", n_items=4)
        first = Client()
        enrollment = begin(first, study, pid=LOWER)
        page = first.get(url(study, "item"))
        assert page.status_code == 200
        # The same worker comes back in another browser with the id in capitals.
        second = Client()
        assert enter(second, study, UPPER).status_code == 302
        assert second.get(url(study, "consent")).status_code == 302  # consented already: sent on, not asked again
        assert Rater.objects.filter(kind=Rater.Kind.CROWD).count() == 1
        assert list(Enrollment.objects.filter(study=study).values_list("pk", flat=True)) == [enrollment.pk]
        assert Rater.objects.get().external_id == LOWER

    def test_mixed_case_is_the_same_worker_too(self, make_study):
        study = make_study(recruitment="prolific")
        assert enter(Client(), study, "28b7C7AE0b21c55fbef47409").status_code == 302
        assert enter(Client(), study, LOWER).status_code == 302
        assert Enrollment.objects.filter(study=study).count() == 1
        assert not Judgment.objects.exists()

    def test_another_site_keeps_the_id_as_given(self, make_study):
        # Other platforms' ids may be case-sensitive: only Prolific's are numbers.
        study = make_study()
        assert enter(Client(), study, UPPER).status_code == 302
        assert Rater.objects.get().external_id == UPPER


BEFORE = [("annotation", "0011_study_inputs_revision")]


@pytest.mark.django_db(transaction=True)
def test_prolific_ids_stored_in_capitals_before_are_found_again_after_the_migration():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Study = apps.get_model("annotation", "Study")
    Rater = apps.get_model("annotation", "Rater")
    Enrollment = apps.get_model("annotation", "Enrollment")
    owner = User.objects.create(username="old-timer")
    prolific = Study.objects.create(owner=owner, name="p", slug="p", task_type="ordinal", recruitment="prolific")
    other = Study.objects.create(owner=owner, name="o", slug="o", task_type="ordinal", recruitment="other")
    shouted = Rater.objects.create(kind="crowd", external_id=UPPER)
    elsewhere = Rater.objects.create(kind="crowd", external_id="AAAAAAAAAAAAAAAAAAAAAAAA")
    # A worker who already enrolled twice: both spellings stay, for the researcher to judge.
    twin_upper = Rater.objects.create(kind="crowd", external_id="BBBBBBBBBBBBBBBBBBBBBBBB")
    twin_lower = Rater.objects.create(kind="crowd", external_id="bbbbbbbbbbbbbbbbbbbbbbbb")
    for rater in (shouted, twin_upper, twin_lower):
        Enrollment.objects.create(study=prolific, rater=rater)
    Enrollment.objects.create(study=other, rater=elsewhere)

    migrate()
    ids = dict(CurrentRater.objects.values_list("pk", "external_id"))
    assert ids[shouted.pk] == LOWER
    assert ids[elsewhere.pk] == "AAAAAAAAAAAAAAAAAAAAAAAA"
    assert (ids[twin_upper.pk], ids[twin_lower.pk]) == ("BBBBBBBBBBBBBBBBBBBBBBBB", "bbbbbbbbbbbbbbbbbbbbbbbb")
