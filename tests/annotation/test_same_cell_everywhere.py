"""The same cell reads the same in an item import, a protocol import and `manage.py analyze`, from CSV or XLSX.

Before the one table reader, a workbook's TRUE was "true" in item imports and
"1" in analyze, 1.0 and dates differed, and a formula without a saved value was
an error in one reader and a blank in another.
"""

import datetime as dt
import io
import json
import math

import pytest
from django.core.management import call_command

from annotation.importers import import_item_file
from annotation.protocols import protocol_import, study_from_template
from annotation.services.studies import study_create
from ratings import io as ratings_io
from tests import hostile_files as files

pytestmark = pytest.mark.django_db

# A workbook's typed cell, what Excel writes for it when the sheet is saved as CSV, and how every reader reads it.
CELLS = [
    (True, "TRUE", "TRUE"),
    (1, "1", "1"),
    (1.0, "1", "1"),
    (" 2 ", " 2 ", "2"),
    (dt.datetime(2024, 3, 1), "2024-03-01", "2024-03-01"),
    (dt.datetime(2024, 3, 1, 14, 30), "2024-03-01T14:30:00", "2024-03-01T14:30:00"),
]
EXPECTED = [expected for _, _, expected in CELLS]


def as_csv(rows: list[list]) -> bytes:
    return "".join(",".join("" if c is None else str(c) for c in row) + "\n" for row in rows).encode()


def table(rows: list[list], fmt: str) -> bytes:
    return files.workbook(rows) if fmt == "xlsx" else as_csv(rows)


def cells(fmt: str) -> list:
    return [typed if fmt == "xlsx" else written for typed, written, _ in CELLS]


@pytest.mark.parametrize("fmt", ["xlsx", "csv"])
class TestTheSameCellEverywhere:
    def test_an_item_import_reads_each_cell_as_its_canonical_text(self, researcher, fmt):
        study = study_create(owner=researcher, name=f"Cells {fmt}", task_type="ordinal")
        data = table([["id", "text"], *[[f"i{n}", value] for n, value in enumerate(cells(fmt))]], fmt)
        result = import_item_file(study=study, stream=io.BytesIO(data), fmt=fmt, size=len(data))
        assert result.ok, result.errors
        assert list(study.items.order_by("position").values_list("text", flat=True)) == EXPECTED

    def test_a_protocol_import_reads_them_the_same(self, researcher, fmt):
        study = study_from_template(owner=researcher, template="jest", name=f"Cells {fmt}")
        rows = [["id", "setup", "response"], *[[f"i{n}", "Setup.", value] for n, value in enumerate(cells(fmt))]]
        result = protocol_import(study=study, data=table(rows, fmt), filename=f"panel.{fmt}")
        assert result.ok, result.errors
        assert list(study.items.order_by("position").values_list("text", flat=True)) == EXPECTED

    def test_analyze_reads_them_the_same(self, tmp_path, fmt):
        rows = [["a", "b", "winner"], *[[value, f"x{n}", value] for n, value in enumerate(cells(fmt))]]
        path = tmp_path / f"matches.{fmt}"
        path.write_bytes(table(rows, fmt))
        out = io.StringIO()
        call_command("analyze", "pairwise", str(path), "--json", "--bootstrap", "2", stdout=out)
        contestants = set(json.loads(out.getvalue())["win_rate"])
        assert set(EXPECTED) <= contestants

    def test_where_a_number_is_expected_true_1_1_0_and_padded_2_are_numbers_everywhere(self, tmp_path, researcher, fmt):
        values = cells(fmt)[:4]  # TRUE, 1, 1.0, " 2 "
        path = tmp_path / f"ratings.{fmt}"
        path.write_bytes(table([["item", "rater", "value"], *[["i1", f"r{n}", v] for n, v in enumerate(values)]], fmt))
        ratings = ratings_io.ratings_from_table(ratings_io.read_table(path))
        assert ratings.values.tolist() == [[1.0, 1.0, 1.0, 2.0]]
        study = study_create(owner=researcher, name=f"Gold {fmt}", task_type="ordinal")
        data = table([["id", "text", "gold"], *[[f"i{n}", "A joke", v] for n, v in enumerate(values[1:])]], fmt)
        assert import_item_file(study=study, stream=io.BytesIO(data), fmt=fmt, size=len(data)).ok
        assert [g["rating"] for g in study.items.order_by("position").values_list("gold", flat=True)] == [1, 1, 2]

    def test_empty_and_blank_cells_are_absent_everywhere(self, tmp_path, researcher, fmt):
        study = study_create(owner=researcher, name=f"Blanks {fmt}", task_type="ordinal")
        data = table([["id", "text", "meta.note"], ["i1", "A joke", "   "], [None, None, None], ["i2", "B", "x"]], fmt)
        assert import_item_file(study=study, stream=io.BytesIO(data), fmt=fmt, size=len(data)).ok
        assert list(study.items.order_by("position").values_list("metadata", flat=True)) == [{}, {"note": "x"}]
        path = tmp_path / f"blank.{fmt}"
        path.write_bytes(table([["item", "rater", "value"], ["i1", "r1", "  "], ["i1", "r2", 2], ["i2", "r1", 1]], fmt))
        read = ratings_io.read_table(path)
        assert read.row_numbers == [2, 3, 4]
        ratings = ratings_io.ratings_from_table(read)
        by_rater = dict(zip(ratings.rater_ids, ratings.values[0], strict=True))
        assert by_rater["r2"] == 2.0
        assert math.isnan(by_rater["r1"])  # a blank rating is a skipped item, not a zero
