"""The researcher's pages: own studies only, CSRF on every change, live progress via htmx."""

import json
import re

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Invitation, Item, ItemImport, Study
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker, enrollment_complete, expert_rater
from annotation.services.judgments import judgment_submit
from annotation.services.studies import ItemSpec, items_create, study_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def draft(researcher):
    return study_create(owner=researcher, name="Draft study", task_type="ordinal")


@pytest.fixture
def ottos_study(make_study, other_researcher):
    return make_study(owner=other_researcher, name="Otto's secret study")


def csrf_post(csrf_client, user, page_url, post_url, data):
    """POST like a browser: load the page for the CSRF cookie, then send its token."""
    csrf_client.force_login(user)
    csrf_client.get(page_url)
    token = csrf_client.cookies["csrftoken"].value
    return csrf_client.post(post_url, {**data, "csrfmiddlewaretoken": token})


class TestLoginPage:
    def test_it_shows_the_form(self, client):
        response = client.get(reverse("login"))
        assert response.status_code == 200
        assert b'name="username"' in response.content

    def test_logging_in_lands_on_the_study_list(self, client, researcher):
        response = client.post(reverse("login"), {"username": "rita", "password": "rita-password-123"})
        assert response.status_code == 302
        assert response["Location"] == reverse("researcher:study_list")


class TestEveryResearcherPage:
    @pytest.mark.parametrize(
        "name",
        [
            "study_detail",
            "study_items",
            "progress",
            "study_download",
        ],
    )
    def test_anonymous_visitors_are_sent_to_log_in(self, client, draft, name):
        response = client.get(reverse(f"researcher:{name}", args=[draft.pk]))
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))

    @pytest.mark.parametrize(("name", "data"), [("study_state", {"state": "open"}), ("invitation_new", {"email": ""})])
    def test_anonymous_posts_change_nothing(self, client, make_study, name, data):
        study = make_study(open_=False)
        response = client.post(reverse(f"researcher:{name}", args=[study.pk]), data)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
        study.refresh_from_db()
        assert study.state == "draft"
        assert not Invitation.objects.exists()


class TestStudyList:
    def test_anonymous_visitors_are_sent_to_log_in(self, client):
        response = client.get(reverse("researcher:study_list"))
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))

    def test_it_lists_only_the_researchers_own_studies(self, rita, draft, ottos_study):
        response = rita.get(reverse("researcher:study_list"))
        assert b"Draft study" in response.content
        assert b"Otto&#x27;s secret study" not in response.content

    def test_an_expert_annotator_account_is_refused(self, client):
        expert = get_user_model().objects.create_user("eve", password="eve-password-123")
        expert_rater(user=expert)
        client.force_login(expert)
        assert client.get(reverse("researcher:study_list")).status_code == 403


class TestStudyNew:
    url = reverse("researcher:study_new")

    def form(self, **overrides):
        data = {
            "name": "Pairs",
            "task_type": "pairwise",
            "config": "",
            "quota_per_item": 3,
            "item_order": "random_per_rater",
            "attention_check_rate": 0,
            "attention_check_policy": "flag",
            "attention_check_max_failures": 0,
            "min_seconds_per_item": 0,
        }
        return {**data, **overrides}

    def test_it_creates_a_study_with_the_task_types_defaults(self, rita, researcher):
        response = rita.post(self.url, self.form())
        study = Study.objects.get()
        assert response["Location"] == reverse("researcher:study_items", args=[study.pk])
        assert (study.owner, study.task_type, study.config["labels"]) == (researcher, "pairwise", ["A", "B", "Tie"])

    def test_it_takes_the_config_as_json(self, rita):
        config = {"labels": ["Explanation 1", "Explanation 2", "Equally good"], "allow_tie": True}
        rita.post(self.url, self.form(config=json.dumps(config)))
        assert Study.objects.get().config["labels"] == config["labels"]

    @pytest.mark.parametrize(
        ("config", "message"),
        [
            ("{not json", "This is not valid JSON"),
            ("[1, 2]", "The configuration must be a JSON object"),
            ('{"labels": ["A", "B"]}', "Pairwise labels must be three names"),
            ('{"allow_ties": false}', "Unknown setting &#x27;allow_ties&#x27; (did you mean &#x27;allow_tie&#x27;?)"),
        ],
    )
    def test_it_explains_a_bad_config_and_creates_nothing(self, rita, config, message):
        response = rita.post(self.url, self.form(config=config))
        assert response.status_code == 400
        assert message.encode() in response.content
        assert Study.objects.count() == 0

    def test_it_rejects_an_attention_rate_of_one_or_more(self, rita):
        response = rita.post(self.url, self.form(attention_check_rate=1))
        assert b"Must be a share from 0 up to" in response.content
        assert Study.objects.count() == 0

    def test_it_needs_the_csrf_token(self, csrf_client, researcher):
        csrf_client.force_login(researcher)
        assert csrf_client.post(self.url, self.form()).status_code == 403
        assert Study.objects.count() == 0
        response = csrf_post(csrf_client, researcher, self.url, self.url, self.form())
        assert response.status_code == 302
        assert Study.objects.count() == 1


