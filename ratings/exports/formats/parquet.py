# SPDX-License-Identifier: GPL-3.0-or-later
"""Long-format Parquet: typed columns, missing values apart from empty text."""

from ratings.exports.parquet import write_parquet

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="parquet",
        label="Parquet for analysis (pandas, R, Hugging Face datasets): typed columns",
        purpose="One row per judgment with typed columns, for pandas, R (arrow) or Hugging Face datasets.",
        extension="parquet",
        content_type="application/vnd.apache.parquet",
        write=write_parquet,
        binary=True,
        holds_rater_ids=False,
        position=40,
    )
)
