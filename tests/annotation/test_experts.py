"""Expert onboarding: an invitation link creates the expert's account or signs them in, accepts, and resumes."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotation.expert_panel import expert_studies, invitations_with_progress
from annotation.forms import USERNAME_UNUSABLE
from annotation.models import Enrollment, Invitation, Judgment, Rater
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import expert_rater, invitation_accept, invitation_create
from annotation.services.judgments import judgment_submit
from annotation.services.studies import study_set_state
from tests.annotation.test_annotator_flow import csrf_from, post_from_page, url

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "laughing-gas-2026"


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def expert(db):
    # An expert's account as sign-up makes it: with its expert rater (a bare account is a researcher's).
    user = get_user_model().objects.create_user("erin", "erin@example.org", "erin-password-123", first_name="Erin")
    expert_rater(user=user)
    return user


def invite_url(invitation) -> str:
    return f"/invite/{invitation.token}/"


def sign_up(client, invitation, **fields):
    page = client.get(invite_url(invitation))
    data = {
        "name": "Dr. Erin Expert",
        "email": "erin@example.org",
        "username": "erin-e",
        "password1": GOOD_PASSWORD,
        "password2": GOOD_PASSWORD,
        **fields,
        "csrfmiddlewaretoken": csrf_from(page),
    }
    return client.post(invite_url(invitation), data)


class TestSignUpFromTheLink:
    def test_a_stranger_sees_the_study_and_a_form_to_create_an_account(self, client, make_study):
        study = make_study(name="Pun panel")
        invitation = invitation_create(study=study, name="Dr. Erin Expert")
        response = client.get(invite_url(invitation))
        html = response.content.decode()
        assert response.status_code == 200
        assert "Pun panel" in html and "This invitation is for Dr. Erin Expert." in html
        assert 'name="password1"' in html and 'name="username"' in html
        assert f'href="/accounts/login/?next={invite_url(invitation)}"' in html
        assert not get_user_model().objects.filter(username="erin-e").exists()

    def test_creating_the_account_accepts_and_starts_at_consent(self, make_study):
        study = make_study()
        invitation = invitation_create(study=study)
        client = Client(enforce_csrf_checks=True)
        response = sign_up(client, invitation)
        assert response.status_code == 302
        assert response["Location"] == url(study, "consent")
        user = get_user_model().objects.get(username="erin-e")
        assert user.check_password(GOOD_PASSWORD) and user.get_full_name() == "Dr. Erin Expert"
        assert not user.is_staff
        invitation.refresh_from_db()
        assert invitation.rater.user == user and invitation.rater.kind == Rater.Kind.EXPERT
        assert invitation.rater.name == "Dr. Erin Expert"
        assert Enrollment.objects.get(study=study).rater == invitation.rater
        # Signed in and enrolled: the study's steps open.
        assert client.get(url(study, "consent")).status_code == 200

    @pytest.mark.parametrize(
        ("fields", "field", "message"),
        [
            ({"password1": "short", "password2": "short"}, "password2", "too short"),
            ({"password1": "password123", "password2": "password123"}, "password2", "too common"),
            ({"password1": "12345678901", "password2": "12345678901"}, "password2", "entirely numeric"),
            ({"password2": "something-else-2026"}, "password2", "didn’t match"),
            ({"password1": "erin-e-2026", "password2": "erin-e-2026"}, "password2", "too similar"),
            ({"name": ""}, "name", "required"),
            ({"username": "rita"}, "username", "cannot be used"),
        ],
    )
    def test_it_refuses_a_bad_account_with_the_fields_message_and_writes_nothing(
        self, client, make_study, fields, field, message
    ):
        invitation = invitation_create(study=make_study())
        users_before = get_user_model().objects.count()
        response = sign_up(client, invitation, **fields)
        assert response.status_code == 400
        assert message in " ".join(response.context["form"].errors[field])
        assert get_user_model().objects.count() == users_before
        invitation.refresh_from_db()
        assert invitation.rater is None and not Rater.objects.exists()

    def test_the_signup_needs_the_csrf_token(self, make_study):
        invitation = invitation_create(study=make_study())
        client = Client(enforce_csrf_checks=True)
        client.get(invite_url(invitation))
        data = {"name": "X", "username": "x-user", "password1": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
        response = client.post(invite_url(invitation), data)
        assert response.status_code == 403
        assert not get_user_model().objects.filter(username="x-user").exists()

    def test_an_accepted_link_sends_a_stranger_to_sign_in_not_to_sign_up(self, client, make_study, expert):
        invitation = invitation_create(study=make_study())
        invitation_accept(invitation=invitation, user=expert)
        response = client.get(invite_url(invitation))
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={invite_url(invitation)}"
        posted = client.post(invite_url(invitation), {"username": "intruder", "password1": GOOD_PASSWORD})
        assert posted.status_code == 302 and "/accounts/login/" in posted["Location"]
        assert not get_user_model().objects.filter(username="intruder").exists()

    def test_a_closed_study_takes_no_new_experts(self, client, make_study):
        study = make_study()
        invitation = invitation_create(study=study)
        study_set_state(study=study, state=study.State.CLOSED)
        response = client.get(invite_url(invitation))
        assert "no longer accepting" in response.content.decode()
        assert 'name="password1"' not in response.content.decode()

    def test_an_unknown_token_is_404(self, client):
        assert client.get("/invite/not-a-real-token/").status_code == 404


class TestSignUpDoesNotSayWhichUsernamesExist:
    """Someone holding an invitation link must not learn from the form which accounts exist."""

    def errors(self, client, invitation, **fields) -> dict:
        response = sign_up(client, invitation, **fields)
        assert response.status_code == 400
        return {field: list(messages) for field, messages in response.context["form"].errors.items()}

    def test_a_probe_with_a_bad_password_reads_the_same_for_a_taken_and_a_free_username(
        self, client, make_study, researcher
    ):
        invitation = invitation_create(study=make_study())
        bad = {"password1": "short", "password2": "short"}
        taken = self.errors(client, invitation, username=researcher.username, **bad)
        free = self.errors(client, invitation, username="nobody-has-this-name", **bad)
        assert taken == free and "username" not in taken
        assert not get_user_model().objects.filter(username="nobody-has-this-name").exists()

    def test_a_taken_username_in_any_case_gets_a_message_that_does_not_say_it_exists(
        self, client, make_study, researcher
    ):
        invitation = invitation_create(study=make_study())
        for spelling in (researcher.username, researcher.username.upper()):
            (message,) = self.errors(client, invitation, username=spelling)["username"]
            assert message == str(USERNAME_UNUSABLE)
            assert "exist" not in message and "taken" not in message
        invitation.refresh_from_db()
        assert invitation.rater is None

    def test_a_username_taken_a_moment_ago_reads_the_same(self, client, make_study, monkeypatch):
        # Free when the form checked it, taken by another request before the insert.
        invitation = invitation_create(study=make_study())
        get_user_model().objects.create_user("racer", password=GOOD_PASSWORD)
        monkeypatch.setattr("annotation.forms.username_unusable", lambda username: False)
        (message,) = self.errors(client, invitation, username="racer")["username"]
        assert message == str(USERNAME_UNUSABLE)


class TestSignInAndAccept:
    def test_a_signed_in_expert_accepts_with_a_click(self, client, make_study, expert):
        study = make_study()
        invitation = invitation_create(study=study)
        client.force_login(expert)
        page = client.get(invite_url(invitation))
        assert page.status_code == 200
        assert "You are signed in as erin." in page.content.decode()
        assert 'id="researcher-account"' not in page.content.decode()  # an expert's account, not a researcher's
        assert not Enrollment.objects.exists()  # opening the link accepts nothing
        response = client.post(invite_url(invitation), {"decision": "accept"})
        assert response["Location"] == url(study, "consent")
        enrollment = Enrollment.objects.get(study=study)
        assert (enrollment.rater.kind, enrollment.rater.user) == (Rater.Kind.EXPERT, expert)

    def test_signing_in_from_the_link_comes_back_to_it(self, make_study, expert):
        invitation = invitation_create(study=make_study())
        client = Client()
        login_page = client.get(f"/accounts/login/?next={invite_url(invitation)}")
        response = client.post(
            "/accounts/login/",
            {
                "username": "erin",
                "password": "erin-password-123",
                "next": invite_url(invitation),
                "csrfmiddlewaretoken": csrf_from(login_page),
            },
        )
        assert response["Location"] == invite_url(invitation)

    def test_the_login_an_invitation_sends_to_speaks_the_studys_language(self, make_study, expert):
        study = make_study()
        study.config = {**study.config, "language": "ja"}
        study.save(update_fields=["config"])
        invitation = invitation_create(study=study)
        invitation_accept(invitation=invitation, user=expert)
        client = Client()
        # The accepted link sends the expert, signed out, to log in first.
        login_url = client.get(invite_url(invitation))["Location"]
        page = client.get(login_url)
        html = page.content.decode()
        assert page["Content-Language"] == "ja" and '<html lang="ja">' in html
        assert "ログイン" in html and "パスワード" in html and "Password" not in html
        wrong = client.post(
            "/accounts/login/",
            {
                "username": "erin",
                "password": "not-it",
                "next": invite_url(invitation),
                "csrfmiddlewaretoken": csrf_from(page),
            },
        )
        # Django's own message for a wrong password, in Japanese; the person stays on the page.
        assert wrong.status_code == 200 and wrong["Content-Language"] == "ja"
        assert "Please enter a correct" not in wrong.content.decode()
        right = client.post(
            "/accounts/login/",
            {
                "username": "erin",
                "password": "erin-password-123",
                "next": invite_url(invitation),
                "csrfmiddlewaretoken": csrf_from(page),
            },
        )
        assert right["Location"] == invite_url(invitation)

    def test_a_login_page_not_sent_by_an_invitation_stays_english(self, client, make_study):
        study = make_study()
        study.config = {**study.config, "language": "zh"}
        study.save(update_fields=["config"])
        targets = ("", "?next=/studies/", f"?next=/s/{study.entry_token}/item/", "?next=/invite/no-such-token/")
        for target in targets:
            page = client.get(f"/accounts/login/{target}")
            assert page.status_code == 200 and page["Content-Language"] == "en", target
            assert "Log in" in page.content.decode()

    def test_a_hostile_next_on_the_login_form_is_not_a_server_error(self, make_study):
        client = Client()
        page = client.get("/accounts/login/")
        for target in ("/invite/a\x00b/", "/invite/" + "x" * 5000 + "/", "//evil.example/invite/x/", "no-slash"):
            posted = client.post(
                "/accounts/login/",
                {"username": "nobody", "password": "wrong", "next": target, "csrfmiddlewaretoken": csrf_from(page)},
            )
            assert posted.status_code in (200, 400), target
            assert posted["Content-Language"] == "en", target

    def test_an_invitation_accepted_by_someone_else_is_refused(self, client, make_study, expert, researcher):
        invitation = invitation_create(study=make_study())
        client.force_login(researcher)
        client.post(invite_url(invitation), {"decision": "accept"})
        other = Client()
        other.force_login(expert)
        for response in (other.get(invite_url(invitation)), other.post(invite_url(invitation), {"decision": "accept"})):
            assert response.status_code == 403
            assert "already accepted" in response.content.decode()
        assert not Invitation.objects.filter(rater__user=expert).exists()

    def test_two_accepts_of_one_link_leave_one_expert(self, make_study, expert, researcher):
        from django.core.exceptions import ValidationError

        invitation = invitation_create(study=make_study())
        invitation_accept(invitation=invitation, user=expert)
        stale = Invitation.objects.get(pk=invitation.pk)
        stale.rater_id = None  # as read by a second request before the first accepted
        with pytest.raises(ValidationError):
            invitation_accept(invitation=stale, user=researcher)
        invitation.refresh_from_db()
        assert invitation.rater.user == expert

    def test_the_expert_loses_access_when_signed_out(self, client, make_study, expert):
        study = make_study()
        invitation = invitation_create(study=study)
        client.force_login(expert)
        client.post(invite_url(invitation), {"decision": "accept"})
        enrollments = client.session["funnybone_enrollments"]
        client.logout()
        # Even a copy of the old session data grants nothing without the account.
        saved = client.session
        saved["funnybone_enrollments"] = enrollments
        saved.save()
        assert client.get(url(study, "consent")).status_code == 403


class TestPauseAndReturn:
    def _expert_at_work(self, client, make_study, expert, answers=2):
        study = make_study(n_items=4, quota_per_item=3)
        invitation = invitation_create(study=study, name="Erin")
        client.force_login(expert)
        client.post(invite_url(invitation), {"decision": "accept"})
        enrollment = Enrollment.objects.get(study=study)
        client.post(url(study, "consent"), {"decision": "agree"})
        client.post(url(study, "instructions"))
        for _ in range(answers):
            held = next_assignment(enrollment=enrollment).assignment
            judgment_submit(assignment=held, rater=enrollment.rater, value={"rating": 2})
        return study, invitation, enrollment

    def test_the_link_brings_the_expert_back_to_their_next_item(self, client, make_study, expert):
        study, invitation, _ = self._expert_at_work(client, make_study, expert)
        client.logout()
        client.force_login(expert)
        response = client.get(invite_url(invitation), follow=True)
        assert response.redirect_chain[-1][0] == url(study, "item")
        assert "2 of 4 done" in response.content.decode()

    def test_signing_in_without_the_link_lands_on_the_experts_studies(self, make_study, expert):
        client = Client()
        study, invitation, _ = self._expert_at_work(client, make_study, expert)
        client.logout()
        login_page = client.get("/accounts/login/")
        response = client.post(
            "/accounts/login/",
            {"username": "erin", "password": "erin-password-123", "csrfmiddlewaretoken": csrf_from(login_page)},
        )
        assert response["Location"] == reverse("annotator:expert_home")
        home = client.get(response["Location"]).content.decode()
        assert study.name in home and "2 of 4" in home
        assert f'href="{invite_url(invitation)}"' in home

    def test_a_researcher_still_lands_on_the_researcher_pages(self, researcher):
        client = Client()
        login_page = client.get("/accounts/login/")
        response = client.post(
            "/accounts/login/",
            {"username": "rita", "password": "rita-password-123", "csrfmiddlewaretoken": csrf_from(login_page)},
        )
        assert response["Location"] == reverse("researcher:study_list")

    def test_the_item_page_offers_the_expert_a_pause(self, client, make_study, expert):
        study, _invitation, _ = self._expert_at_work(client, make_study, expert, answers=0)
        html = client.get(url(study, "item")).content.decode()
        assert f'href="{reverse("annotator:expert_home")}"' in html and "Pause" in html

    def test_the_experts_studies_page_needs_an_account(self, client):
        response = client.get(reverse("annotator:expert_home"))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    def test_the_experts_studies_lists_only_their_own(self, client, make_study, expert, researcher):
        self._expert_at_work(client, make_study, expert)
        other = get_user_model().objects.create_user("olga", password="olga-password-123")
        assert expert_studies(user=other) == []
        [row] = expert_studies(user=expert)
        assert (row.progress.done, row.finished) == (2, False)


class TestResearcherSeesThePanel:
    def test_the_study_page_lists_invitations_with_acceptance_and_progress(self, make_study, expert):
        study = make_study(n_items=3, quota_per_item=2)
        accepted = invitation_create(study=study, name="Erin", email="erin@example.org")
        invitation_create(study=study, name="Pat (not yet)")
        enrollment = invitation_accept(invitation=accepted, user=expert)
        held = next_assignment(enrollment=enrollment).assignment
        judgment_submit(assignment=held, rater=enrollment.rater, value={"rating": 1})

        rows = {i.name: i for i in invitations_with_progress(study=study)}
        assert rows["Erin"].n_judged == 1 and rows["Erin"].last_answer_at == Judgment.objects.get().created_at
        assert rows["Pat (not yet)"].n_judged == 0 and rows["Pat (not yet)"].accepted_at is None

        owner = Client()
        owner.force_login(study.owner)
        html = owner.get(reverse("researcher:study_detail", args=[study.pk])).content.decode()
        assert "Pat (not yet)" in html and "not yet" in html
        assert "Erin on" in html and "1 of 3" in html

    def test_the_researcher_names_the_invitation(self, make_study):
        study = make_study()
        owner = Client()
        owner.force_login(study.owner)
        owner.post(reverse("researcher:invitation_new", args=[study.pk]), {"name": "Prof. Ha Ha", "email": ""})
        assert Invitation.objects.get().name == "Prof. Ha Ha"


class TestAResearcherWhoRatesForAColleague:
    """A researcher accepting an expert invitation keeps her researcher account (the pages and the API)."""

    def test_the_invitation_page_tells_her_that_her_account_stays_a_researchers(
        self, client, make_study, other_researcher, researcher
    ):
        invitation = invitation_create(study=make_study(owner=other_researcher))
        client.force_login(researcher)
        page = client.get(invite_url(invitation)).content.decode()
        assert 'id="researcher-account"' in page and "your own studies, the researcher pages and the API stay" in page

    def test_after_accepting_her_studies_page_and_the_api_still_answer(
        self, client, make_study, other_researcher, researcher
    ):
        # Rita has no study of her own yet: nothing but her account said she was a researcher.
        study = make_study(owner=other_researcher)
        invitation = invitation_create(study=study)
        client.force_login(researcher)
        accepted = post_from_page(client, invite_url(invitation), {"decision": "accept"})
        assert accepted.status_code == 302 and accepted["Location"] == url(study, "consent")
        assert client.get(reverse("researcher:study_list")).status_code == 200
        assert client.get(reverse("api:study_list")).status_code == 200
        # And she is the study's expert too.
        assert Enrollment.objects.get(study=study).rater.user == researcher
        assert client.get(url(study, "consent")).status_code == 200

    def test_an_expert_account_made_by_the_link_is_no_researcher(self, make_study):
        study = make_study()
        client = Client()
        assert sign_up(client, invitation_create(study=study)).status_code == 302
        assert client.get(reverse("researcher:study_list")).status_code == 403
        assert client.get(reverse("api:study_list")).status_code == 403
