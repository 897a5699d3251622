"""A real prefork worker enforces the import time limit: the import ends failed with the reason, nothing written.

The solo pool of the other integration tests cannot interrupt a task, so
this module starts its own worker with the prefork pool. Celery writes a
task's limits into the message when it is sent, so the import is sent with a
one-second soft limit, as a web server configured with
FUNNYBONE_IMPORT_SOFT_TIME_LIMIT=1 would send it (the worker has the same setting).
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from annotation.importers.background import item_import_create
from annotation.models import Judgment
from annotation.protocols import study_from_template

from .conftest import running_worker, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def limited_worker(django_db_setup, tmp_path_factory):
    limits = {"FUNNYBONE_IMPORT_SOFT_TIME_LIMIT": "1", "FUNNYBONE_IMPORT_TIME_LIMIT": "60"}
    with running_worker(tmp_path_factory, pool="prefork", env=limits) as worker:
        yield worker


def slow_panel_csv(n_items: int) -> bytes:
    """A JEST rating sheet big enough that importing it takes far longer than one second."""
    lines = ["id,setup,response,rater,rating"]
    for i in range(n_items):
        for rater in ("Ana", "Ben", "Cleo"):
            lines.append(f"t{i},Setup number {i} about a cat.,Response {i} about a ladder.,{rater},{i % 4}")
    return ("\n".join(lines) + "\n").encode()


def test_an_import_past_its_soft_limit_ends_failed_with_the_reason(limited_worker, researcher, settings):
    from annotation.tasks import import_items_task

    settings.MEDIA_ROOT = limited_worker.data_dir / "media"
    study = study_from_template(owner=researcher, template="jest", name="Too big to finish")
    upload = SimpleUploadedFile("panel.csv", slow_panel_csv(10_000))
    with transaction.atomic():
        job = item_import_create(study=study, upload=upload, user=researcher, kind="protocol")
        transaction.on_commit(lambda: import_items_task.apply_async((job.pk,), soft_time_limit=1, time_limit=60))

    def ended() -> bool:
        job.refresh_from_db()
        return job.is_finished

    assert wait_until(ended, timeout=120), limited_worker.log_text()
    assert job.status == "failed", limited_worker.log_text()
    assert job.errors == [
        "The import took longer than the 1 second time limit and was stopped; nothing was written. "
        "Split the file into smaller ones and import them one by one."
    ]
    assert not study.items.exists()
    assert not Judgment.objects.filter(study=study).exists()
