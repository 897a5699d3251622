"""The table reader on its own (no database): formats, limits and the problems it reports as data."""

import io
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import Workbook

from annotation import tables
from annotation.tables import xlsx
from tests import hostile_files as hostile

ROOT = Path(__file__).resolve().parents[2]


def rows(data: bytes, fmt: str = "csv") -> list[list[str]]:
    return [row.texts() for row in tables.read_rows(io.BytesIO(data), fmt=fmt)]


def refusal(data: bytes, fmt: str = "csv") -> tables.TableError:
    with pytest.raises(tables.TableError) as caught:
        list(tables.read_rows(io.BytesIO(data), fmt=fmt))
    return caught.value


def test_the_reader_and_analyze_input_import_without_django():
    code = "import sys, annotation.tables, ratings.io; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


class TestCsv:
    def test_rows_are_numbered_as_a_spreadsheet_shows_them(self):
        data = b'\xef\xbb\xbfid;text\r\n\r\na;"two\nlines"\rb;c'
        read = list(tables.read_rows(io.BytesIO(data), fmt="csv"))
        assert [(r.number, r.texts()) for r in read] == [(1, ["id", "text"]), (3, ["a", "two\nlines"]), (4, ["b", "c"])]

    def test_an_unclosed_quote_names_the_row_and_the_line_it_opens_on(self):
        error = refusal(b'id,text,note\nj1,"two\nlines",fine\nj2,x,"never closed\nj3,y,z\n')
        assert error.problems[0].row == 3
        assert "opens on line 4 and is never closed" in error.problems[0].message

    def test_a_cell_over_the_cap_names_its_row(self):
        error = refusal(b"id,text\nj1,ok\nj2," + b"x" * (tables.MAX_FIELD_CHARS + 1) + b"\n")
        assert error.problems[0].row == 3
        assert "more than 131,072 characters" in error.messages[0]

    def test_a_row_over_the_column_cap_is_refused(self):
        error = refusal(b"id\n" + b"," * tables.MAX_COLUMNS + b"\n")
        assert error.messages == ["Row 2: the row has 1,025 cells; the limit is 1,024."]

    def test_a_line_without_end_is_refused_before_it_fills_memory(self):
        error = refusal(b"id\n" + b"x" * (2 * 1024 * 1024))
        assert error.messages[0].startswith("Line 2: the line is longer than 1,024 KB")

    def test_undecodable_bytes_are_listed_by_line_and_byte(self):
        error = refusal(b"id\n\xe9\nok\n\xff\n")
        assert error.messages == [
            "Line 2, byte offset 3: byte 0xe9 is not valid UTF-8.",
            "Line 4, byte offset 8: byte 0xff is not valid UTF-8.",
            "Save the file as UTF-8 (in Excel: 'CSV UTF-8') and upload it again.",
        ]
        assert (error.problems[0].row, error.problems[0].offset) == (2, 3)


