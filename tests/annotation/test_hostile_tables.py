"""Hostile table files through every entry point: the web upload, the protocol import and `manage.py analyze`.

Each file is refused with a message naming the row, line or workbook part;
nothing is written and no uploaded file is left on disk. The files are built
in the test (tests/hostile_files.py).
"""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Item, ItemImport, Judgment
from annotation.protocols import study_from_template
from annotation.services.studies import study_create
from annotation.tasks import import_items_task
from tests import hostile_files as hostile

pytestmark = pytest.mark.django_db

# (file name, builder, what the message must name)
XLSX_BOMBS = [
    ("bomb.xlsx", lambda: hostile.shared_strings_bomb(5), ["xl/sharedStrings.xml", "zip bomb"]),
    ("xxe.xlsx", hostile.external_entity_xlsx, ["xl/worksheets/sheet1.xml", "declares DOCTYPE"]),
    ("laughs.xlsx", hostile.billion_laughs_xlsx, ["xl/sharedStrings.xml", "declares DOCTYPE"]),
]
TEXT_FILES = [
    ("quote.csv", hostile.unterminated_quote_csv, ["Row 2: a quoted cell opens on line 2 and is never closed"]),
    ("nul.csv", hostile.nul_csv, ["Line 3, byte offset 20: the file holds a NUL byte"]),
]
JSONL_FILES = [
    ("deep.jsonl", hostile.deep_jsonl, ["Line 2: metadata: nested more than 32 levels deep; flatten the data."]),
    ("int.jsonl", hostile.huge_int_jsonl, ["Line 2: gold: a number with 5,000 digits; numbers may have at most 30"]),
    # A lone surrogate was a UnicodeEncodeError (text) or a DataError (metadata): a 500 either way.
    ("text.jsonl", hostile.surrogate_text_jsonl, ["Line 2: text: an unpaired UTF-16 surrogate (U+D800) at position 2"]),
    ("meta.jsonl", hostile.surrogate_metadata_jsonl, ["Line 2: metadata.note: an unpaired UTF-16 surrogate (U+DFFF)"]),
    # NaN and a repeated key were accepted without a word (jsonb refuses NaN; the first "text" was dropped).
    ("nan.jsonl", hostile.nan_jsonl, ["Line 2: metadata.score: NaN is not a number JSON allows"]),
    ("twice.jsonl", hostile.duplicate_key_jsonl, ["Line 2: the key 'text' appears twice in one object; keep one."]),
]


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def stored_files(media) -> list[Path]:
    return [p for p in Path(media).rglob("*") if p.is_file()]


def csrf_upload(csrf_client, user, url: str, name: str, data: bytes):
    """POST a file like a browser: load the page for the CSRF cookie, then send its token."""
    csrf_client.force_login(user)
    csrf_client.get(url)
    token = csrf_client.cookies["csrftoken"].value
    return csrf_client.post(url, {"file": SimpleUploadedFile(name, data), "csrfmiddlewaretoken": token})


def page_text(response) -> str:
    # Messages are HTML-escaped on the page; compare them as the researcher reads them.
    return response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')


