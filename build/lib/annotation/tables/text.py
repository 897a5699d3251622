"""Text files, read line by line: UTF-8 decoding with located errors, and CSV.

A file is read in chunks and split into lines as it goes, so memory stays
bounded by the longest line, never the file. Every refusal names the line
(and byte offset) or the row it is about.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from typing import IO

from .problems import Problem, TableError
from .rows import MAX_COLUMNS, MAX_FIELD_CHARS, TableRow, is_blank

UTF8_BOM = b"\xef\xbb\xbf"
CHUNK_BYTES = 64 * 1024
# A physical line longer than this is not a table row (a row of many long cells still fits).
MAX_LINE_BYTES = 1024 * 1024
# Shown for the first few undecodable lines; a wrongly encoded file has them everywhere.
MAX_ENCODING_MESSAGES = 10
LINE_END = re.compile(rb"\r\n|\r|\n")
SAVE_AS_UTF8 = "Save the file as UTF-8 (in Excel: 'CSV UTF-8') and upload it again."

# The csv module refuses a field over this many characters; set here so that no
# other code's setting (it is process-wide) widens what an upload may hold.
csv.field_size_limit(MAX_FIELD_CHARS)


def _binary_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line with its ending) for \\n, \\r\\n and lone \\r line ends, at most MAX_LINE_BYTES each."""
    buffer = b""
    offset = 0
    number = 0
    while True:
        chunk = stream.read(CHUNK_BYTES)
        buffer += chunk
        start = 0
        while True:
            match = LINE_END.search(buffer, start)
            # A \r at the end of the buffer may be the first half of \r\n: wait for the next chunk.
            if match is None or (chunk and match.end() == len(buffer) and match.group() == b"\r"):
                break
            number += 1
            yield offset, buffer[start : match.end()]
            offset += match.end() - start
            start = match.end()
        buffer = buffer[start:]
        if len(buffer) > MAX_LINE_BYTES:
            raise TableError(
                Problem(
                    f"the line is longer than {MAX_LINE_BYTES // 1024:,} KB; is this a text table?",
                    row=number + 1,
                    unit="Line",
                )
            )
        if not chunk:
            if buffer:
                yield offset, buffer
            return


def _decode_problem(line: bytes, *, number: int, offset: int) -> Problem | None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(
            f"byte 0x{line[exc.start]:02x} is not valid UTF-8.", row=number, unit="Line", offset=offset + exc.start
        )
    return None


def text_lines(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """(line number, text with its line end) of a UTF-8 file; a byte order mark is dropped.

    A NUL byte or undecodable bytes stop the reading with a TableError naming
    the line and byte offset (the first few undecodable lines are all listed).
    """
    lines = _binary_lines(stream)
    for number, (offset, line) in enumerate(lines, start=1):
        if number == 1:
            if line.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise TableError("The file is UTF-16 encoded; save it as UTF-8 (in Excel: 'CSV UTF-8').")
            if line.startswith(UTF8_BOM):
                line, offset = line[len(UTF8_BOM) :], offset + len(UTF8_BOM)
        nul = line.find(b"\x00")
        if nul >= 0:
            # Text files never hold NUL bytes; UTF-16 without a byte order mark is full of them.
            raise TableError(
                Problem(
                    "the file holds a NUL byte (0x00), so it is not UTF-8 text (perhaps UTF-16 without a byte "
                    "order mark); save it as UTF-8 and upload it again.",
                    row=number,
                    unit="Line",
                    offset=offset + nul,
                )
            )
        problem = _decode_problem(line, number=number, offset=offset)
        if problem is not None:
            raise TableError(_more_decode_problems(problem, lines, first_number=number))
        yield number, line.decode("utf-8")


def _more_decode_problems(first: Problem, lines: Iterator[tuple[int, bytes]], *, first_number: int) -> list:
    """The first undecodable line and a few more after it, then the advice."""
    problems: list[Problem | str] = [first]
    for number, (offset, line) in enumerate(lines, start=first_number + 1):
        problem = _decode_problem(line, number=number, offset=offset)
        if problem is None:
            continue
        if len(problems) >= MAX_ENCODING_MESSAGES:
            problems.append("... and more lines like these.")
            break
        problems.append(problem)
    problems.append(SAVE_AS_UTF8)
    return problems


def _delimiter(header: str) -> str:
    """The header line's most frequent separator among comma, semicolon and tab."""
    counts = {delimiter: header.count(delimiter) for delimiter in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def read_csv(stream: IO[bytes]) -> Iterator[TableRow]:
    """The non-blank rows of a CSV file (comma, semicolon or tab, sniffed from the first line that has text).

    Rows are numbered as a spreadsheet shows them (a cell spanning lines is
    one row). A quote that is never closed, a cell over MAX_FIELD_CHARS and a row
    over MAX_COLUMNS cells refuse the file, naming the row.
    """
    lines = text_lines(stream)
    pending: list[tuple[int, str]] = []
    for number, text in lines:
        pending.append((number, text))
        if text.strip():
            break
    if not pending:
        return
    state = {"line": 0, "eof": False}

    def feed() -> Iterator[str]:
        for number, text in (*pending, *lines):
            state["line"] = number
            yield text
        state["eof"] = True

    reader = csv.reader(feed(), delimiter=_delimiter(pending[-1][1]))
    row_number = 0
    first_line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TableError(_csv_problem(str(exc), row=row_number + 1, line=first_line)) from None
        row_number += 1
        if state["eof"] and cells:
            # The csv module ends a quoted cell at the end of the file without complaint; that silently
            # swallowed every row after a stray quote into one cell.
            opened = first_line + sum(cell.count("\n") for cell in cells[:-1])
            raise TableError(
                Problem(
                    f"a quoted cell opens on line {opened} and is never closed, so every line after it would "
                    'be read into that one cell; close the quote (write a quote inside a quoted cell as "").',
                    row=row_number,
                )
            )
        if len(cells) > MAX_COLUMNS:
            raise TableError(
                Problem(f"the row has {len(cells):,} cells; the limit is {MAX_COLUMNS:,}.", row=row_number)
            )
        row = TableRow(number=row_number, values=list(cells))
        first_line = state["line"] + 1
        if not is_blank(row):
            yield row


def _csv_problem(message: str, *, row: int, line: int) -> Problem:
    if "field larger than field limit" in message:
        return Problem(
            f"a cell holds more than {MAX_FIELD_CHARS:,} characters (it starts on line {line}); most likely a "
            "quote opened there is never closed.",
            row=row,
        )
    return Problem(f"the file is not valid CSV ({message}).", row=row)
