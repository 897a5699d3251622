"""Exported text can never run as a spreadsheet formula, and credentials never leave the database."""

import csv
import io
from datetime import UTC, datetime

import pytest
import xlsxwriter
from openpyxl import load_workbook

from annotation.models import Item, Rater
from annotation.privacy import pseudonym
from annotation.services.studies import ItemSpec, items_create
from ratings.exports.csv_jsonl import write_csv
from ratings.exports.formats import get_format
from ratings.exports.safe_cells import csv_safe, scrub_provenance
from ratings.exports.workbook import write_workbook
from ratings.exports.xlsx_book import Book
from tests.conftest import build_study
from tests.ratings.export_helpers import judge_directly, rate_as_crowd

pytestmark = pytest.mark.django_db

DANGEROUS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1"]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def hostile_study(researcher):
    study = build_study(researcher, n_items=1, quota_per_item=1)
    items_create(
        study=study, items=[ItemSpec(external_id=f"x{i}", text=text, prompt=text) for i, text in enumerate(DANGEROUS)]
    )
    answers = {"worker-1": {item.external_id: {"rating": 1} for item in study.items.all()}}
    raters = rate_as_crowd(study, answers)
    # Entry links now refuse such an id, but rater ids also arrive in imported files (and older rows).
    Rater.objects.filter(pk=raters["worker-1"].pk).update(external_id="=cmd|' /C calc'!A0")
    return study


class TestXlsxwriterAssumption:
    def test_xlsxwriter_would_store_a_leading_equals_sign_as_a_formula(self, tmp_path):
        # Why Sheet.write exists: xlsxwriter's plain write() makes a formula cell.
        path = tmp_path / "plain.xlsx"
        book = xlsxwriter.Workbook(str(path))
        book.add_worksheet().write(0, 0, "=1+1")
        book.close()
        assert load_workbook(path).active["A1"].data_type == "f"


def _one_cell(tmp_path, value):
    path = tmp_path / "cell.xlsx"
    book = Book(str(path))
    book.sheet("S").append([value])
    book.close()
    return load_workbook(path)["S"]["A1"]


class TestXlsxCells:
    @pytest.mark.parametrize("text", DANGEROUS)
    def test_dangerous_text_is_a_string_cell_with_its_value_unchanged(self, text, tmp_path):
        cell = _one_cell(tmp_path, text)
        assert cell.data_type == "s"
        assert cell.value == text.replace("\r", "\n")

    @pytest.mark.parametrize("number", [-2, -0.5, 3, 0])
    def test_numbers_stay_numbers(self, number, tmp_path):
        cell = _one_cell(tmp_path, number)
        assert cell.data_type == "n"
        assert cell.value == number

    def test_a_time_is_a_date_cell_with_a_date_format(self, tmp_path):
        when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
        cell = _one_cell(tmp_path, when)
        assert cell.is_date
        assert cell.value == when.replace(tzinfo=None)
        assert cell.number_format == "yyyy-mm-dd hh:mm:ss"