class TestXlsx:
    def test_a_declared_million_rows_by_sixteen_thousand_columns_reads_only_the_rows_present(self):
        assert rows(hostile.huge_dimension_xlsx(rows=2_000), "xlsx") == [["id", "text"], ["j1", "A joke"]]

    def test_refusals_name_the_part(self):
        error = refusal(hostile.shared_strings_bomb(3), "xlsx")
        assert error.problems[0].part == "xl/sharedStrings.xml"
        assert "inflates" in error.messages[0] and "zip bomb" in error.messages[0]

    def test_a_part_or_a_total_over_the_caps(self, monkeypatch):
        data = hostile.workbook([["id"], ["j1"]])
        monkeypatch.setattr(xlsx, "MAX_PART_BYTES", 1000)
        assert "per part" in refusal(data, "xlsx").messages[0]
        monkeypatch.setattr(xlsx, "MAX_PART_BYTES", 10**9)
        monkeypatch.setattr(xlsx, "MAX_TOTAL_BYTES", 2000)
        assert refusal(data, "xlsx").messages[0].startswith("The workbook inflates to")

    def test_too_many_shared_strings(self, monkeypatch):
        monkeypatch.setattr(xlsx, "MAX_SHARED_STRINGS", 1000)
        error = refusal(hostile.shared_strings_bomb(0.5), "xlsx")  # under the ratio check
        assert error.messages[0].startswith("The workbook's part 'xl/sharedStrings.xml' holds more than 1,000 shared")

    def test_too_many_parts(self, monkeypatch):
        monkeypatch.setattr(xlsx, "MAX_PARTS", 3)
        assert "parts" in refusal(hostile.workbook([["id"]]), "xlsx").messages[0]

    def test_utf16_xml_is_refused(self):
        data = hostile.with_part(hostile.workbook([["id"]]), hostile.SHEET, "<worksheet/>".encode("utf-16-le"))
        assert "is UTF-16 XML" in refusal(data, "xlsx").messages[0]

    def test_a_cell_beyond_the_column_cap(self):
        book = Workbook()
        book.active.append(["id"])
        book.active.cell(row=2, column=tables.MAX_COLUMNS + 1, value="far away")
        buffer = io.BytesIO()
        book.save(buffer)
        error = refusal(buffer.getvalue(), "xlsx")
        assert (error.problems[0].row, error.problems[0].column) == (2, "AMK2")

    def test_a_row_with_too_many_cells(self, monkeypatch):
        monkeypatch.setattr(xlsx, "MAX_ROW_CELLS", 2)
        error = refusal(hostile.workbook([["id", "text", "x"]]), "xlsx")
        assert error.messages == ["Row 1: the row holds 3 cells; the limit is 2."]

    def test_a_cell_over_the_text_cap(self):
        # openpyxl writes at most Excel's 32,767 characters; a hand-made sheet holds what it likes.
        long_text = "x" * (tables.MAX_FIELD_CHARS + 1)
        sheet = (
            f'<worksheet xmlns="{hostile.MAIN_NS}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c>'
            f'</row><row r="2"><c r="A2" t="inlineStr"><is><t>{long_text}</t></is></c></row></sheetData></worksheet>'
        )
        error = refusal(hostile.with_part(hostile.workbook([["id"]]), hostile.SHEET, sheet.encode()), "xlsx")
        assert (error.problems[0].row, error.problems[0].column) == (2, "A2")

    def test_the_workbook_is_read_through_defusedxml(self):
        import openpyxl

        assert openpyxl.DEFUSEDXML


class TestJsonLimits:
    def test_the_lines_are_held_to_the_limits_in_settings(self, settings):
        # Once a second, hard-coded set of limits (40 digits, no string limit) that disagreed with the settings.
        settings.FUNNYBONE_JSON_MAX_INT_DIGITS = 5
        settings.FUNNYBONE_JSON_MAX_STRING_CHARS = 10
        for line, problem in [
            (b'{"id": "j1", "n": 123456}\n', "n: a number with 6 digits; numbers may have at most 5 digits."),
            (b'{"id": "j1", "text": "eleven char"}\n', "text: a text of 11 characters; the limit is 10."),
        ]:
            with pytest.raises(tables.TableError) as caught:
                list(tables.read_json_lines(io.BytesIO(line)))
            assert caught.value.messages == [f"Line 1: {problem}"]
        assert [line.value for line in tables.read_json_lines(io.BytesIO(b'{"n": 12345}\n'))] == [{"n": 12345}]

    def test_a_line_that_is_not_json_is_yielded_with_its_error(self):
        lines = list(tables.read_json_lines(io.BytesIO(b'{"a": 1}\n\n{nope}\n')))
        assert [(line.number, line.value, line.error is None) for line in lines] == [
            (1, {"a": 1}, True),
            (3, None, False),
        ]

    def test_the_line_past_a_limit_refuses_the_file_by_number(self):
        with pytest.raises(tables.TableError) as caught:
            list(tables.read_json_lines(io.BytesIO(hostile.huge_int_jsonl())))
        assert (caught.value.problems[0].row, caught.value.problems[0].unit) == (2, "Line")
