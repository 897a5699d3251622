# SPDX-License-Identifier: GPL-3.0-or-later
"""JSON Lines: one JSON object per judgment, JSON columns nested."""

from ratings.exports.csv_jsonl import stream_jsonl, write_jsonl

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="jsonl",
        label="JSON Lines, one judgment per line",
        purpose="One JSON object per judgment and line, JSON columns nested, for scripts.",
        extension="jsonl",
        content_type="application/x-ndjson; charset=utf-8",
        write=write_jsonl,
        binary=False,
        # One object per line ends in \n; CSV keeps the csv module's own \r\n.
        newline="\n",
        stream=stream_jsonl,
        holds_rater_ids=False,
        position=50,
    )
)
