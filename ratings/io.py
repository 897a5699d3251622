# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading judgment tables from CSV or XLSX files for ``manage.py analyze``.

A file becomes a :class:`Table`: its header and its data rows as text, each
row remembering the line (CSV) or sheet row (XLSX) it came from so that every
complaint can name it. The ``*_from_table`` functions then check the columns a
kind of analysis needs and turn the text into arrays for ``ratings.stats``.

Problems raise :class:`InputError` with a message a researcher can act on
("row 7: 'three' in column 'value' is not a number").
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from annotation import tables

TIE = "tie"


class InputError(ValueError):
    """The input file cannot be analysed as asked; the message says where and why."""


@dataclass(frozen=True)
class Table:
    """A header and data rows of text; ``row_numbers[i]`` is where row i sits in the file."""

    columns: list[str]
    rows: list[list[str]]
    row_numbers: list[int]

    @cached_property
    def shortest_row(self) -> int:
        return min(map(len, self.rows), default=0)

    def column(self, position: int) -> list[str]:
        """Every data row's text in one column ("" where a row is shorter)."""
        if self.shortest_row > position:
            return list(map(operator.itemgetter(position), self.rows))
        return [row[position] if position < len(row) else "" for row in self.rows]

    def index(self, name: str) -> int | None:
        """Position of a column, matching names without regard to case or surrounding spaces."""
        wanted = name.strip().casefold()
        for i, column in enumerate(self.columns):
            if column.strip().casefold() == wanted:
                return i
        return None

    def require(self, *names: str) -> list[int]:
        positions = [self.index(n) for n in names]
        missing = [n for n, p in zip(names, positions, strict=True) if p is None]
        if missing:
            found = ", ".join(repr(c) for c in self.columns) or "none"
            raise InputError(f"missing column(s) {', '.join(missing)}; the header has {found}")
        return [p for p in positions if p is not None]


@dataclass(frozen=True)
class Labels:
    """The declared scale: numbers in ascending order, or text labels in the given order.

    ``codes`` are the numbers the statistics see: the values themselves for a
    numeric scale, the position in the list for text labels.
    """

    names: list[str]
    codes: np.ndarray
    numeric: bool


# -- reading files ----------------------------------------------------------


def read_table(path: str | Path) -> Table:
    """Read a CSV (comma, semicolon or tab separated, UTF-8) or an XLSX file (first sheet).

    The file is opened once and read by the one table reader
    (``annotation.tables``), so a cell reads here exactly as it does in an
    item or protocol import, and the same hostile files are refused.
    """
    path = Path(path)
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    with stream:
        magic = stream.read(4)
        stream.seek(0)
        fmt = tables.XLSX if path.suffix.lower() in (".xlsx", ".xlsm") or magic == b"PK\x03\x04" else tables.CSV
        quick = tables.quick_csv_texts(stream) if fmt == tables.CSV else None
        if quick is not None:
            numbers, texts = quick
            if not texts:
                raise InputError(f"{path.name} is empty")
            return _table(path, texts[0], texts[1:], numbers[1:])
        try:
            header_row, rows = tables.split_header(tables.read_rows(stream, fmt=fmt))
            if header_row is None:
                raise InputError(f"{path.name} is empty")
            header = header_row.texts()
            body: list[list[str]] = []
            numbers: list[int] = []
            for row in itertools.chain([header_row], rows):
                if row.problems:
                    raise InputError(f"{path.name}: {row.problems[0]}")
                if row is not header_row:
                    body.append(row.texts())
                    numbers.append(row.number)
        except tables.TableError as exc:
            raise InputError(f"{path.name} cannot be read: {' '.join(exc.messages)}") from None
    return _table(path, header, body, numbers)


def _table(path: Path, header: list[str], body: list[list[str]], numbers: list[int]) -> Table:
    # A header cell left empty at the end (a stray separator, a formatted column) names no column.
    while header and not header[-1]:
        header.pop()
    if not body:
        raise InputError(f"{path.name} has a header but no data rows")
    return Table(columns=header, rows=body, row_numbers=numbers)