class TestWorkbookIsInert:
    def test_item_texts_are_read_back_as_text_not_formulas(self, hostile_study, tmp_path):
        path = tmp_path / "hostile.xlsx"
        write_workbook(hostile_study, str(path))
        wb = load_workbook(path)
        cells = {c.value: c for ws in wb for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
        for text in DANGEROUS:
            # A carriage return is stored as the line feed XML would turn it into.
            stored = text.replace("\r", "\n")
            assert stored in cells, text
            assert cells[stored].data_type == "s"
        assert not [c for ws in wb for row in ws.iter_rows() for c in row if c.data_type == "f"]

    def test_a_hostile_rater_id_never_reaches_the_workbook_its_pseudonym_heads_the_column(
        self, hostile_study, tmp_path
    ):
        path = tmp_path / "hostile.xlsx"
        write_workbook(hostile_study, str(path))
        wb = load_workbook(path)
        header = next(wb["Ratings"].iter_rows(min_row=1, max_row=1))
        rater = Rater.objects.get(external_id__startswith="=cmd")
        assert header[3].value == pseudonym(
            study_id=hostile_study.pk, key=hostile_study.pseudonym_key, rater_id=rater.pk
        )
        assert header[3].data_type == "s"
        assert not [c for ws in wb for row in ws.iter_rows() for c in row if "calc'!A0" in str(c.value or "")]

    def test_a_negative_number_in_the_workbook_is_numeric(self, researcher, tmp_path):
        study = build_study(
            researcher, n_items=2, quota_per_item=1, config={"points": [-2, -1, 0, 1, 2], "labels": list("abcde")}
        )
        rate_as_crowd(study, {"p": {"item-0": {"rating": -2}, "item-1": {"rating": -1}}})
        path = tmp_path / "negative.xlsx"
        write_workbook(study, str(path))
        ratings = list(load_workbook(path)["Ratings"].iter_rows(min_row=2))
        assert [r[3].value for r in ratings] == [-2, -1]
        assert all(r[3].data_type == "n" for r in ratings)


class TestCsvIsInert:
    @pytest.mark.parametrize("text", DANGEROUS)
    def test_dangerous_text_gets_an_apostrophe(self, text):
        assert csv_safe(text) == "'" + text

    @pytest.mark.parametrize("value", [-2, -0.5, 1.5, "plain joke", "a=b", ""])
    def test_numbers_and_harmless_text_are_untouched(self, value):
        assert csv_safe(value) == value

    def test_the_long_csv_neutralises_item_ids_and_names_raters_by_pseudonym(self, hostile_study):
        out = io.StringIO()
        write_csv(hostile_study, out)
        records = list(csv.DictReader(io.StringIO(out.getvalue())))
        dangerous_ids = {i.external_id for i in Item.objects.filter(study=hostile_study)}
        assert {r["item"] for r in records} == dangerous_ids  # the ids themselves are harmless
        assert "calc" not in out.getvalue()  # the rater's own id is not in it at all
        assert all(r["rater_pseudonym"].startswith("P-") for r in records)

    def test_the_participant_key_neutralises_a_hostile_platform_id(self, hostile_study):
        out = io.StringIO()
        get_format("ids_key").write(hostile_study, out)
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("# Personal data")
        (record,) = csv.DictReader(io.StringIO("\n".join(lines[1:])))
        assert record["platform_id"] == "'=cmd|' /C calc'!A0"
        assert record["pseudonym"].startswith("P-")

    def test_dangerous_item_ids_are_prefixed_in_the_csv(self, researcher):
        study = build_study(researcher, n_items=1, quota_per_item=1)
        items_create(study=study, items=[ItemSpec(external_id="=1+2", text="A joke")])
        rater = Rater.objects.create(kind=Rater.Kind.LLM, name="-judge")
        judge_directly(study, rater, Item.objects.get(external_id="=1+2"), value={"rating": 2})
        out = io.StringIO()
        write_csv(study, out)
        (record,) = csv.DictReader(io.StringIO(out.getvalue()))
        assert record["item"] == "'=1+2"
        assert record["rater_name"] == "'-judge"
        assert record["numeric"] == "2.0"


class TestProvenanceScrubbing:
    def test_credentials_go_and_token_counts_stay(self):
        provenance = {
            "api_key": "sk-abc",
            "OPENAI_API_KEY": "sk-abc",
            "access_token": "abc",
            "client_secret": "abc",
            "password": "abc",
            "headers": {"Authorization": "Bearer abcdefghijkl", "X-Trace": "t1"},
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
            "prompt_tokens": 12,
            "attempts": [{"token": "secret-in-a-list", "latency_ms": 30}],
            "raw_response": "ok",
        }
        assert scrub_provenance(provenance) == {
            "headers": {"X-Trace": "t1"},
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
            "prompt_tokens": 12,
            "attempts": [{"latency_ms": 30}],
            "raw_response": "ok",
        }

    def test_a_key_pasted_into_free_text_is_redacted(self):
        scrubbed = scrub_provenance({"error": "401 for key sk-proj-ABCDEFGHIJKLMNOP1234 at Bearer abcdefgh12345"})
        assert "sk-proj" not in scrubbed["error"]
        assert "abcdefgh12345" not in scrubbed["error"]
        assert "[redacted]" in scrubbed["error"]

    def test_a_string_named_like_a_token_count_is_still_dropped(self):
        assert scrub_provenance({"tokens": "sk-looks-like-a-count-but-is-not"}) == {}
