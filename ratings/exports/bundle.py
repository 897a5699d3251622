# SPDX-License-Identifier: GPL-3.0-or-later
"""A study's bundle: one ZIP of its items, their media and its judgments, that loads back as a new study's items.

- ``items.jsonl``: the items in the study-file shape (``annotation.study_files``),
  each media entry naming its file by ``src`` (``media/<sha256>.<ext>``) with its
  public id, hash, original name and alt text;
- ``media/``: every media file of the study, the stored (checked) bytes;
- ``judgments.jsonl``: the long-format judgments (the ``jsonl`` export's lines);
- ``study.json``: the study's settings and config, for the record.

Uploading the bundle as an item file (docs/media.md) to a study of the same
task type imports the items with their media: the archive import reads
``items.jsonl`` and checks every file again.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterable
from typing import IO

from django.core.files.storage import default_storage

from annotation.media import bundle_path
from annotation.models import MediaFile, Study
from annotation.study_files import study_file_item_batches, study_file_settings

from .csv_jsonl import write_jsonl


def write_bundle(
    study: Study,
    out: str | IO[bytes],
    *,
    rater_subset: Iterable[int] = (),
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the bundle to a path or binary stream; return the number of judgments written."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("study.json", json.dumps(study_file_settings(study), ensure_ascii=False, indent=2, default=str))
        with bundle.open("items.jsonl", "w") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as items:
            for batch in study_file_item_batches(study):
                for entry in batch:
                    items.write(json.dumps(entry, ensure_ascii=False) + "\n")
        files = MediaFile.objects.filter(study=study).order_by("id").values_list("sha256", "content_type", "file")
        for sha, content_type, name in files.iterator():
            # Pictures are compressed already: stored as they are.
            info = zipfile.ZipInfo(bundle_path(sha, content_type))
            info.compress_type = zipfile.ZIP_STORED
            with default_storage.open(name, "rb") as source, bundle.open(info, "w") as target:
                while chunk := source.read(1024 * 1024):
                    target.write(chunk)
        with bundle.open("judgments.jsonl", "w") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as lines:
            return write_jsonl(study, lines, rater_subset=rater_subset, progress=progress)
