"""Entry links that cannot be misused: placeholder ids refused, Prolific ids checked, the owner's preview kept apart."""

import io

import pytest
from django.core.cache import cache
from django.test import Client

from annotation.models import Enrollment, Judgment, Rater
from annotation.selectors.researcher import studies_owned, study_judgments, study_progress
from ratings.exports.csv_jsonl import write_csv
from ratings.selectors import analysable_judgments, study_raters
from tests.annotation.test_annotator_flow import answer_all, begin, csrf_from, post_from_page, url

pytestmark = pytest.mark.django_db

AS_THE_STUDY_PAGE_SHOWS_IT = {
    "PROLIFIC_PID": "{{%PROLIFIC_PID%}}",
    "STUDY_ID": "{{%STUDY_ID%}}",
    "SESSION_ID": "{{%SESSION_ID%}}",
}
A_PROLIFIC_ID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


class TestPlaceholderIds:
    def test_the_link_exactly_as_the_study_page_shows_it_creates_nobody(self, client, make_study):
        study = make_study()
        response = client.get(url(study), AS_THE_STUDY_PAGE_SHOWS_IT)
        page = response.content.decode()
        assert response.status_code == 400
        assert "This link needs your participant id" in page
        assert "{{%PROLIFIC_PID%}}" in page  # it names what was not filled in
        assert "Try as a participant" not in page  # only for the study's owner
        assert not Rater.objects.exists()
        assert not Enrollment.objects.exists()

    @pytest.mark.parametrize(
        "participant_id",
        ["", "   ", "{{%PROLIFIC_PID%}}", "%PROLIFIC_PID%", "<PROLIFIC_PID>", "${PROLIFIC_PID}", "{PID}", "{{pid}}"],
    )
    def test_it_refuses_any_templated_id(self, client, make_study, participant_id):
        study = make_study()
        response = client.get(url(study), {"PROLIFIC_PID": participant_id})
        assert response.status_code == 400
        assert "This link needs your participant id" in response.content.decode()
        assert not Rater.objects.exists()

    @pytest.mark.parametrize("participant_id", ["two words", "x" * 101, "quote'd", "-leading-dash"])
    def test_it_refuses_an_id_no_platform_would_send(self, client, make_study, participant_id):
        study = make_study()
        response = client.get(url(study), {"PROLIFIC_PID": participant_id})
        assert response.status_code == 400
        assert "The participant id in the link is not valid" in response.content.decode()
        assert not Rater.objects.exists()

    def test_a_prolific_study_takes_only_prolific_shaped_ids(self, client, make_study):
        study = make_study(recruitment="prolific")
        refused = client.get(url(study), {"PROLIFIC_PID": "worker-1"})
        assert refused.status_code == 400
        assert "not a Prolific participant id" in refused.content.decode()
        accepted = client.get(url(study), {"PROLIFIC_PID": A_PROLIFIC_ID})
        assert accepted.status_code == 302
        assert Rater.objects.get().external_id == A_PROLIFIC_ID

    def test_another_site_takes_any_sane_id(self, client, make_study):
        study = make_study()
        assert client.get(url(study), {"PROLIFIC_PID": "mturk.A1B2:c3@x"}).status_code == 302
        assert Rater.objects.get(kind=Rater.Kind.CROWD).external_id == "mturk.A1B2:c3@x"

    def test_the_owner_is_offered_to_try_it_as_a_participant(self, client, make_study, researcher):
        study = make_study()
        client.force_login(researcher)
        page = client.get(url(study), AS_THE_STUDY_PAGE_SHOWS_IT).content.decode()
        assert "Try as a participant" in page
        assert f'action="{url(study, "preview")}"' in page

    def test_another_researcher_is_not(self, client, make_study, other_researcher):
        study = make_study()
        client.force_login(other_researcher)
        page = client.get(url(study), AS_THE_STUDY_PAGE_SHOWS_IT).content.decode()
        assert "Try as a participant" not in page