# -- cells --------------------------------------------------------------------


def _cell(table: Table, i: int, column: int) -> str:
    row = table.rows[i]
    return row[column] if column < len(row) else ""


def _number(text: str, *, where: str) -> float:
    """The number a cell stands for, by the table reader's rule (TRUE/FALSE read as 1/0, "3,5" as 3.5)."""
    value = tables.cell_number(text)
    if value is not None:
        return value
    try:
        float(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a number") from None
    raise InputError(f"{where}: {text!r} is not a finite number")


def parse_labels(text: str | None) -> Labels | None:
    """``--labels 0,1,2,3`` (numbers, sorted) or ``--labels no,yes`` (text, order kept)."""
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    if len(names) < 2:
        raise InputError("--labels needs at least two labels separated by commas, e.g. 0,1,2,3")
    if len({n.casefold() for n in names}) != len(names):
        raise InputError(f"--labels lists a label twice: {text}")
    try:
        numbers = [float(n) for n in names]
    except ValueError:
        return Labels(names=names, codes=np.arange(len(names), dtype=float), numeric=False)
    if not all(math.isfinite(n) for n in numbers):
        raise InputError("--labels must be finite numbers or text labels")
    order = np.argsort(numbers, kind="stable")
    return Labels(names=[names[i] for i in order], codes=np.array(numbers, dtype=float)[order], numeric=True)


def _code(text: str, labels: Labels | None, *, where: str) -> float:
    """A rating as the number the statistics use, checked against the declared labels."""
    if labels is not None and not labels.numeric:
        for name, code in zip(labels.names, labels.codes, strict=True):
            if text.casefold() == name.casefold():
                return float(code)
        raise InputError(f"{where}: {text!r} is not one of the labels {', '.join(labels.names)}")
    value = _number(text, where=where)
    if labels is not None and not np.any(labels.codes == value):
        raise InputError(f"{where}: {text} is outside the labels {', '.join(labels.names)}")
    return value


# -- ratings --------------------------------------------------------------------


@dataclass(frozen=True)
class RatingsInput:
    values: np.ndarray  # items × raters, NaN where a rater did not rate an item
    item_ids: list[str]
    rater_ids: list[str]
    layout: str  # "long" or "wide"


def is_long(table: Table) -> bool:
    return table.index("item") is not None and table.index("rater") is not None


def ratings_from_table(table: Table, labels: Labels | None = None) -> RatingsInput:
    """Long (``item,rater,value``) or wide (item column, then one column per rater) ratings."""
    if is_long(table):
        return _long_ratings(table, labels)
    return _wide_ratings(table, labels)


def _long_ratings(table: Table, labels: Labels | None) -> RatingsInput:
    """Checked in bulk, column by column; the message names the first row (in file order) with a problem."""
    if table.index("value") is None:
        raise InputError(
            "long format needs the columns item, rater and value; the header has "
            + ", ".join(repr(c) for c in table.columns)
        )
    item_col, rater_col, value_col = table.require("item", "rater", "value")
    items = table.column(item_col)
    raters = table.column(rater_col)
    texts = table.column(value_col)
    rows = np.asarray(table.row_numbers)
    problems = _Problems(rows)
    problems.first(np.flatnonzero(_is_empty(items)), 0, lambda i: ": the item column is empty")
    problems.first(np.flatnonzero(_is_empty(raters)), 1, lambda i: ": the rater column is empty")
    rated = np.flatnonzero(~_is_empty(texts))  # a blank value means the rater skipped the item
    codes, distinct = _factorize(_select(texts, rated))
    numbers = _coded(distinct, labels, "column 'value'", problems, rated, codes)
    item_codes, item_ids = _factorize(_select(items, rated))
    rater_codes, rater_ids = _factorize(_select(raters, rated))
    keys = item_codes * max(len(rater_ids), 1) + rater_codes
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if repeated.size:
        # The earliest repeat in the file is a second occurrence; the one before it in key order is the first.
        later = order[1:][repeated]
        pick = int(np.argmin(later))
        again, first = int(rated[later[pick]]), int(rated[order[:-1][repeated][pick]])
        problems.add(
            again,
            3,
            f": rater {raters[again]!r} already rated item {items[again]!r} on row {table.row_numbers[first]}",
        )
    problems.raise_first()
    if rated.size == 0:
        raise InputError("the file has no ratings (every value is blank)")
    matrix = np.full((len(item_ids), len(rater_ids)), np.nan)
    matrix[item_codes, rater_codes] = numbers[codes]
    return RatingsInput(values=matrix, item_ids=item_ids, rater_ids=rater_ids, layout="long")


def _wide_ratings(table: Table, labels: Labels | None) -> RatingsInput:
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
    rows = np.asarray(table.row_numbers)
    problems = _Problems(rows)
    items = table.column(0)
    problems.first(np.flatnonzero(_is_empty(items)), 0, lambda i: f": the item column ({header[0]!r}) is empty")
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        if item and seen.setdefault(item, i) != i:
            problems.add(i, 1, f": item {item!r} already appears on row {table.row_numbers[seen[item]]}")
            break
    width = len(header)
    longer = [i for i, row in enumerate(table.rows) if len(row) > width and any(row[width:])]
    problems.first(np.asarray(longer, dtype=int), 2, lambda i: ": more cells than header columns")
    matrix = np.full((len(table.rows), len(raters)), np.nan)
    for j, rater in enumerate(raters):
        texts = table.column(j + 1)
        rated = np.flatnonzero(~_is_empty(texts))
        codes, distinct = _factorize(_select(texts, rated))
        # Within a row the columns are checked left to right: the column number orders the problems.
        numbers = _coded(distinct, labels, f"column {rater!r}", problems, rated, codes, priority=3 + j)
        matrix[rated, j] = numbers[codes]
    problems.raise_first()
    # An item nobody rated is no item of the analysis, as in the long layout, where it has no row:
    # the same ratings give the same figures in either layout (an all-blank row made Fleiss' κ null).
    rated_rows = np.flatnonzero(~np.isnan(matrix).all(axis=1))
    if rated_rows.size == 0:
        raise InputError("the file has no ratings (every cell is blank)")
    return RatingsInput(
        values=matrix[rated_rows], item_ids=_select(items, rated_rows), rater_ids=list(raters), layout="wide"
    )


class _Problems:
    """The problems found in bulk; the one reported is the first a row-by-row reading would meet."""

    def __init__(self, row_numbers: np.ndarray) -> None:
        self.row_numbers = row_numbers
        self.found: list[tuple[int, int, str]] = []

    def add(self, index: int, priority: int, message: str) -> None:
        self.found.append((index, priority, message))

    def first(self, indices: np.ndarray, priority: int, message) -> None:
        if indices.size:
            index = int(indices[0])
            self.add(index, priority, message(index))

    def raise_first(self) -> None:
        if self.found:
            index, _, message = min(self.found, key=lambda found: (found[0], found[1]))
            raise InputError(f"row {self.row_numbers[index]}{message}")


def _is_empty(texts: list[str]) -> np.ndarray:
    return np.fromiter(map(operator.not_, texts), dtype=bool, count=len(texts))


def _factorize(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each text's position among the distinct texts (in order of first appearance), and those texts."""
    distinct = list(dict.fromkeys(texts))
    position = {text: i for i, text in enumerate(distinct)}
    return np.fromiter(map(position.__getitem__, texts), dtype=np.int64, count=len(texts)), distinct


def _select(texts: list[str], indices: np.ndarray) -> list[str]:
    """The texts at ``indices`` (all of them, unchanged, when nothing is left out)."""
    if indices.size == len(texts):
        return texts
    return [texts[i] for i in indices.tolist()]


def _coded(
    distinct: list[str],
    labels: Labels | None,
    column: str,
    problems: _Problems,
    rows: np.ndarray,
    codes: np.ndarray,
    *,
    priority: int = 2,
) -> np.ndarray:
    """Each distinct text coded once; a text that is no rating is reported at the first row holding it.

    Distinct texts come in order of first appearance, so the first that fails
    is also the first failing row: checking stops there.
    """
    numbers = np.full(len(distinct), np.nan)
    for k, text in enumerate(distinct):
        try:
            numbers[k] = _code(text, labels, where="")
        except InputError as exc:
            index = int(rows[int(np.argmax(codes == k))])
            problems.add(index, priority, f", {column}{exc}")
            break
    return numbers


# -- pairwise ---------------------------------------------------------------------


@dataclass(frozen=True)
class PairwiseInput:
    a: list[str]
    b: list[str]
    score: np.ndarray  # a's result: 1 won, 0.5 tie, 0 lost
    items: list[str] | None


def pairwise_from_table(table: Table) -> PairwiseInput:
    """Matches ``a,b,winner`` where the winner is a's id, b's id or ``tie``; ``item`` optional."""
    a_col, b_col, w_col = table.require("a", "b", "winner")
    item_col = table.index("item")
    a_ids: list[str] = []
    b_ids: list[str] = []
    scores: list[float] = []
    items: list[str] = []
    for i, number in enumerate(table.row_numbers):
        where = f"row {number}"
        a, b, winner = (_cell(table, i, c) for c in (a_col, b_col, w_col))
        if not a or not b:
            raise InputError(f"{where}: both contestants (columns a and b) are needed")
        if a == b:
            raise InputError(f"{where}: {a!r} is matched against itself")
        if winner == a:
            score = 1.0
        elif winner == b:
            score = 0.0
        elif winner.casefold() == TIE:
            score = 0.5
        else:
            raise InputError(f"{where}: winner {winner!r} is neither {a!r}, {b!r} nor 'tie'")
        a_ids.append(a)
        b_ids.append(b)
        scores.append(score)
        if item_col is not None:
            items.append(_cell(table, i, item_col))
    if len(set(a_ids) | set(b_ids)) < 2:
        raise InputError("pairwise analysis needs at least two contestants")
    return PairwiseInput(a=a_ids, b=b_ids, score=np.array(scores), items=items if item_col is not None else None)


# -- alignment ----------------------------------------------------------------------


@dataclass(frozen=True)
class AlignmentInput:
    items: list[str]
    reference: np.ndarray
    predicted: np.ndarray  # NaN where the prediction is missing (refused, unparseable)


def alignment_from_table(table: Table, labels: Labels | None = None) -> AlignmentInput:
    """Rows ``item,reference,predicted``; a blank prediction counts as a missing answer."""
    item_col, ref_col, pred_col = table.require("item", "reference", "predicted")
    items: list[str] = []
    reference: list[float] = []
    predicted: list[float] = []
    seen: dict[str, int] = {}
    for i, number in enumerate(table.row_numbers):
        where = f"row {number}"
        item = _cell(table, i, item_col)
        if not item:
            raise InputError(f"{where}: the item column is empty")
        if item in seen:
            raise InputError(f"{where}: item {item!r} already appears on row {seen[item]}")
        seen[item] = number
        ref_text = _cell(table, i, ref_col)
        if not ref_text:
            raise InputError(f"{where}: the reference column is empty")
        pred_text = _cell(table, i, pred_col)
        items.append(item)
        reference.append(_code(ref_text, labels, where=f"{where}, column 'reference'"))
        predicted.append(_code(pred_text, labels, where=f"{where}, column 'predicted'") if pred_text else math.nan)
    return AlignmentInput(items=items, reference=np.array(reference), predicted=np.array(predicted))


def observed_labels(values: Sequence[np.ndarray]) -> np.ndarray:
    """Sorted distinct numbers across arrays (NaN ignored), used when no --labels are given."""
    joined = np.concatenate([np.asarray(v, dtype=float).ravel() for v in values])
    return np.unique(joined[~np.isnan(joined)])
