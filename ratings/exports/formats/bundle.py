# SPDX-License-Identifier: GPL-3.0-or-later
"""The bundle: items, their media and the judgments in one ZIP that loads back into a new study."""

from ratings.exports.bundle import write_bundle

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="bundle",
        label="Bundle (ZIP): items, media and judgments",
        purpose=(
            "The items with their pictures and every judgment in one ZIP; upload it as an item file "
            "to load the items and media into a new study."
        ),
        extension="zip",
        content_type="application/zip",
        write=write_bundle,
        binary=True,
        holds_rater_ids=False,
        position=60,
    )
)