class TestStudyDetail:
    def settings_form(self, study, **overrides):
        data = {
            "name": study.name,
            "description": "",
            "protocol": "",
            "config": json.dumps(study.config),
            "quota_per_item": study.quota_per_item,
            "item_order": study.item_order,
            "attention_check_rate": study.attention_check_rate,
            "attention_check_policy": study.attention_check_policy,
            "attention_check_max_failures": study.attention_check_max_failures,
            "min_seconds_per_item": study.min_seconds_per_item,
            "consent_text": "",
            "instructions_text": "",
            "completion_redirect_url": "",
        }
        return {**data, **overrides}

    def test_it_shows_the_crowd_link_with_prolifics_placeholders(self, rita, draft):
        response = rita.get(reverse("researcher:study_detail", args=[draft.pk]))
        expected = (
            f"http://testserver/s/{draft.entry_token}/"
            "?PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"
        )
        assert expected.encode() in response.content
        assert b'data-copy="entry-link"' in response.content

    def test_another_researchers_study_is_not_found(self, rita, ottos_study):
        assert rita.get(reverse("researcher:study_detail", args=[ottos_study.pk])).status_code == 404

    def test_it_saves_settings(self, rita, draft):
        url = reverse("researcher:study_detail", args=[draft.pk])
        response = rita.post(url, self.settings_form(draft, quota_per_item=5, name="Renamed"))
        assert response.status_code == 302
        draft.refresh_from_db()
        assert (draft.quota_per_item, draft.name) == (5, "Renamed")

    def test_it_sets_the_completion_code_and_keeps_it_when_left_empty(self, rita, draft):
        url = reverse("researcher:study_detail", args=[draft.pk])
        rita.post(url, self.settings_form(draft, completion_code="C1ABCD"))
        draft.refresh_from_db()
        assert draft.completion_code == "C1ABCD"
        rita.post(url, self.settings_form(draft, completion_code=""))
        draft.refresh_from_db()
        assert draft.completion_code == "C1ABCD"

    def test_it_refuses_a_config_change_once_judgments_exist(self, rita, make_study):
        study = make_study()
        enrollment = enroll_crowdworker(study=study, participant_id="p1")
        judgment_submit(
            assignment=next_assignment(enrollment=enrollment).assignment, rater=enrollment.rater, value={"rating": 1}
        )
        changed = {"points": [1, 2, 3], "labels": ["a", "b", "c"]}
        url = reverse("researcher:study_detail", args=[study.pk])
        response = rita.post(url, self.settings_form(study, config=json.dumps(changed)))
        assert response.status_code == 400
        assert b"The task configuration cannot change once judgments exist." in response.content
        study.refresh_from_db()
        assert study.config["points"] == [0, 1, 2, 3]

    def test_another_researcher_cannot_change_the_settings(self, rita, ottos_study):
        url = reverse("researcher:study_detail", args=[ottos_study.pk])
        assert rita.post(url, self.settings_form(ottos_study, name="Hijacked")).status_code == 404
        ottos_study.refresh_from_db()
        assert ottos_study.name == "Otto's secret study"

    def test_it_needs_the_csrf_token(self, csrf_client, researcher, draft):
        csrf_client.force_login(researcher)
        url = reverse("researcher:study_detail", args=[draft.pk])
        assert csrf_client.post(url, self.settings_form(draft, name="No token")).status_code == 403
        draft.refresh_from_db()
        assert draft.name == "Draft study"


class TestStudyState:
    def url(self, study):
        return reverse("researcher:study_state", args=[study.pk])

    def test_it_opens_a_study_with_items(self, rita, make_study):
        study = make_study(open_=False)
        response = rita.post(self.url(study), {"state": "open"}, follow=True)
        study.refresh_from_db()
        assert study.state == "open"
        assert b"The study is now open." in response.content

    def test_it_explains_why_a_study_without_items_cannot_open(self, rita, draft):
        response = rita.post(self.url(draft), {"state": "open"}, follow=True)
        assert b"Add items before opening the study." in response.content
        draft.refresh_from_db()
        assert draft.state == "draft"

    def test_it_closes_an_open_study(self, rita, make_study):
        study = make_study()
        rita.post(self.url(study), {"state": "closed"})
        study.refresh_from_db()
        assert study.state == "closed"

    def test_it_only_accepts_post(self, rita, draft):
        assert rita.get(self.url(draft)).status_code == 405

    def test_another_researcher_cannot_close_the_study(self, rita, ottos_study):
        assert rita.post(self.url(ottos_study), {"state": "closed"}).status_code == 404
        ottos_study.refresh_from_db()
        assert ottos_study.state == "open"

    def test_it_needs_the_csrf_token(self, csrf_client, researcher, make_study):
        study = make_study()
        csrf_client.force_login(researcher)
        assert csrf_client.post(self.url(study), {"state": "closed"}).status_code == 403
        study.refresh_from_db()
        assert study.state == "open"
        detail = reverse("researcher:study_detail", args=[study.pk])
        assert csrf_post(csrf_client, researcher, detail, self.url(study), {"state": "closed"}).status_code == 302
        study.refresh_from_db()
        assert study.state == "closed"


