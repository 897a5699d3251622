"""Login throttling: a guesser is stopped before the right password, on the site's and the admin's login."""

import io
import time

import pytest
import redis
from django.contrib.auth import authenticate, get_user_model
from django.core.cache import caches
from django.core.cache.backends import locmem
from django.core.management import call_command
from django.test import Client

from annotation.logins import USERNAME_SCOPE
from annotation.ratelimit import _key

pytestmark = pytest.mark.django_db

RIGHT = "rita-password-123"
PAUSED = "Too many failed logins for this account"


def log_in(client: Client, username: str, password: str, url: str = "/accounts/login/"):
    return client.post(url, {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def fail(client: Client, times: int, username: str = "rita") -> None:
    for n in range(times):
        response = log_in(client, username, f"wrong-{n}")
        assert response.status_code == 200
        assert "Please enter a correct username and password" in response.content.decode()


class TestAGuesser:
    def test_forty_wrong_passwords_then_the_right_one_does_not_log_in(self, client, researcher):
        for n in range(40):
            log_in(client, "rita", f"guess-{n}")
        response = log_in(client, "rita", RIGHT)
        assert response.status_code == 429
        assert PAUSED in response.content.decode()
        assert "even with the right password" in response.content.decode()
        assert not logged_in(client)

    def test_the_pause_starts_after_the_configured_number_of_failures(self, client, researcher, settings):
        settings.FUNNYBONE_LOGIN_FAILURE_LIMIT = 3
        fail(client, 3)
        assert log_in(client, "rita", RIGHT).status_code == 429
        assert not logged_in(client)

    def test_a_pause_holds_for_every_client(self, researcher):
        fail(Client(REMOTE_ADDR="198.51.100.1"), 5)
        elsewhere = Client(REMOTE_ADDR="203.0.113.4")
        assert PAUSED in log_in(elsewhere, "rita", RIGHT).content.decode()
        assert not logged_in(elsewhere)

    def test_changing_the_case_of_the_username_does_not_reset_the_count(self, client, researcher):
        fail(client, 3, "RITA")
        fail(client, 2, " Rita")
        assert log_in(client, "rita", RIGHT).status_code == 429

    def test_other_accounts_are_not_paused(self, client, researcher, other_researcher):
        fail(client, 5)
        response = log_in(client, "otto", "otto-password-123")
        assert response.status_code == 302
        assert logged_in(client)

    def test_failures_anywhere_a_password_is_checked_count(self, client, researcher):
        # An API or a command calling authenticate() directly counts the same as the form.
        for n in range(5):
            assert authenticate(username="rita", password=f"wrong-{n}") is None
        assert log_in(client, "rita", RIGHT).status_code == 429


class TestTheCountAndThePauseEnd:
    def test_a_successful_login_clears_the_count(self, researcher):
        first = Client()
        fail(first, 4)
        assert log_in(first, "rita", RIGHT).status_code == 302
        second = Client()
        fail(second, 4)
        assert log_in(second, "rita", RIGHT).status_code == 302
        assert logged_in(second)

    def test_the_pause_is_lifted_when_it_runs_out(self, client, researcher, settings, monkeypatch):
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        fail(client, 5)
        assert log_in(client, "rita", RIGHT).status_code == 429

        class Later:
            @staticmethod
            def time() -> float:
                return time.time() + settings.FUNNYBONE_LOGIN_LOCKOUT_SECONDS + 1

        monkeypatch.setattr(locmem, "time", Later)
        response = log_in(client, "rita", RIGHT)
        assert response.status_code == 302
        assert logged_in(client)

    def test_an_operator_lifts_the_pause(self, client, researcher):
        fail(client, 5)
        assert log_in(client, "rita", RIGHT).status_code == 429
        out = io.StringIO()
        call_command("login_unlock", "rita", stdout=out)
        assert "'rita' may go ahead again" in out.getvalue()
        assert log_in(client, "rita", RIGHT).status_code == 302

    def test_the_pause_in_redis_runs_out(self, client, researcher, settings, redis_cache):
        fail(client, 5)
        assert log_in(client, "rita", RIGHT).status_code == 429
        ttl = redis.Redis.from_url(redis_cache).ttl(caches["default"].make_key(_key(USERNAME_SCOPE, "rita")))
        assert 0 < ttl <= settings.FUNNYBONE_LOGIN_LOCKOUT_SECONDS


class TestOneAddressGuessingManyAccounts:
    def test_the_address_is_paused_but_not_the_accounts_elsewhere(self, researcher, settings):
        settings.FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT = 4
        sprayer = Client(REMOTE_ADDR="198.51.100.9")
        for n in range(4):
            log_in(sprayer, f"user-{n}", "Password1")
        response = log_in(sprayer, "rita", RIGHT)
        assert response.status_code == 429
        assert "Too many failed logins from your network" in response.content.decode()
        assert not logged_in(sprayer)
        colleague = Client(REMOTE_ADDR="203.0.113.8")
        assert log_in(colleague, "rita", RIGHT).status_code == 302

    def test_behind_a_proxy_the_forwarded_address_is_paused(self, researcher, settings):
        settings.FUNNYBONE_TRUSTED_PROXY_COUNT = 1
        settings.FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT = 2
        proxy = "10.0.0.2"
        sprayer = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="198.51.100.9")
        log_in(sprayer, "a", "x")
        log_in(sprayer, "b", "x")
        assert log_in(sprayer, "rita", RIGHT).status_code == 429
        colleague = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.8")
        assert log_in(colleague, "rita", RIGHT).status_code == 302


class TestTheAdminLogin:
    def test_it_is_paused_the_same_way(self, client, researcher):
        get_user_model().objects.filter(pk=researcher.pk).update(is_staff=True, is_superuser=True)
        for n in range(5):
            log_in(client, "rita", f"wrong-{n}", url="/admin/login/")
        response = log_in(client, "rita", RIGHT, url="/admin/login/")
        assert PAUSED in response.content.decode()
        assert not logged_in(client)
        assert client.get("/admin/").status_code == 302  # still sent to the login page
