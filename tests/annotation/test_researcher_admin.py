"""The admin pages staff use to inspect and fix the annotation data."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.importers import item_import_start
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker, invitation_create
from annotation.services.judgments import judgment_submit

pytestmark = pytest.mark.django_db

MODELS = ("study", "item", "rater", "enrollment", "invitation", "assignment", "judgment", "itemimport")


@pytest.fixture
def staff_client(client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    admin = get_user_model().objects.create_superuser("admin", "admin@example.org", "admin-password-123")
    client.force_login(admin)
    return client


@pytest.fixture
def collected(make_study, researcher, settings):
    study = make_study(task_type="pairwise", n_candidates=2)
    enrollment = enroll_crowdworker(study=study, participant_id="p1")
    judgment_submit(
        assignment=next_assignment(enrollment=enrollment).assignment, rater=enrollment.rater, value={"choice": "tie"}
    )
    invitation_create(study=study, email="expert@example.org")
    item_import_start(
        study=study, upload=SimpleUploadedFile("more.csv", b"id,candidate.a,candidate.b\nx,1,2\n"), user=researcher
    )
    return study


class TestAdminPages:
    @pytest.mark.parametrize("model", MODELS)
    def test_every_list_and_change_page_opens(self, staff_client, collected, model):
        changelist = staff_client.get(reverse(f"admin:annotation_{model}_changelist"))
        assert changelist.status_code == 200
        obj = changelist.context["cl"].result_list[0]
        assert staff_client.get(reverse(f"admin:annotation_{model}_change", args=[obj.pk])).status_code == 200

    def test_an_item_page_shows_its_candidates_and_their_provenance(self, staff_client, collected):
        item = collected.items.first()
        response = staff_client.get(reverse("admin:annotation_item_change", args=[item.pk]))
        assert b"secret-model-0" in response.content

    def test_researchers_who_are_not_staff_cannot_use_it(self, client, researcher):
        client.force_login(researcher)
        assert client.get(reverse("admin:annotation_study_changelist")).status_code == 302