class TestStudyItems:
    def url(self, study):
        return reverse("researcher:study_items", args=[study.pk])

    def test_an_uploaded_csv_is_imported_and_the_result_shown(self, rita, draft):
        upload = SimpleUploadedFile("jokes.csv", b"id,text,gold\nj1,A joke,2\nj2,Another,\n")
        response = rita.post(self.url(draft), {"file": upload}, follow=True)
        assert b"2 items imported" in response.content
        assert list(draft.items.values_list("external_id", flat=True)) == ["j1", "j2"]
        assert b"j1" in rita.get(self.url(draft)).content

    def test_a_bad_file_lists_every_row_problem_and_imports_nothing(self, rita, draft):
        upload = SimpleUploadedFile("jokes.csv", b"id,text,gold\nj1,A joke,7\nj1,Again,\n")
        response = rita.post(self.url(draft), {"file": upload}, follow=True)
        assert b"Nothing was imported" in response.content
        assert b"Row 2: gold answer: The rating 7 is outside the scale (0, 1, 2, 3)." in response.content
        assert b"Row 3: duplicate item id &#x27;j1&#x27;; Row 2 already uses it." in response.content
        assert draft.items.count() == 0

    def test_a_file_of_the_wrong_type_is_refused_on_the_form(self, rita, draft):
        response = rita.post(self.url(draft), {"file": SimpleUploadedFile("jokes.docx", b"PK")})
        assert response.status_code == 400
        assert b"Unsupported file type &#x27;.docx&#x27;" in response.content
        assert ItemImport.objects.count() == 0

    def test_a_file_over_the_size_limit_is_refused_on_the_form(self, rita, draft, settings):
        settings.FUNNYBONE_IMPORT_MAX_BYTES = 10
        response = rita.post(self.url(draft), {"file": SimpleUploadedFile("jokes.csv", b"id,text\nj1,A joke\n")})
        assert response.status_code == 400
        assert b"the largest file accepted is" in response.content
        assert ItemImport.objects.count() == 0
        assert draft.items.count() == 0

    def test_another_researcher_cannot_upload_into_the_study(self, rita, ottos_study):
        before = ottos_study.items.count()
        upload = SimpleUploadedFile("jokes.csv", b"id,text\nintruder,x\n")
        assert rita.post(self.url(ottos_study), {"file": upload}).status_code == 404
        assert ottos_study.items.count() == before
        assert not Item.objects.filter(external_id="intruder").exists()

    def test_it_needs_the_csrf_token(self, csrf_client, researcher, draft):
        csrf_client.force_login(researcher)
        upload = SimpleUploadedFile("jokes.csv", b"id,text\nj1,x\n")
        assert csrf_client.post(self.url(draft), {"file": upload}).status_code == 403
        assert draft.items.count() == 0


class TestImportStatus:
    def queued_import(self, study, researcher):
        item_import = ItemImport(study=study, original_name="big.csv", format="csv", created_by=researcher)
        item_import.file.save("big.csv", SimpleUploadedFile("big.csv", b"id,text\nj1,x\n"), save=False)
        item_import.save()
        return item_import

    def test_a_queued_import_polls_with_htmx_and_the_partial_comes_alone(self, rita, researcher, draft):
        item_import = self.queued_import(draft, researcher)
        url = reverse("researcher:import_status", args=[draft.pk, item_import.pk])
        page = rita.get(url)
        assert b'hx-trigger="every 2s"' in page.content
        partial = rita.get(url, headers={"HX-Request": "true"})
        assert partial.content.lstrip().startswith(b'<section id="import-status"')
        assert b"<html" not in partial.content
        assert b"being imported in the background" in partial.content

    def test_a_finished_import_stops_polling(self, rita, researcher, draft):
        item_import = self.queued_import(draft, researcher)
        ItemImport.objects.filter(pk=item_import.pk).update(status="done", items_created=1)
        partial = rita.get(
            reverse("researcher:import_status", args=[draft.pk, item_import.pk]), headers={"HX-Request": "true"}
        )
        assert b"hx-trigger" not in partial.content
        assert b"1 item imported" in partial.content

    def test_another_researchers_import_is_not_found(self, rita, other_researcher, ottos_study):
        item_import = self.queued_import(ottos_study, other_researcher)
        url = reverse("researcher:import_status", args=[ottos_study.pk, item_import.pk])
        assert rita.get(url).status_code == 404


