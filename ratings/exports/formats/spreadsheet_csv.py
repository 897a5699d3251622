# SPDX-License-Identifier: GPL-3.0-or-later
"""Long-format CSV for opening in a spreadsheet: text that would run as a formula is defused."""

from ratings.exports.csv_jsonl import stream_csv, write_csv

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="csv",
        label="CSV for spreadsheets, one row per judgment",
        purpose="One row per judgment, for a spreadsheet; text that a spreadsheet would run as a formula "
        "gets a leading apostrophe, so do not analyse this one.",
        extension="csv",
        content_type="text/csv; charset=utf-8",
        write=write_csv,
        binary=False,
        stream=stream_csv,
        holds_rater_ids=False,
        position=20,
    )
)
