# SPDX-License-Identifier: GPL-3.0-or-later
"""The raters' questionnaire answers (and qualification results): a long CSV and a wide CSV."""

from ratings.exports.questionnaire import stream_long, stream_wide, write_long, write_wide

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="quest_long",
        label="Questionnaire answers, long CSV: one row per rater and question",
        purpose="Each rater's answers to the study's questions, one row per answer, with the option's label.",
        extension="questionnaire-long.csv",
        content_type="text/csv; charset=utf-8",
        write=write_long,
        binary=False,
        stream=stream_long,
        holds_rater_ids=False,
        position=60,
    )
)
register_format(
    ExportFormat(
        name="quest_wide",
        label="Questionnaire answers, wide CSV: one row per rater",
        purpose="One row per rater: the qualification result, then a column for each question of the study.",
        extension="questionnaire-wide.csv",
        content_type="text/csv; charset=utf-8",
        write=write_wide,
        binary=False,
        stream=stream_wide,
        holds_rater_ids=False,
        position=61,
    )
)
