# SPDX-License-Identifier: GPL-3.0-or-later
"""CSRF: every state-changing form and session-authenticated API call needs the token.

The API with a token in the Authorization header is the exception: a browser never
sends that header on its own, so there is nothing to forge.
"""

import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import Study

from .conftest import annotator_url
from .test_authorization_matrix import ANNOTATOR, API, MATRIX, PAGE

pytestmark = pytest.mark.django_db

UNSAFE = ("POST", "PATCH", "DELETE")


def csrf_routes(kind: str) -> list[tuple[str, str]]:
    return [
        (name, method)
        for name, route in MATRIX.items()
        if route.kind == kind
        for method in route.methods
        if method in UNSAFE
    ]


def send(client: Client, method: str, url: str, **headers):
    if method == "POST":
        return client.post(url, {}, **headers)
    return client.generic(method, url, "{}", content_type="application/json", **headers)


def refused_for_csrf(response) -> bool:
    return response.status_code == 403 and b"CSRF" in response.content


@pytest.fixture
def owner_csrf_client(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    # Any page sets the CSRF cookie (the layout puts the token in hx-headers).
    assert client.get("/studies/").status_code == 200
    return client


@pytest.fixture
def crowd_csrf_client(world):
    client = Client(enforce_csrf_checks=True)
    assert client.get(annotator_url(world.study), {"PROLIFIC_PID": "csrf-worker"}).status_code == 302
    assert client.get(annotator_url(world.study, "consent")).status_code == 200
    return client


class TestResearcherForms:
    def test_every_researcher_form_refuses_a_post_without_the_token(self, world, owner_csrf_client):
        routes = csrf_routes(PAGE)
        assert len(routes) >= 15
        accepted = []
        for name, method in routes:
            url = reverse(name, kwargs=MATRIX[name].kwargs(world))
            if not refused_for_csrf(send(owner_csrf_client, method, url)):
                accepted.append(f"{method} {url} ({name})")
        assert accepted == []

    def test_with_the_token_the_same_post_gets_through(self, world, owner_csrf_client):
        token = owner_csrf_client.cookies["csrftoken"].value
        url = reverse("researcher:study_state", args=[world.study.pk])
        response = owner_csrf_client.post(url, {"state": "closed"}, HTTP_X_CSRFTOKEN=token)
        assert response.status_code == 302
        world.study.refresh_from_db()
        assert world.study.state == Study.State.CLOSED

    def test_logging_out_needs_the_token(self, owner_csrf_client):
        assert refused_for_csrf(owner_csrf_client.post("/accounts/logout/"))


class TestAnnotatorForms:
    def test_every_annotator_form_refuses_a_post_without_the_token(self, world, crowd_csrf_client):
        routes = csrf_routes(ANNOTATOR)
        assert {name for name, _m in routes} == {
            "annotator:consent",
            "annotator:instructions",
            "annotator:item",
            "annotator:lease",
            "annotator:qualification",
            "annotator:practice",
            "annotator:questions",
        }
        for name, method in routes:
            url = reverse(name, kwargs=MATRIX[name].kwargs(world))
            assert refused_for_csrf(send(crowd_csrf_client, method, url)), name

    def test_consent_with_the_token_is_recorded(self, world, crowd_csrf_client):
        token = crowd_csrf_client.cookies["csrftoken"].value
        response = crowd_csrf_client.post(
            annotator_url(world.study, "consent"), {"decision": "agree"}, HTTP_X_CSRFTOKEN=token
        )
        assert response.status_code == 302
        assert world.study.enrollments.get(rater__external_id="csrf-worker").consented_at is not None


class TestApi:
    def test_every_session_authenticated_api_call_needs_the_token(self, world, owner_csrf_client):
        routes = csrf_routes(API)
        assert len(routes) >= 12
        accepted = []
        for name, method in routes:
            url = reverse(name, kwargs=MATRIX[name].kwargs(world))
            response = send(owner_csrf_client, method, url)
            if not refused_for_csrf(response):
                accepted.append(f"{method} {url} ({name}): {response.status_code}")
        assert accepted == []

    def test_a_session_api_call_with_the_token_works(self, world, owner_csrf_client):
        token = owner_csrf_client.cookies["csrftoken"].value
        response = owner_csrf_client.post(reverse("api:study_close", args=[world.study.pk]), HTTP_X_CSRFTOKEN=token)
        assert response.status_code == 200
        assert response.json()["state"] == "closed"

    def test_token_authentication_needs_no_csrf_token(self, world):
        key = Token.objects.create(user=world.owner).key
        client = Client(enforce_csrf_checks=True)
        response = client.post(
            reverse("api:study_create"),
            json.dumps({"name": "Made with a token", "task_type": "ordinal"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {key}",
        )
        assert response.status_code == 201, response.content
        assert Study.objects.filter(name="Made with a token", owner=world.owner).exists()

    def test_a_wrong_token_is_refused_not_waved_through(self, world):
        client = Client(enforce_csrf_checks=True)
        response = client.post(
            reverse("api:study_create"),
            json.dumps({"name": "Forged", "task_type": "ordinal"}),
            content_type="application/json",
            HTTP_AUTHORIZATION="Token not-a-real-key",
        )
        assert response.status_code == 401
        assert not Study.objects.filter(name="Forged").exists()
