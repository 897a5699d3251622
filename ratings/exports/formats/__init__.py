# SPDX-License-Identifier: GPL-3.0-or-later
"""The export formats: one registry, and one module per format in this package.

A format declares everything the rest of the code asks about it: the name
stored on an ``Export`` row, the label the page and the API offer, its file
name ending and content type, its writer (and, for a text format, a stream for
answering within the request), and whether the file holds raters' own ids.
The page, the API, the task and the model's choices read this registry; none
of them names a format (``tests/ratings/test_export_formats.py`` fails if one
does). Adding a format is adding one module here that calls
:func:`register_format`; every module of this package is imported when the
registry is first imported.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

#: ``Export.format`` is a column of this many characters.
NAME_MAX = 10

#: write(study, target, *, rater_subset, progress) -> judgments written. A binary format's
#: target is a path or a binary stream, a text format's an open text stream.
Writer = Callable[..., int]
#: stream(study, *, rater_subset) -> the file's text in pieces, for a streaming response.
Streamer = Callable[..., Iterable[str]]


@dataclass(frozen=True)
class ExportFormat:
    name: str
    label: str
    #: What the file is for, in a sentence on the export page.
    purpose: str
    #: The file name's ending, after the study's name and the time ("raw.csv").
    extension: str
    content_type: str
    write: Writer
    binary: bool
    #: Text formats only: how the file is opened (``newline``): "" keeps the writer's own line ends.
    newline: str = ""
    #: Text formats only: the same text as an iterator, so a small study streams without a file.
    stream: Streamer | None = None
    #: The file holds raters' own ids (crowd-platform ids, names): the page warns to keep it private.
    holds_rater_ids: bool = True
    #: Where the page lists it: lower first.
    position: int = 100
    #: The file is the whole study (a release): a rater subset is refused, never silently ignored.
    whole_study_only: bool = False


_FORMATS: dict[str, ExportFormat] = {}


def register_format(export_format: ExportFormat) -> ExportFormat:
    """Offer a format on the page, in the API and to the worker."""
    name = export_format.name
    if not name or len(name) > NAME_MAX:
        raise ValueError(f"An export format's name has 1 to {NAME_MAX} characters, not {name!r}.")
    if name in _FORMATS and _FORMATS[name] != export_format:
        raise ValueError(f"The export format {name!r} is registered already.")
    _FORMATS[name] = export_format
    return export_format


def unregister_format(name: str) -> None:
    """Stop offering a format (tests that register a throwaway one)."""
    _FORMATS.pop(name, None)


def export_formats() -> list[ExportFormat]:
    """Every registered format, in the order the page lists them."""
    return sorted(_FORMATS.values(), key=lambda f: (f.position, f.name))


def get_format(name: Any) -> ExportFormat:
    try:
        return _FORMATS[name]
    except (KeyError, TypeError):
        known = ", ".join(f.name for f in export_formats())
        raise ValidationError(f"Unknown export format {name!r}; known formats: {known}.") from None


def format_choices() -> list[tuple[str, str]]:
    """(name, label) of every format, for form, serializer and model choices."""
    return [(f.name, f.label) for f in export_formats()]


def default_format() -> str:
    """The format the page selects first."""
    return export_formats()[0].name


def _load_format_modules() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_load_format_modules()

__all__ = [
    "ExportFormat",
    "default_format",
    "export_formats",
    "format_choices",
    "get_format",
    "register_format",
    "unregister_format",
]
