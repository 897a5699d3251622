# SPDX-License-Identifier: GPL-3.0-or-later
"""The participant key: each pseudonym of a study with the platform ids it stands for (owner only).

Every other export names people by pseudonym (``annotation.privacy``). This
file is the one that links them back: pseudonym, kind, platform id, and the ids
the entry link brought (Prolific's study and session, MTurk's assignment and
HIT), or the date they were erased. Its first line says what it holds. Cells a
spreadsheet would run as a formula get an apostrophe (``safe_cells.csv_safe``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from annotation.models import HUMAN_KINDS, Enrollment, Study
from annotation.privacy import ERASED, study_pseudonyms

from .safe_cells import csv_safe

NOTICE = (
    "# Personal data: this file links each pseudonym in the study's exports to the participant's platform ids. "
    "Keep it apart from the data and delete it when no longer needed."
)
COLUMNS = [
    "pseudonym",
    "rater_kind",
    "platform_id",
    "entry_study_id",
    "entry_session_id",
    "assignment_id",
    "hit_id",
    "ids_erased_at",
]


def _rows(study: Study) -> Iterator[list[str]]:
    enrollments = (
        Enrollment.objects.filter(study=study, rater__kind__in=HUMAN_KINDS)
        .order_by("rater_id")
        .values_list("rater_id", "rater__kind", "rater__external_id", "entry_params")
    )
    rows = list(enrollments.iterator(chunk_size=2000))
    aliases = study_pseudonyms(study, [r[0] for r in rows])
    for rater_id, kind, external_id, params in rows:
        params = params or {}
        cells = [
            aliases[rater_id],
            kind,
            external_id,
            params.get("STUDY_ID", ""),
            params.get("SESSION_ID", ""),
            params.get("assignmentId", ""),
            params.get("hitId", ""),
            params.get(ERASED, ""),
        ]
        yield [csv_safe(str(c)) for c in cells]


def stream_participant_key(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    buffer.write(NOTICE + "\r\n")
    writer.writerow(COLUMNS)
    for row in _rows(study):
        writer.writerow(row)
        if buffer.tell() > 64_000:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def write_participant_key(
    study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Callable[[int], None] | None = None
) -> int:
    """Write the key to a text stream; returns the participants written."""
    n = 0
    for chunk in stream_participant_key(study):
        out.write(chunk)
        n += chunk.count("\n")
    n = max(n - 2, 0)
    if progress is not None:
        progress(n)
    return n
