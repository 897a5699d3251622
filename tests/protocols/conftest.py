"""Protocol tests share the real Celery worker of the integration tests (PostgreSQL + Redis)."""

from tests.integration.conftest import celery_worker, wait_until  # noqa: F401 - fixtures and helper
