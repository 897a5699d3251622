# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the item importers (CSV, XLSX, JSON Lines) with generated files.

Whatever the file holds — the wrong encoding, a byte order mark, missing or
extra columns, repeated ids, enormous cells, gold outside the scale, cells that
look like spreadsheet formulas, random bytes — an import either creates one
item per row or is refused with messages that each say where the problem is,
and then the database is exactly as it was. The importer never raises.
"""

import csv
import io
import itertools
import json

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from openpyxl import Workbook

from annotation.importers import import_item_file
from annotation.importers.cells import MAX_CELL_CHARS
from annotation.services.studies import study_create

from .conftest import database_counts, is_located

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
STUDY_NUMBERS = itertools.count(1)
ENORMOUS = "ha" * (MAX_CELL_CHARS // 2) + "!"  # one character over the limit
FORMULAS = ["=1+1", "=SUM(A1:A3)", "+41+1", "-2+3", "@SUM(1)", '=HYPERLINK("http://x","x")', "=cmd|' /C calc'!A0"]
KNOWN_COLUMNS = ["prompt", "text", "gold", "attention_check", "meta.source", "candidate.a", "candidate.a.model"]
WRONG_COLUMNS = ["colour", "txet", "candidate.b.context", "", "id", "meta."]
ENCODINGS = ["utf-8", "utf-8-sig", "latin-1", "cp1252", "utf-16", "utf-16-le", "utf-16-be"]

# Text an annotator might really paste, plus the awkward corners of Unicode.
any_text = st.text(max_size=40)
xlsx_safe_text = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=40)


def cells(text):
    """A cell's text: ordinary, empty, a formula, a number, a yes/no word, or far too long."""
    return st.one_of(
        text,
        st.just(""),
        st.sampled_from(FORMULAS),
        st.integers(-5, 12).map(str),
        st.sampled_from(["yes", "no", "x", "maybe", "TRUE", " "]),
        st.just(ENORMOUS),
    )


def ids(text=any_text):
    """A few ids, so that rows repeat one another often, and now and then any text."""
    return st.one_of(st.sampled_from(["j1", "j2", "j3", "j4", "", "  "]), text)


@st.composite
def tables(draw, text=any_text):
    """A header and rows: usually an id column and known columns, sometimes wrong, missing or repeated ones."""
    header = []
    if draw(st.integers(0, 9)):  # one file in ten has no id column
        header.append("id")
    header += draw(st.lists(st.sampled_from(KNOWN_COLUMNS), unique=True, max_size=4))
    if not draw(st.integers(0, 3)):
        header.append(draw(st.sampled_from(WRONG_COLUMNS)))
    header = draw(st.permutations(header))
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = [draw(ids(text)) if name == "id" else draw(cells(text)) for name in header]
        if not draw(st.integers(0, 7)):  # a ragged row: one cell missing or one too many
            row = row[:-1] if row and draw(st.booleans()) else [*row, draw(cells(text))]
        rows.append(row)
    return [list(header), *rows]


@st.composite
def valid_tables(draw, text=any_text):
    """Files that should import: distinct ids, gold on the scale, any text at all in the other cells."""
    header = ["id", "text", *draw(st.lists(st.sampled_from(["prompt", "gold", "meta.source"]), unique=True))]
    count = draw(st.integers(1, 5))
    rows = []
    for number in range(count):
        values = {"id": f"v{number}", "text": "joke " + draw(text), "prompt": draw(text), "meta.source": draw(text)}
        values["gold"] = draw(st.sampled_from(["", "0", "3", "2.0"]))
        rows.append([values[name] for name in header])
    return [header, *rows]


def csv_file(table: list[list[str]], *, delimiter: str, encoding: str) -> bytes:
    buffer = io.StringIO(newline="")
    csv.writer(buffer, delimiter=delimiter).writerows(table)
    return buffer.getvalue().encode(encoding, errors="replace")


def xlsx_file(table: list[list]) -> bytes:
    workbook = Workbook()
    for row in table:
        # Numbers stay numbers, as Excel stores them; "=..." becomes a formula cell with no saved value.
        workbook.active.append([int(c) if c.lstrip("-").isdigit() and c.isascii() else c for c in row])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def is_blank(row) -> bool:
    return not any(str(c).strip() for c in row if c is not None)


