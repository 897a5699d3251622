# SPDX-License-Identifier: GPL-3.0-or-later
"""The release bundle: data, dataset card, judges' provenance and a script that recomputes the figures."""

from ratings.release.bundle import write_release

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="release",
        label="Release bundle for a paper (zip): data, dataset card, provenance of the LLM judges, recompute script",
        purpose=(
            "Everything a paper's readers need: the data as CSV and Parquet, a dataset card, every LLM judge's "
            "endpoint, model, prompt and settings, and a script that recomputes the stated figures from the data."
        ),
        extension="release.zip",
        content_type="application/zip",
        write=write_release,
        binary=True,
        position=60,
        whole_study_only=True,
        holds_rater_ids=False,
    )
)