def start_preview(client: Client, study) -> None:
    refused = client.get(url(study), AS_THE_STUDY_PAGE_SHOWS_IT)
    response = client.post(url(study, "preview"), {"csrfmiddlewaretoken": csrf_from(refused)})
    assert response.status_code == 302
    assert response["Location"] == url(study, "consent")


class TestPreview:
    def test_the_owner_walks_through_and_nothing_is_counted(self, csrf_client, make_study, researcher):
        study = make_study(n_items=2, quota_per_item=1)
        csrf_client.force_login(researcher)
        start_preview(csrf_client, study)
        consent = csrf_client.get(url(study, "consent")).content.decode()
        assert "Your answers are not counted" in consent
        assert post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"}).status_code == 302
        assert post_from_page(csrf_client, url(study, "instructions"), {}).status_code == 302
        assert "Your answers are not counted" in csrf_client.get(url(study, "item")).content.decode()
        assert answer_all(csrf_client, study, {"rating": "2"}) == 2

        # Kept: the answers are stored under the researcher's preview rater ...
        preview = Rater.objects.get(kind=Rater.Kind.PREVIEW)
        assert Judgment.objects.filter(rater=preview).count() == 2
        # ... and counted nowhere.
        progress = study_progress(study=study)
        assert (progress.raters_total, progress.judgments_done, progress.judge_judgments) == (0, 0, 0)
        assert progress.raters == []
        assert studies_owned(user=researcher).get(pk=study.pk).n_judgments == 0
        assert not study_judgments(study=study).exists()
        for group in ("everyone", "humans", "crowd", "judges"):
            assert not analysable_judgments(study=study, group=group).exists()
        assert study_raters(study=study) == []
        out = io.StringIO()
        assert write_csv(study, out) == 0

        # The quota of one per item is still all free for a real worker.
        worker = Client(enforce_csrf_checks=True)
        begin(worker, study, "worker-1")
        assert answer_all(worker, study, {"rating": "1"}) == 2
        assert study_progress(study=study).judgments_done == 2

    def test_each_try_starts_afresh(self, csrf_client, make_study, researcher):
        study = make_study(n_items=2)
        csrf_client.force_login(researcher)
        start_preview(csrf_client, study)
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        post_from_page(csrf_client, url(study, "instructions"), {})
        answer_all(csrf_client, study, {"rating": "2"})
        start_preview(csrf_client, study)
        assert not Judgment.objects.exists()
        assert "Before you start" in csrf_client.get(url(study, "consent")).content.decode()

    def test_only_the_owner_may_preview(self, client, make_study, other_researcher):
        study = make_study()
        client.force_login(other_researcher)
        response = client.post(url(study, "preview"))
        assert response.status_code == 404
        assert not Rater.objects.filter(kind=Rater.Kind.PREVIEW).exists()

    def test_the_preview_ends_with_the_login(self, csrf_client, make_study, researcher):
        study = make_study()
        csrf_client.force_login(researcher)
        start_preview(csrf_client, study)
        session = csrf_client.session
        enrollments = session["funnybone_enrollments"]
        csrf_client.logout()
        # The same browser session, now anonymous, holding the preview enrollment id.
        session = csrf_client.session
        session["funnybone_enrollments"] = enrollments
        session.save()
        response = csrf_client.get(url(study, "consent"))
        assert response.status_code == 403
        assert "Please use your study link" in response.content.decode()


class TestStudyPageOffersPreview:
    def test_the_open_study_page_has_the_button(self, client, make_study, researcher):
        study = make_study()
        client.force_login(researcher)
        page = client.get(f"/studies/{study.pk}/").content.decode()
        assert f'action="{url(study, "preview")}"' in page
        assert "Try as a participant" in page

    def test_a_draft_has_none(self, client, make_study, researcher):
        study = make_study(open_=False)
        client.force_login(researcher)
        assert "Try as a participant" not in client.get(f"/studies/{study.pk}/").content.decode()