def data_rows(rows) -> int:
    """Rows after the header (the first row that is not blank) that are not blank: one item each."""
    rows = [r for r in rows if not is_blank(r)]
    return max(len(rows) - 1, 0)


def csv_rows_as_read(data: bytes, delimiter: str) -> int | None:
    """The data rows of a CSV file as UTF-8 text (after any wrong encoding took effect), or None if unreadable."""
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
        return data_rows(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except (UnicodeDecodeError, csv.Error):
        return None


def new_study(task_type: str = "ordinal"):
    owner, _ = get_user_model().objects.get_or_create(username="fuzz-researcher")
    return study_create(owner=owner, name=f"Fuzzed study {next(STUDY_NUMBERS)}", task_type=task_type)


def assert_all_or_nothing(data: bytes, fmt: str, *, rows: int | None, task_type: str = "ordinal", limit=None):
    """The property: every row imported, or located messages and no change at all."""
    study = new_study(task_type)
    before = database_counts()
    with override_settings(FUNNYBONE_IMPORT_MAX_BYTES=limit or 50 * 1024 * 1024):
        result = import_item_file(study=study, stream=io.BytesIO(data), fmt=fmt, size=len(data))
    after = database_counts()
    if currently_in_test_context():
        event("imported" if result.ok else "refused")
    if result.ok:
        assert result.count == after[1] - before[1] == study.items.count()
        if rows is not None:
            assert result.count == rows
        return result
    assert result.errors, "a refused import must say why"
    unlocated = [m for m in result.errors if not is_located(m)]
    assert not unlocated, f"messages that do not say where: {unlocated}"
    assert after == before
    return result


class TestCsvFuzz:
    @FUZZ
    @given(
        table=tables(),
        delimiter=st.sampled_from([",", ";", "\t"]),
        encoding=st.sampled_from(ENCODINGS),
        limit=st.sampled_from([None, None, None, 400]),
    )
    def test_any_table_in_any_encoding_imports_whole_or_not_at_all(self, db, table, delimiter, encoding, limit):
        data = csv_file(table, delimiter=delimiter, encoding=encoding)
        assert_all_or_nothing(data, "csv", rows=csv_rows_as_read(data, delimiter), limit=limit)

    @FUZZ
    @given(table=valid_tables(), delimiter=st.sampled_from([",", ";", "\t"]), bom=st.booleans())
    def test_a_well_formed_table_with_any_text(self, db, table, delimiter, bom):
        data = (b"\xef\xbb\xbf" if bom else b"") + csv_file(table, delimiter=delimiter, encoding="utf-8")
        assert_all_or_nothing(data, "csv", rows=csv_rows_as_read(data, delimiter))

    @FUZZ
    @given(data=st.binary(max_size=300))
    def test_random_bytes_never_raise(self, db, data):
        assert_all_or_nothing(data, "csv", rows=None)


class TestXlsxFuzz:
    @settings(FUZZ, max_examples=25)
    @given(table=tables(text=xlsx_safe_text), limit=st.sampled_from([None, None, None, 3000]))
    def test_any_sheet_imports_whole_or_not_at_all(self, db, table, limit):
        assert_all_or_nothing(xlsx_file(table), "xlsx", rows=data_rows(table), limit=limit)

    @settings(FUZZ, max_examples=25)
    @given(table=valid_tables(text=xlsx_safe_text))
    def test_a_well_formed_sheet_with_any_text(self, db, table):
        assert_all_or_nothing(xlsx_file(table), "xlsx", rows=data_rows(table))

    @settings(FUZZ, max_examples=25)
    @given(data=st.binary(max_size=300), zip_header=st.booleans())
    def test_random_bytes_and_broken_zips_never_raise(self, db, data, zip_header):
        assert_all_or_nothing((b"PK\x03\x04" if zip_header else b"") + data, "xlsx", rows=None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=True) | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)
