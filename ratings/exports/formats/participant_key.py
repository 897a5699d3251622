# SPDX-License-Identifier: GPL-3.0-or-later
"""The participant key: pseudonyms with the platform ids they stand for; the only export with raw ids."""

from ratings.exports.participant_key import stream_participant_key, write_participant_key

from . import ExportFormat, register_format

register_format(
    ExportFormat(
        name="ids_key",
        label="Participant key: pseudonyms with their platform ids (personal data)",
        purpose=(
            "One row per participant: the pseudonym every other export uses, with the Prolific or MTurk ids it "
            "stands for (until they are erased). Personal data: keep it apart from the data."
        ),
        extension="participant-ids.csv",
        content_type="text/csv; charset=utf-8",
        write=write_participant_key,
        binary=False,
        stream=stream_participant_key,
        holds_rater_ids=True,
        position=90,
    )
)
