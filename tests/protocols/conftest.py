"""Protocol tests share the real Celery worker of the integration tests (PostgreSQL + Redis)."""

from contextlib import ExitStack

import pytest

from judging.testing.scripted_server import Answer, ScriptedServer
from tests.integration.conftest import celery_worker, wait_until  # noqa: F401 - fixtures and helper


@pytest.fixture
def scripted_model():
    """Start scripted OpenAI-compatible models: ``scripted_model(answer)`` gives a running ScriptedServer.

    Each answers from the test's ``answer(request) -> str``; all stop when the test ends.
    """
    with ExitStack() as stack:

        def start(answer: Answer) -> ScriptedServer:
            return stack.enter_context(ScriptedServer(answer))

        yield start