candidate_objects = st.fixed_dictionaries(
    {"key": st.sampled_from(["a", "b", "c", "a"]) | json_values, "text": any_text | st.just(ENORMOUS)},
    optional={"provenance": json_values, "context": any_text, "colour": any_text},
)
item_objects = st.fixed_dictionaries(
    {"id": ids() | json_values},
    optional={
        "prompt": any_text | st.sampled_from(FORMULAS),
        "text": any_text | st.just(ENORMOUS) | json_values,
        "gold": st.integers(-5, 12) | any_text | json_values,
        "attention_check": json_values,
        "metadata": json_values,
        "candidates": st.lists(candidate_objects, max_size=3) | json_values,
        "txet": any_text,
    },
)
jsonl_lines = st.lists(
    st.one_of(
        item_objects.map(lambda o: json.dumps(o, ensure_ascii=False)),
        json_values.map(json.dumps),  # valid JSON that is not an item
        any_text,  # not JSON at all
        st.just(""),
    ),
    max_size=6,
)


class TestJsonLinesFuzz:
    @FUZZ
    @given(
        lines=jsonl_lines,
        encoding=st.sampled_from(ENCODINGS),
        task_type=st.sampled_from(["ordinal", "pairwise"]),
        limit=st.sampled_from([None, None, None, 300]),
    )
    def test_any_lines_import_whole_or_not_at_all(self, db, lines, encoding, task_type, limit):
        data = "\n".join(lines).encode(encoding, errors="replace")
        try:
            rows = sum(1 for line in data.removeprefix(b"\xef\xbb\xbf").decode("utf-8").split("\n") if line.strip())
        except UnicodeDecodeError:
            rows = None
        assert_all_or_nothing(data, "jsonl", rows=rows, task_type=task_type, limit=limit)

    @FUZZ
    @given(
        objects=st.lists(
            st.fixed_dictionaries(
                {"text": any_text.map("joke {}".format)}, optional={"prompt": any_text, "metadata": json_values}
            ),
            min_size=1,
            max_size=5,
        )
    )
    def test_well_formed_items_with_any_text(self, db, objects):
        lines = [json.dumps({"id": f"v{n}", **obj}) for n, obj in enumerate(objects)]
        assert_all_or_nothing("\n".join(lines).encode(), "jsonl", rows=len(lines))

    @FUZZ
    @given(data=st.binary(max_size=300))
    @example(data=b"\xef\xbb\xbf")
    @example(data=b"\n\n   \n")
    def test_random_bytes_never_raise(self, db, data):
        assert_all_or_nothing(data, "jsonl", rows=None)


# -- fixed examples, one per category, so the common cases run even with few examples --------------


def messages(data: bytes, fmt: str, **kwargs) -> list[str]:
    result = assert_all_or_nothing(data, fmt, rows=None, **kwargs)
    assert not result.ok
    return result.errors


