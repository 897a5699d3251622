# SPDX-License-Identifier: GPL-3.0-or-later
"""Files another app adds to a study's release bundle (the judging app's provenance)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from annotation.models import Study


@dataclass(frozen=True)
class ReleasePart:
    #: The file's name inside the bundle.
    name: str
    #: build(study) -> the file's JSON content.
    build: Callable[[Study], Any]
    #: One line for the dataset card's list of files.
    description: str
    #: card(content) -> a Markdown section for the dataset card ("" for none).
    card: Callable[[Any], str] | None = None


_PARTS: dict[str, ReleasePart] = {}


def register_part(part: ReleasePart) -> ReleasePart:
    if part.name in _PARTS and _PARTS[part.name] != part:
        raise ValueError(f"The release part {part.name!r} is registered already.")
    _PARTS[part.name] = part
    return part


def release_parts() -> list[ReleasePart]:
    return sorted(_PARTS.values(), key=lambda part: part.name)
