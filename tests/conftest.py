"""Shared fixtures: named users, a CSRF-enforcing client and a study builder."""

import os

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state

# Playwright's sync API runs an event loop in the test thread; Django's ORM
# refuses that unless told it is safe (each call still runs synchronously).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# The fake model servers and llama.cpp listen on loopback, which judges may not call unless allowed
# (judging.outbound). The environment carries it to the Celery workers the tests start; the fixture
# below to this process, whose settings were read before this file.
LOOPBACK_NETWORKS = ["127.0.0.0/8", "::1/128"]
os.environ.setdefault("FUNNYBONE_OUTBOUND_ALLOW_NETWORKS", ",".join(LOOPBACK_NETWORKS))


def using_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def require_postgres() -> None:
    """Skip locally without PostgreSQL; in CI (FUNNYBONE_REQUIRE_SERVICES=1) fail instead."""
    if using_postgres():
        return
    if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
        pytest.fail("This test needs PostgreSQL: set DATABASE_URL (CI always does).")
    pytest.skip("needs PostgreSQL (set DATABASE_URL)")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The default hasher is deliberately slow; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _judges_may_call_loopback(settings):
    settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = LOOPBACK_NETWORKS


@pytest.fixture(autouse=True)
def _retry_by_tries_only(settings):
    # Judge tests anywhere count tries against a server that keeps failing; the time budget, which
    # would keep such a server retried for two minutes, is set by the tests about it
    # (tests/judging/test_retry_policy.py). Workers started as processes keep the real default.
    settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 0


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create_user("rita", "rita@example.org", "rita-password-123")


@pytest.fixture
def other_researcher(db):
    return get_user_model().objects.create_user("otto", "otto@example.org", "otto-password-123")


@pytest.fixture
def csrf_client():
    return Client(enforce_csrf_checks=True)


def build_study(owner, *, task_type="ordinal", n_items=4, n_candidates=0, open_=True, **options):
    """A study with simple invented items; candidates carry a hidden provenance."""
    study = study_create(owner=owner, name=options.pop("name", f"{task_type} study"), task_type=task_type, **options)
    specs = []
    for i in range(n_items):
        candidates = [
            CandidateSpec(key=f"c{j}", text=f"Joke {i}-{j} about a cat.", provenance={"model": f"secret-model-{j}"})
            for j in range(n_candidates)
        ]
        specs.append(ItemSpec(external_id=f"item-{i}", prompt=f"Prompt {i}", text=f"Text {i}", candidates=candidates))
    items_create(study=study, items=specs)
    if open_:
        study_set_state(study=study, state="open")
    return study


@pytest.fixture
def make_study(researcher):
    def _make(**kwargs):
        return build_study(kwargs.pop("owner", researcher), **kwargs)

    return _make