class TestProgress:
    @pytest.fixture
    def study(self, researcher):
        study = study_create(
            owner=researcher,
            name="Checked",
            task_type="ordinal",
            quota_per_item=2,
            attention_check_rate=0.5,
            min_seconds_per_item=5,
        )
        items_create(
            study=study,
            items=[
                ItemSpec(external_id="a", text="A"),
                ItemSpec(external_id="b", text="B"),
                ItemSpec(external_id="check", text="Pick 3", gold={"rating": 3}, is_attention_check=True),
            ],
        )
        study.state = "open"
        study.save()
        careless = enroll_crowdworker(study=study, participant_id="careless")
        careful = enroll_crowdworker(study=study, participant_id="careful")
        for enrollment, check_answer in ((careless, 0), (careful, 3)):
            regular = next_assignment(enrollment=enrollment).assignment
            judgment_submit(assignment=regular, rater=enrollment.rater, value={"rating": 1}, duration_ms=900)
            check = next_assignment(enrollment=enrollment).assignment
            assert check.item.is_attention_check
            judgment_submit(assignment=check, rater=enrollment.rater, value={"rating": check_answer}, duration_ms=9000)
        enrollment_complete(enrollment=careful)
        return study

    def test_the_page_polls_every_five_seconds(self, rita, study):
        response = rita.get(reverse("researcher:progress", args=[study.pk]))
        assert b'hx-trigger="every 5s"' in response.content
        assert b"<html" in response.content

    def test_an_htmx_request_gets_only_the_partial_with_the_counts(self, rita, study):
        response = rita.get(reverse("researcher:progress", args=[study.pk]), headers={"HX-Request": "true"})
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="progress"')
        assert "<html" not in html
        assert "<strong>50.0%</strong> complete: 2 of 4 judgments" in html
        assert "2 raters, 1 finished, 1 excluded." in html
        assert "failed 1 attention check(s)" in html

    def test_per_rater_rows_show_checks_speed_and_exclusion(self, rita, study):
        html = rita.get(
            reverse("researcher:progress", args=[study.pk]), headers={"HX-Request": "true"}
        ).content.decode()
        cells = re.sub(r">\s+<", "><", html)
        # rater, kind, judgments, checks passed, checks failed, too fast, excluded, finished
        assert (
            '<td>careless</td><td>crowd</td><td>1</td><td>0</td><td><span class="badge bad">1</span></td>'
            '<td>1</td><td><span class="badge bad">excluded</span> failed 1 attention check(s)</td>'
        ) in cells
        assert "<td>careful</td><td>crowd</td><td>1</td><td>1</td><td>0</td><td>1</td><td>no</td>" in cells

    def test_another_researchers_progress_is_not_found(self, rita, ottos_study):
        assert rita.get(reverse("researcher:progress", args=[ottos_study.pk])).status_code == 404


class TestInvitationNew:
    def url(self, study):
        return reverse("researcher:invitation_new", args=[study.pk])

    def test_it_creates_an_invitation_link(self, rita, draft):
        response = rita.post(self.url(draft), {"email": "expert@example.org"}, follow=True)
        invitation = Invitation.objects.get()
        assert (invitation.study, invitation.email) == (draft, "expert@example.org")
        assert f"http://testserver/invite/{invitation.token}/".encode() in response.content

    def test_another_researcher_cannot_invite_to_the_study(self, rita, ottos_study):
        assert rita.post(self.url(ottos_study), {"email": ""}).status_code == 404
        assert Invitation.objects.count() == 0

    def test_it_needs_the_csrf_token(self, csrf_client, researcher, draft):
        csrf_client.force_login(researcher)
        assert csrf_client.post(self.url(draft), {"email": ""}).status_code == 403
        assert Invitation.objects.count() == 0


class TestStudyDownload:
    def test_it_returns_the_study_as_a_study_file(self, rita, make_study):
        study = make_study(name="Downloadable")
        response = rita.get(reverse("researcher:study_download", args=[study.pk]))
        assert response["Content-Disposition"] == f'attachment; filename="{study.slug}.yaml"'
        assert response.streaming
        data = yaml.safe_load(b"".join(response.streaming_content))
        assert data["name"] == "Downloadable"
        assert [i["id"] for i in data["items"]] == ["item-0", "item-1", "item-2", "item-3"]

    def test_another_researchers_study_is_not_found(self, rita, ottos_study):
        assert rita.get(reverse("researcher:study_download", args=[ottos_study.pk])).status_code == 404
