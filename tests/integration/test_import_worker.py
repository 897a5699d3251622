"""Big item files are imported by a real Celery worker, all or nothing."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from annotation.importers import INLINE_MAX_BYTES, item_import_start
from annotation.models import Item, ItemImport, Judgment
from annotation.services.studies import study_create

from .conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def media_shared_with_worker(settings, celery_worker):
    settings.MEDIA_ROOT = celery_worker.data_dir / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return celery_worker


def big_csv(n: int, *, bad_rows: tuple[int, ...] = ()) -> SimpleUploadedFile:
    filler = "A long joke about a duck walking into a bar and ordering water. " * 20
    lines = ["id,text,gold"] + [f"j{i},{filler}{i},{9 if i in bad_rows else 2}" for i in range(n)]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > INLINE_MAX_BYTES
    return SimpleUploadedFile("big.csv", data)


def finished(item_import: ItemImport) -> bool:
    item_import.refresh_from_db()
    return item_import.is_finished


class TestImportByWorker:
    def test_a_big_file_is_queued_and_imported_by_the_worker(self, media_shared_with_worker, researcher):
        study = study_create(owner=researcher, name="Big import", task_type="ordinal")
        with transaction.atomic():
            item_import = item_import_start(study=study, upload=big_csv(1500), user=researcher)
        assert item_import.status == "queued"
        assert wait_until(lambda: finished(item_import)), media_shared_with_worker.log_text()
        assert (item_import.status, item_import.items_created, item_import.errors) == ("done", 1500, [])
        assert Item.objects.filter(study=study).count() == 1500
        assert item_import.started_at is not None and item_import.finished_at is not None

    def test_a_big_file_with_bad_rows_fails_with_row_errors_and_no_items(self, media_shared_with_worker, researcher):
        study = study_create(owner=researcher, name="Bad big import", task_type="ordinal")
        with transaction.atomic():
            item_import = item_import_start(study=study, upload=big_csv(1500, bad_rows=(10, 1400)), user=researcher)
        assert wait_until(lambda: finished(item_import)), media_shared_with_worker.log_text()
        assert item_import.status == "failed"
        assert item_import.errors == [
            "Row 12: gold answer: The rating 9 is outside the scale (0, 1, 2, 3).",
            "Row 1402: gold answer: The rating 9 is outside the scale (0, 1, 2, 3).",
        ]
        assert Item.objects.filter(study=study).count() == 0


def big_jsonl(n: int, *, hostile_line: int, hostile: str) -> SimpleUploadedFile:
    """Item lines past the inline limit; line ``hostile_line`` is ``hostile``, written as is (escapes stay escapes)."""
    filler = "A long joke about a duck walking into a bar and ordering water. " * 20
    lines = [json.dumps({"id": f"j{i}", "text": f"{filler}{i}"}) for i in range(n)]
    lines[hostile_line - 1] = hostile
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > INLINE_MAX_BYTES
    return SimpleUploadedFile("big.jsonl", data)


class TestHostileJsonLinesByWorker:
    @pytest.mark.parametrize(
        ("hostile", "named"),
        [
            (
                '{"id": "x", "text": "a\\ud800b"}',
                "Line 1400: text: an unpaired UTF-16 surrogate (U+D800) at position 2",
            ),
            ('{"id": "x", "text": "t", "metadata": {"m": "\\ud800"}}', "Line 1400: metadata.m: an unpaired UTF-16"),
            ('{"id": "x", "text": "t", "metadata": {"m": NaN}}', "Line 1400: metadata.m: NaN is not a number"),
            ('{"id": "x", "text": "t", "id": "y"}', "Line 1400: the key 'id' appears twice in one object"),
        ],
    )
    def test_the_import_fails_naming_the_line_and_field_and_writes_nothing(
        self, media_shared_with_worker, researcher, hostile, named
    ):
        # Was "unexpected error" on the job's page and no line named (UnicodeEncodeError, DataError).
        study = study_create(owner=researcher, name="Hostile big import", task_type="ordinal")
        upload = big_jsonl(1500, hostile_line=1400, hostile=hostile)
        with transaction.atomic():
            item_import = item_import_start(study=study, upload=upload, user=researcher)
        assert item_import.status == "queued"
        assert wait_until(lambda: finished(item_import)), media_shared_with_worker.log_text()
        assert item_import.status == "failed"
        assert len(item_import.errors) == 1 and item_import.errors[0].startswith(named)
        assert Item.objects.filter(study=study).count() == 0


class TestProtocolImportByWorker:
    def test_protocol_data_over_the_threshold_is_imported_by_the_worker(
        self, media_shared_with_worker, researcher, settings
    ):
        from annotation.protocols import study_from_template
        from tests.protocols.test_jest import LONG

        settings.FUNNYBONE_IMPORT_INLINE_MAX_BYTES = 100
        study = study_from_template(owner=researcher, template="jest", name="Panel by worker")
        with transaction.atomic():
            job = item_import_start(
                study=study, upload=SimpleUploadedFile("ratings.csv", LONG), user=researcher, kind="protocol"
            )
        assert job.status == "queued"
        assert wait_until(lambda: finished(job)), media_shared_with_worker.log_text()
        assert (job.status, job.items_created, job.judgments_created, job.errors) == ("done", 3, 4, [])
        assert job.heartbeat_at is not None and job.attempts == 1
        assert Judgment.objects.filter(study=study).count() == 4
