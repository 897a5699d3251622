# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing a study's release bundle (a zip) with the export writers, the figures, the card and the parts."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import IO

from annotation.models import Study

from ..exports.csv_jsonl import write_csv_raw
from ..exports.parquet import write_parquet
from .card import dataset_card
from .figures import release_figures, study_design
from .parts import release_parts


def bundle_folder(study: Study) -> str:
    """The bundle's top folder: unpacked, every file sits under it."""
    return f"{study.slug}-data"


def _json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_release(
    study: Study,
    target: str | IO[bytes],
    *,
    rater_subset: Iterable[int] = (),
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the release bundle of ``study`` to a path or binary stream; the judgments written.

    Every judgment goes in (a release is the whole study: ``rater_subset`` is refused rather than
    silently ignored, so a bundle never looks whole when it is not).
    """
    if list(rater_subset):
        raise ValueError("A release bundle holds every rater's judgments; export a subset as CSV or Parquet.")
    design = study_design(study)
    figures = release_figures(study)
    parts = {part.name: part.build(study) for part in release_parts()}
    folder = bundle_folder(study)
    script = resources.files(__package__).joinpath("recompute_script.py").read_text(encoding="utf-8")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        with bundle.open(f"{folder}/data/judgments.csv", "w", force_zip64=True) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            n = write_csv_raw(study, text, progress=progress)
            text.flush()
            text.detach()
        with tempfile.TemporaryDirectory(prefix="fb-release-") as tmp:
            parquet = Path(tmp) / "judgments.parquet"
            write_parquet(study, str(parquet))
            bundle.write(parquet, f"{folder}/data/judgments.parquet")
        bundle.writestr(f"{folder}/study.json", _json(design))
        bundle.writestr(f"{folder}/figures.json", _json(figures))
        for name, content in parts.items():
            bundle.writestr(f"{folder}/{name}", _json(content))
        bundle.writestr(f"{folder}/README.md", dataset_card(study=study, design=design, figures=figures, parts=parts))
        info = zipfile.ZipInfo(f"{folder}/recompute.py")
        info.external_attr = 0o100755 << 16
        bundle.writestr(info, script, compress_type=zipfile.ZIP_DEFLATED)
    return n
