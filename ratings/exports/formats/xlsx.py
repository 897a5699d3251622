# SPDX-License-Identifier: GPL-3.0-or-later
"""The Excel workbook: per-sheet summaries for reading in Excel or LibreOffice."""

from ratings.exports.workbook import write_workbook

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="xlsx",
        label="Excel workbook",
        purpose="The study settings, the items ranked by consensus, every rater's ratings side by side, "
        "rater statistics, LLM judgments, agreement and (for pairwise studies) rankings.",
        extension="xlsx",
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        write=write_workbook,
        binary=True,
        holds_rater_ids=False,
        position=10,
    )
)
