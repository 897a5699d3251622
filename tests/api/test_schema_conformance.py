# SPDX-License-Identifier: GPL-3.0-or-later
"""API v1 is what its schema says: schemathesis, every check, every operation.

The schema is the one /api/v1/schema/ serves. Each operation gets generated requests (valid ones
and ones the schema forbids) sent to Django's WSGI application, the same application gunicorn
serves, with a researcher's token; the path parameters point at real objects of that researcher
(a study with items and judgments, an import, a judge, a run, a tournament, an export that is done,
a generator, a generation run), so the requests reach the views. Every response must pass all of
schemathesis's checks: no server error, a documented status code, content type and headers, a body
that matches the documented schema, schema-valid input accepted, invalid input refused with a 4xx,
and the token actually required. A new operation, or a new field of one, is checked without a change
here. The one check left out for writes (schema-valid input accepted) is explained at its place.
The errors every operation shares (one shape) are declared once, in ``funnybone.api_errors``.
"""

from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Small on purpose: 47 operations × both modes; the whole test stays well under two minutes.
EXAMPLES_PER_OPERATION = 6

# Path parameters of v1 and which of the world's objects each stands for, by the path's first part.
REAL_IDS = {
    "studies": {"id": "study", "import_pk": "import"},
    "exports": {"id": "export"},
    "judges": {"id": "judge"},
    "runs": {"id": "run"},
    "tournaments": {"id": "tournament"},
    "generators": {"id": "generator"},
    "generation-runs": {"id": "generation_run"},
}


def v1_schema() -> schemathesis.schemas.BaseSchema:
    """The published schema (drf-spectacular, as /api/v1/schema/ builds it), called through WSGI."""
    from drf_spectacular.generators import SchemaGenerator

    from funnybone.wsgi import application

    schema = SchemaGenerator(api_version="v1").get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(schema)
    loaded.app = application
    return loaded


OPERATIONS = [result.ok() for result in v1_schema().get_all_operations()]


@pytest.fixture
def keep_the_test_connection() -> Iterator[None]:
    """As Django's test client does: a request must not close the connection holding the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def token(researcher) -> str:
    return Token.objects.get_or_create(user=researcher)[0].key


def aim_at_real_objects(case, world: dict[str, int]) -> None:
    """Swap the generated ids for the world's real ones, where the generated id is a valid one.

    An id of the wrong type (a negative case's string) is left as it is: that request must stay invalid.
    """
    first = case.path.strip("/").split("/")[2] if case.path.startswith("/api/v1/") else ""
    names = REAL_IDS.get(first, {})
    for parameter, value in (case.path_parameters or {}).items():
        if parameter in names and isinstance(value, int) and not isinstance(value, bool):
            case.path_parameters[parameter] = world[names[parameter]]


def test_every_operation_is_listed():
    assert len(OPERATIONS) >= 45
    assert all(operation.path.startswith("/api/v1/") for operation in OPERATIONS)


def check(operation, world: dict[str, int], token: str) -> None:
    # A write may refuse a body of the right shape for what the schema cannot say (a config that does not
    # suit the study's task type, a run with nothing to retry): a 400 in the error shape, which the other
    # checks hold it to. Reads must take every query the schema allows.
    excluded = [] if operation.method.upper() == "GET" else [positive_data_acceptance]
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def conforms(case):
        aim_at_real_objects(case, world)
        case.call_and_validate(headers={"Authorization": f"Token {token}"}, excluded_checks=excluded)

    conforms()


def test_every_operation_answers_as_its_schema_says(world, token, keep_the_test_connection):
    """One world for all operations (building it per operation took most of the time); deletes go last."""
    failures = []
    for operation in sorted(OPERATIONS, key=lambda operation: operation.method.upper() == "DELETE"):
        try:
            check(operation, world, token)
        except Exception as exc:  # noqa: BLE001 - every operation's failures are reported together
            failures.append(f"{operation.label}:\n{exc}")
    assert not failures, f"{len(failures)} operation(s) differ from the schema:\n\n" + "\n\n".join(failures)
