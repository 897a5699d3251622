# SPDX-License-Identifier: GPL-3.0-or-later
"""Long-format CSV for analysis tools: every value exactly as stored."""

from ratings.exports.csv_jsonl import stream_csv_raw, write_csv_raw

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="csv_raw",
        label="CSV for analysis (pandas, R): values exactly as stored",
        purpose="One row per judgment, every value exactly as stored, for pandas, R or any analysis tool.",
        extension="raw.csv",
        content_type="text/csv; charset=utf-8",
        write=write_csv_raw,
        binary=False,
        stream=stream_csv_raw,
        holds_rater_ids=False,
        position=30,
    )
)
