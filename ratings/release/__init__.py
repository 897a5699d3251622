# SPDX-License-Identifier: GPL-3.0-or-later
"""The release bundle: what a paper needs from a study, in one download.

One zip per study (``write_release``, offered as the ``release`` export format):
the long-format data (CSV and Parquet, the same writers as the analysis
exports), ``study.json`` (the design: task type, scale, quotas, item order,
screening), ``figures.json`` (the figures the server computed),
``README.md`` (a dataset card: YAML metadata a dataset hub reads, then prose),
``recompute.py`` (recomputes ``figures.json`` from the data files alone, with
pandas and the reference ``krippendorff`` package), and the parts other apps
register (``register_part``): the judging app adds every LLM judge's provenance
(``judges.json``), since ratings may not import judging.

Map: docs/architecture.md, "Release bundle"; user guide: docs/release.md.
"""

from .parts import ReleasePart, register_part, release_parts

__all__ = ["ReleasePart", "register_part", "release_parts"]
