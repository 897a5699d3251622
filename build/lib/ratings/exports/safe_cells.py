# SPDX-License-Identifier: GPL-3.0-or-later
"""Making exported cells safe to open in a spreadsheet.

A spreadsheet treats a text cell that starts with ``=``, ``+``, ``-`` or ``@``
(and, in some programs, a tab or carriage return) as a formula: a joke text
like ``=HYPERLINK("http://x", "y")`` written naively would become a live link
in the researcher's Excel. So:

* CSV: such a text gets a leading apostrophe, the convention spreadsheets
  read as "this is text"; numbers are left alone (``-2`` stays a number).
* XLSX: text is stored as a string cell (``t="inlineStr"``), never a formula
  cell, with its value unchanged; openpyxl would otherwise turn any string
  starting with ``=`` into a formula.

Provenance written by LLM judges may carry request details; anything whose
key looks like a credential is dropped before it reaches a file.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any

from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Excel refuses longer cells; a longer raw response is cut with a marker.
XLSX_MAX_CHARS = 32_767
TRUNCATED = " …[truncated for Excel; see the JSONL export]"

SECRET_KEY_RE = re.compile(r"key|token|secret|passw|auth|credential|cookie|bearer|signature", re.IGNORECASE)
# Token *counts* are usage figures, not credentials: kept when they are numbers.
TOKEN_COUNT_KEYS = frozenset(
    {
        "tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cached_tokens",
        "tokens_in",
        "tokens_out",
        "max_tokens",
    }
)
SECRET_VALUE_RE = re.compile(r"\b(sk-[A-Za-z0-9_-]{12,}|Bearer\s+[A-Za-z0-9._~+/=-]{8,})")
REDACTED = "[redacted]"


def csv_safe(value: Any) -> Any:
    """The value as a CSV cell should hold it: dangerous text prefixed with an apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def xlsx_value(value: Any) -> Any:
    """A Python value openpyxl can store: NaN becomes empty, datetimes lose their zone."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def xlsx_text(text: str) -> str:
    """Text without the control characters XML cannot hold, cut to Excel's cell limit.

    Carriage returns become line feeds: XML readers turn a raw CR into LF
    anyway, so this only makes the written value the one that is read back.
    """
    text = ILLEGAL_CHARACTERS_RE.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > XLSX_MAX_CHARS:
        text = text[: XLSX_MAX_CHARS - len(TRUNCATED)] + TRUNCATED
    return text


def xlsx_cell(sheet, value: Any, *, font=None) -> WriteOnlyCell:
    """A write-only cell whose text can never be read as a formula.

    openpyxl marks any string starting with "=" as a formula (data type "f")
    when the value is bound; resetting the type to "s" makes the writer emit
    an inline string with the text unchanged.
    """
    value = xlsx_value(value)
    if isinstance(value, str):
        value = xlsx_text(value)
    cell = WriteOnlyCell(sheet, value=value)
    if isinstance(value, str):
        cell.data_type = "s"
    if font is not None:
        cell.font = font
    return cell


def xlsx_row(sheet, values, *, font=None) -> list[WriteOnlyCell]:
    return [xlsx_cell(sheet, v, font=font) for v in values]


def _is_usage(name: str, value: Any) -> bool:
    """A token count (a number, or a breakdown of numbers) under a usage-like name."""
    if name.lower() not in TOKEN_COUNT_KEYS:
        return False
    if isinstance(value, dict):
        return all(_is_number(v) for v in value.values())
    return _is_number(value)


def scrub_provenance(value: Any) -> Any:
    """A copy of ``value`` without credential-like keys or bearer strings, at any depth."""
    if isinstance(value, dict):
        clean = {}
        for key, item in value.items():
            name = str(key)
            if SECRET_KEY_RE.search(name) and not _is_usage(name, item):
                continue
            clean[key] = scrub_provenance(item)
        return clean
    if isinstance(value, list):
        return [scrub_provenance(v) for v in value]
    if isinstance(value, str):
        return SECRET_VALUE_RE.sub(REDACTED, value)
    return value
