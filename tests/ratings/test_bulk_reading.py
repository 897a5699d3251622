"""Bulk reading for ``analyze``: the same table and the same first complaint as reading row by row.

The row-by-row checks below are the ones ``ratings.io`` used before it checked
in bulk; they are kept here as the oracle. Random tables with random faults
(empty ids, bad values, repeats, extra cells) must give the same matrix or the
same message naming the same row.
"""

import io as stdio
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation import tables
from ratings import io
from ratings.io import InputError, Labels, RatingsInput, Table, _cell, _code, parse_labels


def oracle_long(table: Table, labels: Labels | None) -> RatingsInput:
    if table.index("value") is None:
        raise InputError(
            "long format needs the columns item, rater and value; the header has "
            + ", ".join(repr(c) for c in table.columns)
        )
    item_col, rater_col, value_col = table.require("item", "rater", "value")
    items: dict[str, int] = {}
    raters: dict[str, int] = {}
    cells: dict[tuple[int, int], tuple[float, int]] = {}
    for i, number in enumerate(table.row_numbers):
        where = f"row {number}"
        item = _cell(table, i, item_col)
        rater = _cell(table, i, rater_col)
        text = _cell(table, i, value_col)
        if not item:
            raise InputError(f"{where}: the item column is empty")
        if not rater:
            raise InputError(f"{where}: the rater column is empty")
        if not text:
            continue  # a blank value means the rater skipped the item
        value = _code(text, labels, where=f"{where}, column 'value'")
        key = (items.setdefault(item, len(items)), raters.setdefault(rater, len(raters)))
        if key in cells:
            raise InputError(f"{where}: rater {rater!r} already rated item {item!r} on row {cells[key][1]}")
        cells[key] = (value, number)
    if not cells:
        raise InputError("the file has no ratings (every value is blank)")
    matrix = np.full((len(items), len(raters)), np.nan)
    for (r, c), (value, _) in cells.items():
        matrix[r, c] = value
    return RatingsInput(values=matrix, item_ids=list(items), rater_ids=list(raters), layout="long")


def oracle_wide(table: Table, labels: Labels | None) -> RatingsInput:
    header = table.columns
    if len(header) < 3:
        raise InputError(
            "ratings need either the columns item, rater, value (long format) or an item column "
            f"followed by one column per rater (wide format); the header has {', '.join(map(repr, header))}"
        )
    raters = header[1:]
    for position, name in enumerate(raters, start=2):
        if not name:
            raise InputError(f"column {position} of the header has no rater name")
    if len({r.casefold() for r in raters}) != len(raters):
        raise InputError("two rater columns have the same name")
    matrix = np.full((len(table.rows), len(raters)), np.nan)
    items: list[str] = []
    seen: dict[str, int] = {}
    for i, number in enumerate(table.row_numbers):
        where = f"row {number}"
        item = _cell(table, i, 0)
        if not item:
            raise InputError(f"{where}: the item column ({header[0]!r}) is empty")
        if item in seen:
            raise InputError(f"{where}: item {item!r} already appears on row {seen[item]}")
        seen[item] = number
        items.append(item)
        if len(table.rows[i]) > len(header) and any(table.rows[i][len(header) :]):
            raise InputError(f"{where}: more cells than header columns")
        for j, rater in enumerate(raters):
            text = _cell(table, i, j + 1)
            if text:
                matrix[i, j] = _code(text, labels, where=f"{where}, column {rater!r}")
    # A row nobody rated is no item, as in the long layout.
    rated = [i for i in range(len(items)) if not np.isnan(matrix[i]).all()]
    if not rated:
        raise InputError("the file has no ratings (every cell is blank)")
    return RatingsInput(values=matrix[rated], item_ids=[items[i] for i in rated], rater_ids=list(raters), layout="wide")


CELLS = st.sampled_from(["", "0", "1", "2", "3", " 2 ", "3,0", "TRUE", "x", "9", "1.5", "nan"])
IDS = st.sampled_from(["", "a", "b", "c", "=d", "猫"])


def outcome(read, table, labels):
    try:
        result = read(table, labels)
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", result.item_ids, result.rater_ids, result.layout, np.nan_to_num(result.values, nan=-99).tolist())


LABELS = st.sampled_from([None, "0,1,2,3", "0,1,2,3,9", "1,2,3,0"])


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(IDS, IDS, CELLS), min_size=1, max_size=12), labels=LABELS)
def test_long_tables_read_in_bulk_as_row_by_row(rows, labels):
    table = Table(
        columns=["item", "rater", "value"], rows=[list(r) for r in rows], row_numbers=list(range(2, 2 + len(rows)))
    )
    parsed = parse_labels(labels)
    assert outcome(io._long_ratings, table, parsed) == outcome(oracle_long, table, parsed)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(st.one_of(IDS, CELLS), min_size=1, max_size=5), min_size=1, max_size=10),
    labels=LABELS,
)
def test_wide_tables_read_in_bulk_as_row_by_row(rows, labels):
    table = Table(columns=["item", "r1", "r2"], rows=rows, row_numbers=list(range(2, 2 + len(rows))))
    parsed = parse_labels(labels)
    assert outcome(io._wide_ratings, table, parsed) == outcome(oracle_wide, table, parsed)


def row_by_row(data: bytes):
    rows = list(tables.read_rows(stdio.BytesIO(data), fmt=tables.CSV))
    return [r.number for r in rows], [r.texts() for r in rows]


TEXT = st.text(alphabet=st.sampled_from([*"ab ,;\t\r\n3=猫é", "\u00a0", "\x0b", "\x1c", "\u2028"]), max_size=60)


@settings(max_examples=400, deadline=None)
@given(text=TEXT, bom=st.booleans())
def test_a_plain_csv_file_reads_the_same_in_one_go(text, bom):
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    assert tables.quick_csv_texts(stdio.BytesIO(data)) == row_by_row(data)


@pytest.mark.parametrize(
    "data",
    [b'item,rater,value\n"a,b",r,1\n', b"item,value\n\x00,1\n", b"item\n\xff\n", b"\xff\xfei\x00", b"a,b\n" * 3],
)
def test_files_the_quick_reader_cannot_vouch_for_go_to_the_full_reader(data):
    quick = tables.quick_csv_texts(stdio.BytesIO(data))
    if b'"' in data or b"\x00" in data or b"\xff" in data:
        assert quick is None
    else:
        assert quick == row_by_row(data)


def test_the_stream_is_left_where_it_was(tmp_path):
    stream = stdio.BytesIO(b'item,rater,value\n"a",r,1\n')
    assert tables.quick_csv_texts(stream) is None
    assert stream.tell() == 0


def test_a_bad_value_is_named_by_row_and_column(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("item,rater,value\nj1,r1,2\n\nj2,r1,three\nj3,r1,also bad\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^row 4, column 'value': 'three' is not a number$"):
        io.ratings_from_table(io.read_table(path))


def test_a_repeat_names_both_rows(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("item,rater,value\nj1,r1,2\nj2,r1,1\nj1,r1,3\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^row 4: rater 'r1' already rated item 'j1' on row 2$"):
        io.ratings_from_table(io.read_table(path))


def test_nan_is_not_a_number_here(tmp_path):
    assert math.isnan(float("nan"))
    with pytest.raises(InputError, match="not a finite number"):
        _code("nan", None, where="row 2")