class TestRegressionExamples:
    def test_a_latin_1_csv_names_the_line_and_byte(self, db):
        errors = messages("id,text\nj1,Crème brûlée\n".encode("latin-1"), "csv")
        assert errors[0] == "Line 2, byte offset 13: byte 0xe8 is not valid UTF-8."

    def test_a_utf_16_csv_says_to_save_as_utf_8(self, db):
        assert messages("id,text\nj1,hi\n".encode("utf-16"), "csv") == [
            "The file is UTF-16 encoded; save it as UTF-8 (in Excel: 'CSV UTF-8')."
        ]

    def test_a_utf_16_csv_without_a_byte_order_mark_names_the_first_nul_byte(self, db):
        errors = messages("id,text\nj1,hi\n".encode("utf-16-le"), "csv")
        assert errors == [
            "Line 1, byte offset 1: the file holds a NUL byte (0x00), so it is not UTF-8 text "
            "(perhaps UTF-16 without a byte order mark); save it as UTF-8 and upload it again."
        ]

    def test_a_nul_character_is_refused_by_row_not_by_the_database(self, db):
        # PostgreSQL raised DataError on these after every check had passed.
        errors = messages(
            b'{"id": "j1", "text": "a\\u0000b"}\n{"id": "j2", "text": "ok", "metadata": {"k\\u0000": 1}}', "jsonl"
        )
        assert errors == [
            "Line 1 (id 'j1'): 'text' holds a NUL character (0x00) at position 2; remove it.",
            "Line 2 (id 'j2'): 'metadata' holds a NUL character (0x00) at position 2; remove it.",
        ]
        errors = messages(b"id,text\nj1,a\x00b\n", "csv")
        assert errors[0].startswith("Line 2, byte offset 12: the file holds a NUL byte (0x00)")

    def test_an_enormous_provenance_cell(self, db):
        errors = messages(f"id,candidate.a,candidate.a.model\nj1,hi,{ENORMOUS}\n".encode(), "csv")
        assert errors[0] == "Row 2: column 'candidate.a.model' holds 20,001 characters; the limit is 20,000."

    def test_a_bom_csv_imports(self, db):
        result = assert_all_or_nothing(b"\xef\xbb\xbfid,text\nj1,hi\nj2,ho\n", "csv", rows=2)
        assert result.count == 2

    def test_an_empty_file_and_a_header_only_file(self, db):
        assert messages(b"", "csv") == ["The file is empty; the first row must name the columns (at least 'id')."]
        assert messages(b"id,text\n", "csv") == ["The file holds no items."]
        assert messages(b"", "jsonl") == ["The file holds no items."]
        assert messages(xlsx_file([["id", "text"]]), "xlsx") == ["The file holds no items."]

    def test_missing_and_extra_columns(self, db):
        assert messages(b"text\nhi\n", "csv")[0] == "The file has no 'id' column; every item needs an id."
        assert messages(b"id,txet\nj1,hi\n", "csv")[0].startswith("Unknown column 'txet' (did you mean 'text'?)")
        assert messages(b"id,text\nj1,hi,extra\n", "csv") == ["Row 2: has 3 cells but the header names 2 columns."]

    def test_a_repeated_id_names_both_rows(self, db):
        errors = messages(b"id,text\nj1,hi\nj1,ho\n", "csv")
        assert len(errors) == 1 and errors[0].startswith("Row 3: ") and "Row 2" in errors[0]

    def test_an_enormous_cell(self, db):
        errors = messages(f"id,text\nj1,{ENORMOUS}\n".encode(), "csv")
        assert errors == [f"Row 2: column 'text' holds {MAX_CELL_CHARS + 1:,} characters; the limit is 20,000."]
        errors = messages(json.dumps({"id": "j1", "text": ENORMOUS}).encode(), "jsonl")
        assert errors[0].startswith("Line 1 (id 'j1'): 'text' holds 20,001 characters")

    def test_a_file_over_the_size_limit(self, db):
        errors = messages(b"id,text\n" + b"j,hi\n" * 100, "csv", limit=100)
        assert errors[0].startswith("The file is ") and "Split it into several files." in errors[0]

    def test_gold_outside_the_scale(self, db):
        errors = messages(b"id,text,gold\nj1,hi,7\nj2,ho,-1\n", "csv")
        assert [e.split(":")[0] for e in errors] == ["Row 2", "Row 3"]
        assert all("gold answer" in e for e in errors)
        errors = messages(xlsx_file([["id", "text", "gold"], ["j1", "hi", "9"]]), "xlsx")
        assert errors[0].startswith("Row 2: gold answer")

    def test_formula_cells_are_text_in_csv_and_an_error_without_a_saved_value_in_xlsx(self, db):
        assert_all_or_nothing(b"id,text\nj1,=1+1\nj2,@SUM(1)\nj3,-2+3\n", "csv", rows=3)
        assert sorted(result_texts()) == ["-2+3", "=1+1", "@SUM(1)"]
        errors = messages(xlsx_file([["id", "text"], ["j1", "=1+1"]]), "xlsx")
        assert errors[0] == (
            "Row 2: the formula in B2 (=1+1) has no saved value; "
            "open and save the file in Excel, or paste the values instead of formulas."
        )

    def test_random_bytes_as_xlsx(self, db):
        assert messages(b"PK\x03\x04garbage", "xlsx")[0].startswith("This is not a readable XLSX file")


def result_texts() -> list[str]:
    from annotation.models import Study

    return list(Study.objects.order_by("-id").first().items.values_list("text", flat=True))
