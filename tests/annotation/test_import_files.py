"""Item files (CSV, XLSX, JSON Lines): what imports, and every way a file can be wrong.

Each malformed file must produce a message that names its row and must leave
the database exactly as it was.
"""

import io
import json

import pytest
from openpyxl import Workbook

from annotation.importers import import_item_file
from annotation.importers.cells import MAX_CELL_CHARS
from annotation.models import Candidate, Item
from annotation.services.studies import study_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The named users are created per test; the default hasher would dominate the run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def csv_bytes(text: str, *, bom: bool = False) -> bytes:
    data = text.encode("utf-8")
    return b"\xef\xbb\xbf" + data if bom else data


def xlsx_bytes(rows: list[list], *, text_cells: tuple[str, ...] = ()) -> bytes:
    """A workbook; cells named in text_cells (e.g. "C2") are stored as text even if they start with '='."""
    workbook = Workbook()
    sheet = workbook.active
    for row in rows:
        sheet.append(row)
    for coordinate in text_cells:
        sheet[coordinate].data_type = "s"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def jsonl_bytes(objects: list) -> bytes:
    return "\n".join(json.dumps(o, ensure_ascii=False) for o in objects).encode("utf-8")


def run_import(study, data: bytes, fmt: str, **kwargs):
    return import_item_file(study=study, stream=io.BytesIO(data), fmt=fmt, size=len(data), **kwargs)


@pytest.fixture
def ordinal_study(researcher):
    return study_create(owner=researcher, name="Funniness 0-3", task_type="ordinal")


@pytest.fixture
def pairwise_study(researcher):
    return study_create(owner=researcher, name="Which is funnier", task_type="pairwise")


def assert_nothing_written():
    assert Item.objects.count() == 0
    assert Candidate.objects.count() == 0


