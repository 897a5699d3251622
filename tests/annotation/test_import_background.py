"""Item imports as records: small files inline, big files queued for a worker after commit."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.importers import INLINE_MAX_BYTES, FileProblem, item_import_start
from annotation.importers.background import item_import_claim
from annotation.models import Item, ItemImport
from annotation.services.studies import study_create
from annotation.tasks import import_items_task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(researcher):
    return study_create(owner=researcher, name="Background", task_type="ordinal")


def big_csv(n: int, *, bad_row: int | None = None) -> bytes:
    """A CSV over the inline limit: n items with long texts, one with an out-of-scale gold if asked."""
    lines = ["id,text,gold"]
    filler = "A rather long joke about a cat and a ladder. " * 30
    for i in range(n):
        gold = "9" if i == bad_row else "1"
        lines.append(f"j{i},{filler}{i},{gold}")
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > INLINE_MAX_BYTES
    return data


class TestStartingAnImport:
    def test_a_small_file_is_imported_at_once(self, study, researcher):
        upload = SimpleUploadedFile("items.csv", b"id,text\nj1,A joke\n")
        item_import = item_import_start(study=study, upload=upload, user=researcher)
        assert (item_import.status, item_import.items_created, item_import.errors) == ("done", 1, [])
        assert item_import.finished_at is not None
        assert item_import.file.name.startswith("imports/")
        assert item_import.original_name == "items.csv"
        assert study.items.count() == 1

    def test_a_small_bad_file_fails_with_its_row_errors(self, study, researcher):
        upload = SimpleUploadedFile("items.csv", b"id,text,gold\nj1,A joke,5\n")
        item_import = item_import_start(study=study, upload=upload, user=researcher)
        assert item_import.status == "failed"
        assert item_import.errors == ["Row 2: gold answer: The rating 5 is outside the scale (0, 1, 2, 3)."]
        assert study.items.count() == 0

    def test_a_big_file_is_queued_after_commit_and_not_imported_in_the_request(
        self, study, researcher, django_capture_on_commit_callbacks, monkeypatch
    ):
        queued = []
        monkeypatch.setattr(import_items_task, "delay", lambda import_id: queued.append(import_id))
        upload = SimpleUploadedFile("big.csv", big_csv(800))
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            item_import = item_import_start(study=study, upload=upload, user=researcher)
        assert len(callbacks) == 1
        assert queued == [item_import.pk]
        assert item_import.status == "queued"
        assert study.items.count() == 0

    def test_a_broker_that_cannot_be_reached_marks_the_import_failed(
        self, study, researcher, django_capture_on_commit_callbacks, monkeypatch
    ):
        def unreachable(import_id):
            raise ConnectionRefusedError("connection refused")

        monkeypatch.setattr(import_items_task, "delay", unreachable)
        with django_capture_on_commit_callbacks(execute=True):
            item_import = item_import_start(
                study=study, upload=SimpleUploadedFile("big.csv", big_csv(800)), user=researcher
            )
        item_import.refresh_from_db()
        assert item_import.status == "failed"
        assert "could not be queued" in item_import.errors[0]
        assert study.items.count() == 0

    @pytest.mark.parametrize(
        ("name", "message"),
        [
            ("items.xls", "Old Excel files (.xls) cannot be read"),
            ("items.pdf", "Unsupported file type '.pdf'"),
            ("items.json", "A .json file is not an item file"),
        ],
    )
    def test_a_file_of_the_wrong_type_is_refused_before_it_is_stored(self, study, researcher, name, message):
        with pytest.raises(FileProblem) as caught:
            item_import_start(study=study, upload=SimpleUploadedFile(name, b"x"), user=researcher)
        assert caught.value.messages[0].startswith(message)
        assert ItemImport.objects.count() == 0


class TestImportItemsTask:
    def queued(self, study, researcher, data: bytes) -> ItemImport:
        item_import = ItemImport(study=study, original_name="big.csv", format="csv", created_by=researcher)
        item_import.file.save("big.csv", SimpleUploadedFile("big.csv", data), save=False)
        item_import.save()
        return item_import

    def test_it_imports_a_queued_file(self, study, researcher):
        item_import = self.queued(study, researcher, big_csv(800))
        assert import_items_task(item_import.pk) == "done"
        item_import.refresh_from_db()
        assert (item_import.status, item_import.items_created) == ("done", 800)
        assert Item.objects.filter(study=study).count() == 800

    def test_a_second_delivery_imports_nothing_more(self, study, researcher):
        item_import = self.queued(study, researcher, b"id,text\nj1,x\nj2,y\n")
        import_items_task(item_import.pk)
        assert import_items_task(item_import.pk) == "done"
        assert Item.objects.filter(study=study).count() == 2

    def test_an_import_running_elsewhere_is_not_claimed_twice(self, study, researcher):
        item_import = self.queued(study, researcher, b"id,text\nj1,x\n")
        assert item_import_claim(import_id=item_import.pk)
        assert not item_import_claim(import_id=item_import.pk)
        assert import_items_task(item_import.pk) == "running"
        assert Item.objects.count() == 0

    def test_row_errors_end_the_import_failed_with_no_items(self, study, researcher):
        item_import = self.queued(study, researcher, big_csv(800, bad_row=500))
        assert import_items_task(item_import.pk) == "failed"
        item_import.refresh_from_db()
        assert item_import.errors == ["Row 502: gold answer: The rating 9 is outside the scale (0, 1, 2, 3)."]
        assert item_import.items_created == 0
        assert Item.objects.count() == 0

    def test_an_unexpected_error_is_recorded_and_raised(self, study, researcher, monkeypatch):
        item_import = self.queued(study, researcher, b"id,text\nj1,x\n")

        def broken(**kwargs):
            raise RuntimeError("disk on fire")

        monkeypatch.setattr("annotation.importers.background.prepare", broken)
        with pytest.raises(RuntimeError):
            import_items_task(item_import.pk)
        item_import.refresh_from_db()
        assert item_import.status == "failed"
        assert "disk on fire" in item_import.errors[0]

    def test_a_deleted_import_is_reported_missing(self, study, researcher):
        assert import_items_task(987654) == "missing"

    def test_a_lost_database_connection_hands_the_import_back_to_the_queue(self, study, researcher, monkeypatch):
        from django.db import OperationalError

        item_import = self.queued(study, researcher, b"id,text\nj1,x\n")

        def lost(**kwargs):
            raise OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr("annotation.importers.background.prepare", lost)
        # Called directly (not by a worker), Celery's retry re-raises the error instead of re-sending.
        with pytest.raises(OperationalError):
            import_items_task(item_import.pk)
        item_import.refresh_from_db()
        assert item_import.status == "queued"
        assert Item.objects.count() == 0

    def test_a_database_that_stays_away_fails_the_import_after_bounded_retries(self, study, researcher, monkeypatch):
        from django.db import OperationalError

        item_import = self.queued(study, researcher, b"id,text\nj1,x\n")

        def lost(**kwargs):
            raise OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr("annotation.importers.background.prepare", lost)
        assert import_items_task.apply(args=[item_import.pk]).failed()
        item_import.refresh_from_db()
        assert item_import.status == "failed"
        assert item_import.errors == [
            "The import failed after 4 tries because the database was unavailable: "
            "server closed the connection unexpectedly"
        ]
        assert Item.objects.count() == 0