class TestItemUploadRefusesHostileFiles:
    @pytest.fixture
    def study(self, researcher):
        return study_create(owner=researcher, name="Hostile uploads", task_type="ordinal")

    @pytest.mark.parametrize(("name", "build", "named"), XLSX_BOMBS + TEXT_FILES + JSONL_FILES)
    def test_it_answers_400_naming_where_and_keeps_nothing(
        self, csrf_client, researcher, study, isolated_media, name, build, named
    ):
        url = reverse("researcher:study_items", args=[study.pk])
        response = csrf_upload(csrf_client, researcher, url, name, build())
        assert response.status_code == 400
        for words in named:
            assert words in page_text(response)
        assert Item.objects.count() == 0
        assert ItemImport.objects.count() == 0
        assert stored_files(isolated_media) == []

    def test_the_unclosed_quote_no_longer_drops_the_rows_after_it(self, csrf_client, researcher, study):
        # Two rows in, one item out, and a success page: the quote swallowed the second row.
        url = reverse("researcher:study_items", args=[study.pk])
        csrf_upload(csrf_client, researcher, url, "quote.csv", hostile.unterminated_quote_csv())
        assert study.items.count() == 0

    def test_a_refusal_on_the_worker_path_fails_the_import_and_removes_its_file(
        self, researcher, study, isolated_media
    ):
        item_import = ItemImport(study=study, original_name="quote.csv", format="csv", created_by=researcher)
        item_import.file.save(
            "quote.csv", SimpleUploadedFile("quote.csv", hostile.unterminated_quote_csv()), save=False
        )
        item_import.save()
        assert import_items_task(item_import.pk) == "failed"
        item_import.refresh_from_db()
        assert item_import.errors[0].startswith("Row 2: a quoted cell opens on line 2 and is never closed")
        assert not item_import.file
        assert stored_files(isolated_media) == []
        assert Item.objects.count() == 0

    def test_a_row_problem_still_ends_on_the_status_page_and_the_file_is_removed(
        self, csrf_client, researcher, study, isolated_media
    ):
        url = reverse("researcher:study_items", args=[study.pk])
        response = csrf_upload(csrf_client, researcher, url, "items.csv", b"id,text,gold\nj1,A joke,9\n")
        assert response.status_code == 302
        item_import = ItemImport.objects.get()
        assert item_import.status == "failed"
        assert item_import.errors == ["Row 2: gold answer: The rating 9 is outside the scale (0, 1, 2, 3)."]
        assert stored_files(isolated_media) == []

    def test_a_gold_cell_written_as_json_is_held_to_the_guards_depth_limit(
        self, csrf_client, researcher, study, isolated_media
    ):
        # The cell was read with a bare json.loads, outside the limits every other door keeps.
        deep = '{"rating": ' + "[" * 40 + "]" * 40 + "}"
        data = b'id,text,gold\nj1,A joke,"' + deep.replace('"', '""').encode() + b'"\n'
        url = reverse("researcher:study_items", args=[study.pk])
        response = csrf_upload(csrf_client, researcher, url, "items.csv", data)
        assert response.status_code == 302
        [error] = ItemImport.objects.get().errors
        assert error.startswith("Row 2: gold answer: rating[0][0]")
        assert error.endswith(": nested more than 32 levels deep; flatten the data.")
        assert Item.objects.count() == 0

    def test_a_small_workbook_of_big_xml_goes_to_a_worker(
        self, researcher, study, monkeypatch, django_capture_on_commit_callbacks
    ):
        from annotation.importers import INLINE_MAX_BYTES, item_import_start

        rows = [["id", "text"], *[[f"j{n}", f"The same joke told again, number {n % 7}"] for n in range(40_000)]]
        data = hostile.workbook(rows)
        assert len(data) < INLINE_MAX_BYTES
        queued = []
        monkeypatch.setattr(import_items_task, "delay", queued.append)
        with django_capture_on_commit_callbacks(execute=True):
            item_import = item_import_start(study=study, upload=SimpleUploadedFile("big.xlsx", data), user=researcher)
        assert item_import.status == "queued" and queued == [item_import.pk]


class TestProtocolImportRefusesHostileFiles:
    @pytest.fixture
    def study(self, researcher):
        return study_from_template(owner=researcher, template="jest", name="Hostile panel")

    @pytest.mark.parametrize(("name", "build", "named"), XLSX_BOMBS + TEXT_FILES + JSONL_FILES)
    def test_it_answers_400_naming_where_and_writes_nothing(self, csrf_client, researcher, study, name, build, named):
        url = reverse("researcher:protocol_import", args=[study.pk])
        response = csrf_upload(csrf_client, researcher, url, name, build())
        assert response.status_code == 400
        for words in named:
            assert words in page_text(response)
        assert Item.objects.filter(study=study).count() == 0
        assert Judgment.objects.filter(study=study).count() == 0


class TestAnalyzeRefusesHostileFiles:
    @pytest.mark.parametrize(("name", "build", "named"), XLSX_BOMBS + TEXT_FILES)
    def test_it_stops_with_a_message_naming_where(self, tmp_path, name, build, named):
        path = tmp_path / name
        path.write_bytes(build())
        with pytest.raises(CommandError) as caught:
            call_command("analyze", "ratings", str(path))
        for words in named:
            assert words in str(caught.value)