class TestCsvImport:
    def test_it_imports_rows_with_metadata_gold_and_attention_checks(self, ordinal_study):
        data = csv_bytes(
            "id,prompt,text,gold,attention_check,meta.source\n"
            "j1,A setup,The punchline,,,jest\n"
            'j2,,"A joke, with a comma",2,yes,jest\n'
        )
        result = run_import(ordinal_study, data, "csv")
        assert result.ok, result.errors
        assert result.count == 2
        j1, j2 = Item.objects.order_by("position")
        assert (j1.external_id, j1.prompt, j1.text, j1.metadata) == (
            "j1",
            "A setup",
            "The punchline",
            {"source": "jest"},
        )
        assert j1.gold is None and not j1.is_attention_check
        assert j2.text == "A joke, with a comma"
        assert j2.gold == {"rating": 2} and j2.is_attention_check

    def test_it_reads_candidates_with_context_and_provenance(self, pairwise_study):
        data = csv_bytes(
            "id,prompt,candidate.a,candidate.a.model,candidate.b,candidate.b.model,candidate.b.context,gold\n"
            "p1,Cats,Joke A,gpt-x,Joke B,llama-y,Another prompt,b\n"
        )
        result = run_import(pairwise_study, data, "csv")
        assert result.ok, result.errors
        item = Item.objects.get()
        a, b = item.candidates.order_by("position")
        assert (a.key, a.text, a.provenance, a.context) == ("a", "Joke A", {"model": "gpt-x"}, "")
        assert (b.key, b.text, b.provenance, b.context) == ("b", "Joke B", {"model": "llama-y"}, "Another prompt")
        assert item.gold == {"choice": "b"}

    def test_it_accepts_a_tie_as_gold_in_any_case(self, pairwise_study):
        data = csv_bytes("id,candidate.a,candidate.b,gold\np1,A,B,TIE\n")
        assert run_import(pairwise_study, data, "csv").ok
        assert Item.objects.get().gold == {"choice": "tie"}

    def test_it_strips_a_byte_order_mark_so_the_id_column_is_found(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text\nj1,Ünïcödé joke\n", bom=True), "csv")
        assert result.ok, result.errors
        assert Item.objects.get().text == "Ünïcödé joke"

    @pytest.mark.parametrize("delimiter", [";", "\t"])
    def test_it_detects_semicolon_and_tab_delimiters(self, ordinal_study, delimiter):
        data = csv_bytes(f"id{delimiter}text{delimiter}gold\nj1{delimiter}Joke, with comma{delimiter}1\n")
        result = run_import(ordinal_study, data, "csv")
        assert result.ok, result.errors
        item = Item.objects.get()
        assert (item.text, item.gold) == ("Joke, with comma", {"rating": 1})

    def test_it_skips_blank_lines_and_keeps_row_numbers_as_the_spreadsheet_shows_them(self, ordinal_study):
        data = csv_bytes("id,text,gold\nj1,Fine,1\n,,\nj3,Bad,9\n")
        result = run_import(ordinal_study, data, "csv")
        assert result.errors == ["Row 4: gold answer: The rating 9 is outside the scale (0, 1, 2, 3)."]

    def test_it_keeps_formula_looking_text_as_text(self, ordinal_study):
        assert run_import(ordinal_study, csv_bytes("id,text\nj1,=HYPERLINK(1)\n"), "csv").ok
        assert Item.objects.get().text == "=HYPERLINK(1)"

    def test_it_adds_to_existing_items_after_the_last_position(self, ordinal_study):
        run_import(ordinal_study, csv_bytes("id,text\nj1,One\nj2,Two\n"), "csv")
        result = run_import(ordinal_study, csv_bytes("id,text\nj3,Three\n"), "csv")
        assert result.count == 1
        assert list(Item.objects.order_by("position").values_list("external_id", flat=True)) == ["j1", "j2", "j3"]

    def test_replace_swaps_the_items_of_a_study_without_judgments(self, ordinal_study):
        run_import(ordinal_study, csv_bytes("id,text\nj1,One\n"), "csv")
        result = run_import(ordinal_study, csv_bytes("id,text\nk1,New\n"), "csv", replace=True)
        assert result.ok
        assert list(Item.objects.values_list("external_id", flat=True)) == ["k1"]


class TestCsvImportRejects:
    def test_a_file_without_an_id_column(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("text,gold\nA joke,1\n"), "csv")
        assert result.errors == ["The file has no 'id' column; every item needs an id."]
        assert_nothing_written()

    def test_an_unknown_column_and_suggests_the_right_name(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,txt\nj1,A joke\n"), "csv")
        assert len(result.errors) == 1
        assert "Unknown column 'txt' (did you mean 'text'?)" in result.errors[0]
        assert "meta.<name>" in result.errors[0]
        assert_nothing_written()

    def test_a_column_named_twice(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text,Text\nj1,a,b\n"), "csv")
        assert result.errors == ["The column 'Text' appears twice."]
        assert_nothing_written()

    def test_bytes_that_are_not_utf8_naming_line_and_offset(self, ordinal_study):
        data = b"id,text\nj1,fine\nj2,caf" + b"\xe9" + b"\n"
        result = run_import(ordinal_study, data, "csv")
        assert result.errors[0] == "Line 3, byte offset 22: byte 0xe9 is not valid UTF-8."
        assert "CSV UTF-8" in result.errors[-1]
        assert_nothing_written()

    def test_a_utf16_file_with_advice(self, ordinal_study):
        result = run_import(ordinal_study, "id,text\nj1,x\n".encode("utf-16"), "csv")
        assert result.errors == ["The file is UTF-16 encoded; save it as UTF-8 (in Excel: 'CSV UTF-8')."]
        assert_nothing_written()

    def test_duplicate_ids_within_the_file(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text\nj1,a\nj2,b\nj1,c\n"), "csv")
        assert result.errors == ["Row 4: duplicate item id 'j1'; Row 2 already uses it."]
        assert_nothing_written()

    def test_ids_already_in_the_study(self, ordinal_study):
        run_import(ordinal_study, csv_bytes("id,text\nj1,a\n"), "csv")
        result = run_import(ordinal_study, csv_bytes("id,text\nj2,b\nj1,c\n"), "csv")
        assert result.errors == ["Row 3: the item id 'j1' is already in this study."]
        assert list(Item.objects.values_list("external_id", flat=True)) == ["j1"]

    def test_gold_outside_the_scale_and_gold_that_is_not_a_number(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text,gold\nj1,a,7\nj2,b,funny\nj3,c,1.5\n"), "csv")
        assert result.errors == [
            "Row 2: gold answer: The rating 7 is outside the scale (0, 1, 2, 3).",
            "Row 3: gold answer: 'funny' is not a rating; write a whole number such as 2.",
            "Row 4: gold answer: '1.5' is not a whole number.",
        ]
        assert_nothing_written()

    def test_a_gold_candidate_key_that_does_not_exist(self, pairwise_study):
        result = run_import(pairwise_study, csv_bytes("id,candidate.a,candidate.b,gold\np1,A,B,c\n"), "csv")
        assert result.errors == ["Row 2: gold answer: Unknown candidate 'c'."]
        assert_nothing_written()

    def test_an_attention_check_without_gold_and_an_unreadable_flag(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text,gold,attention_check\nj1,a,,yes\nj2,b,1,maybe\n"), "csv")
        assert result.errors == [
            "Row 2: an attention check needs a gold answer.",
            "Row 3: attention_check must be yes or no (or true/false, 1/0), not 'maybe'.",
        ]
        assert_nothing_written()

    def test_an_enormous_cell(self, ordinal_study):
        huge = "ha" * (MAX_CELL_CHARS // 2 + 1)
        result = run_import(ordinal_study, csv_bytes(f"id,text\nj1,fine\nj2,{huge}\n"), "csv")
        assert result.errors == [f"Row 3: column 'text' holds {MAX_CELL_CHARS + 2:,} characters; the limit is 20,000."]
        assert_nothing_written()

    def test_a_file_over_the_size_limit(self, ordinal_study, settings):
        settings.FUNNYBONE_IMPORT_MAX_BYTES = 100
        data = csv_bytes("id,text\n" + "".join(f"j{i},A joke number {i}\n" for i in range(20)))
        result = run_import(ordinal_study, data, "csv")
        assert len(result.errors) == 1
        assert "the largest file accepted is" in result.errors[0]
        assert_nothing_written()

    def test_a_row_with_more_cells_than_the_header(self, ordinal_study):
        result = run_import(ordinal_study, csv_bytes("id,text\nj1,a,stray\n"), "csv")
        assert result.errors == ["Row 2: has 3 cells but the header names 2 columns."]
        assert_nothing_written()

    def test_pairwise_rows_with_the_wrong_number_of_candidates(self, pairwise_study):
        result = run_import(pairwise_study, csv_bytes("id,candidate.a,candidate.b\np1,Only one,\n"), "csv")
        assert result.errors == ["Row 2: Pairwise choice items need 2 candidates, got 1."]
        assert_nothing_written()

    def test_every_problem_of_every_row_at_once(self, ordinal_study):
        data = csv_bytes("id,text,gold\n,no id,1\nj2,b,5\nj3,c,x\n")
        result = run_import(ordinal_study, data, "csv")
        assert [e.split(":")[0] for e in result.errors] == ["Row 2", "Row 3", "Row 4"]
        assert_nothing_written()

    def test_an_empty_file(self, ordinal_study):
        result = run_import(ordinal_study, b"", "csv")
        assert result.errors == ["The file is empty; the first row must name the columns (at least 'id')."]

    def test_a_header_without_rows(self, ordinal_study):
        assert run_import(ordinal_study, csv_bytes("id,text\n"), "csv").errors == ["The file holds no items."]


class TestXlsxImport:
    def test_it_imports_the_first_sheet_with_numbers_as_text(self, ordinal_study):
        data = xlsx_bytes(
            [["id", "text", "gold", "meta.year"], [101, "A joke", 3, 2020], ["j2", "Another", None, None]]
        )
        result = run_import(ordinal_study, data, "xlsx")
        assert result.ok, result.errors
        first = Item.objects.get(external_id="101")
        assert first.gold == {"rating": 3}
        assert first.metadata == {"year": 2020}

    def test_it_keeps_formula_looking_text_cells_as_text(self, ordinal_study):
        data = xlsx_bytes([["id", "text"], ["j1", "=SUM(A1:A3)"]], text_cells=("B2",))
        result = run_import(ordinal_study, data, "xlsx")
        assert result.ok, result.errors
        assert Item.objects.get().text == "=SUM(A1:A3)"

    def test_it_rejects_formulas_the_file_holds_no_value_for(self, ordinal_study):
        data = xlsx_bytes([["id", "text"], ["j1", "fine"], ["j2", "=A2&A3"]])
        result = run_import(ordinal_study, data, "xlsx")
        assert result.errors[0].startswith("Row 3: the formula in B3 (=A2&A3) has no saved value")
        assert_nothing_written()

    def test_it_reports_rows_by_their_sheet_number(self, ordinal_study):
        data = xlsx_bytes([["id", "text", "gold"], ["j1", "a", 1], [None, None, None], ["j1", "b", 2]])
        result = run_import(ordinal_study, data, "xlsx")
        assert result.errors == ["Row 4: duplicate item id 'j1'; Row 2 already uses it."]
        assert_nothing_written()

    def test_it_rejects_extra_columns(self, ordinal_study):
        result = run_import(ordinal_study, xlsx_bytes([["id", "text", "notes"], ["j1", "a", "x"]]), "xlsx")
        assert "Unknown column 'notes'" in result.errors[0]
        assert_nothing_written()

    def test_it_rejects_a_file_that_is_not_a_workbook(self, ordinal_study):
        result = run_import(ordinal_study, b"id,text\nj1,a\n", "xlsx")
        assert result.errors[0].startswith("This is not a readable XLSX file")
        assert_nothing_written()


class TestJsonlImport:
    def test_it_imports_nested_items_like_a_study_file(self, pairwise_study):
        objects = [
            {
                "id": "p1",
                "prompt": "Headline",
                "metadata": {"split": "dev"},
                "gold": "a",
                "candidates": [
                    {"key": "a", "text": "One", "provenance": {"model": "m1"}},
                    {"key": "b", "text": "Two", "context": "Other prompt"},
                ],
            }
        ]
        result = run_import(pairwise_study, jsonl_bytes(objects), "jsonl")
        assert result.ok, result.errors
        item = Item.objects.get()
        assert item.gold == {"choice": "a"}
        assert item.metadata == {"split": "dev"}
        assert item.candidates.get(key="a").provenance == {"model": "m1"}

    def test_it_reports_bad_json_and_unknown_keys_by_line(self, ordinal_study):
        data = b'{"id": "j1", "text": "ok"}\n{"id": "j2", "txet": "typo"}\n{not json}\n'
        result = run_import(ordinal_study, data, "jsonl")
        assert result.errors[0].startswith("Line 2: unknown key 'txet' (did you mean 'text'?)")
        assert result.errors[1] == "Line 2 (id 'j2'): the item has no text."
        assert result.errors[2].startswith("Line 3: not valid JSON")
        assert_nothing_written()

    def test_it_accepts_gold_in_the_full_value_shape(self, ordinal_study):
        result = run_import(ordinal_study, jsonl_bytes([{"id": "j1", "text": "a", "gold": {"rating": 0}}]), "jsonl")
        assert result.ok
        assert Item.objects.get().gold == {"rating": 0}
