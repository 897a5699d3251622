# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the researcher API against its own OpenAPI schema with schemathesis.

Every operation in the schema (the study and item API, the judging API, the
exports and analysis endpoints) gets generated requests — valid and invalid
bodies, query strings and paths — sent in-process to the WSGI application with
a researcher's token. Path parameters point at the researcher's real study,
import, judge and run, so requests reach the views rather than stopping at a
404. Whatever arrives, no operation may answer with a server error (5xx).
"""

from dataclasses import dataclass

import pytest
import schemathesis
from django.core import signals
from django.core.files.base import ContentFile
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from annotation.models import ItemImport
from judging.services.judges import judge_create
from judging.services.runs import run_create
from tests.conftest import build_study

pytestmark = pytest.mark.django_db

EXAMPLES_PER_OPERATION = 15


def load_schema():
    """The schema /api/schema/ serves (built by drf-spectacular without a request), called through WSGI.

    schemathesis's pytest integration (``from_fixture``/``parametrize``) does not run under pytest 9, so
    each operation is a parametrized test that draws its cases from the operation's own strategy.
    """
    from drf_spectacular.generators import SchemaGenerator

    from funnybone.wsgi import application

    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = application
    return loaded


OPERATIONS = [result.ok() for result in load_schema().get_all_operations()]


@dataclass
class ResearcherWorld:
    token: str
    by_path: dict[str, dict[str, object]]

    def fill(self, case) -> None:
        """Aim the path parameters at real objects of this researcher."""
        real = next((values for prefix, values in self.by_path.items() if case.path.startswith(prefix)), {})
        for name in case.path_parameters or {}:
            if name in real:
                case.path_parameters[name] = real[name]


@pytest.fixture
def keep_the_test_connection():
    """As Django's test client does: a request must not close the connection holding the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def world(researcher, keep_the_test_connection) -> ResearcherWorld:
    from rest_framework.authtoken.models import Token

    study = build_study(researcher, task_type="ordinal", n_items=3, open_=False)
    item_import = ItemImport(study=study, original_name="items.csv", format="csv", created_by=researcher)
    item_import.file.save("items.csv", ContentFile(b"id,text\nx,y\n"), save=False)
    item_import.save()
    judge = judge_create(owner=researcher, name="", baseline="length")
    run = run_create(study=study, judge=judge, enqueue=False)
    token = Token.objects.create(user=researcher)
    return ResearcherWorld(
        token=token.key,
        by_path={
            "/api/studies/{id}/imports/": {"id": study.pk, "import_pk": item_import.pk},
            "/api/studies/{id}": {"id": study.pk},
            "/api/judging/judges/{id}": {"id": judge.pk},
            "/api/judging/runs/{id}": {"id": run.pk},
            "/exports/api/study/{slug}": {"slug": study.slug},
            "/analysis/api/{slug}": {"slug": study.slug},
        },
    )


@pytest.mark.slow
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.label)
def test_no_operation_answers_with_a_server_error(operation, world):
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=cases)
    def no_server_error(case):
        world.fill(case)
        response = case.call(headers={"Authorization": f"Token {world.token}"})
        case.validate_response(response, checks=[not_a_server_error])

    no_server_error()


# -- the server errors the fuzzing found, as fixed examples ------------------------------------------


@pytest.fixture
def api(researcher):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


class TestInputThatUsedToAnswer500:
    def test_a_run_filter_that_is_not_a_number(self, api):
        response = api.get("/api/judging/runs/?study=abc")
        assert response.status_code == 400
        assert response.json() == {"study": ["A valid integer is required."]}

    def test_a_run_on_a_study_id_beyond_64_bits(self, api):
        response = api.post("/api/judging/runs/", {"study": 2**70, "judge": 1}, format="json")
        assert response.status_code == 400
        assert "study" in response.json()

    def test_an_export_for_a_rater_id_beyond_64_bits(self, api, researcher):
        study = build_study(researcher, open_=False)
        response = api.post(
            f"/exports/api/study/{study.slug}/", {"format": "csv", "rater_subset": [2**70]}, format="json"
        )
        assert response.status_code == 400
        assert "rater_subset" in response.json()

    def test_a_nul_character_in_a_study_config(self, api):
        # PostgreSQL's jsonb refused it with DataError after the study had been checked.
        config = {"points": [0, 1], "labels": ["No\x00", "Yes"]}
        response = api.post(
            "/api/studies/create/", {"name": "n", "task_type": "ordinal", "config": config}, format="json"
        )
        assert response.status_code == 400
        assert response.json() == {
            "config": ["The configuration holds a NUL character (0x00) at position 3; remove it."]
        }

    def test_a_nul_character_in_imported_items(self, api, researcher):
        study = build_study(researcher, open_=False)
        items = [{"id": "z", "text": "a\x00"}]
        response = api.post(f"/api/studies/{study.pk}/items/import/", {"items": items}, format="json")
        assert response.status_code == 400
        assert response.json()["errors"] == [
            "Item 1 (id 'z'): 'text' holds a NUL character (0x00) at position 2; remove it."
        ]
