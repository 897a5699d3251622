"""An uploaded archive: one item file and the media its rows name, checked before anything is stored.

``check_archive`` refuses, before the upload is kept, a file that is no ZIP,
holds more than ``FUNNYBONE_MEDIA_MAX_FILES`` entries, a name that climbs out
(``../``, an absolute path, a drive, a backslash), a link, an entry that
inflates past its limit or far beyond its packed size (a zip bomb), or not
exactly one item file at its top level (``items.csv``, ``items.xlsx`` or
``items.jsonl``, or the only table file there). ``resolve_media`` reads and
checks every file the items name (``annotation.media.checks``): an archive entry,
or a URL fetched once through the outbound rules (``annotation.media.fetch``;
a plain item file may name URLs only); ``media_attach``
stores them and attaches them to the written items. Every refusal is a
``FileProblem`` that names the archive entry.
"""

import posixpath
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from django.conf import settings

from .. import tables
from ..media.checks import CheckedMedia, MediaProblem, check_media
from ..media.fetch import fetch_media, is_url
from ..media.store import StoredFiles, media_store
from ..models import Candidate, Item, MediaAttachment, Study
from ..services.studies import ItemSpec
from .items import FileProblem

ARCHIVE = "zip"
# An entry may inflate at most this many times its packed size (zip bombs compress ~1000:1).
MAX_RATIO = 200
ITEM_FILE_STEM = "items"


def is_archive(name: str) -> bool:
    return name.lower().endswith(".zip")


@dataclass(frozen=True)
class ArchiveIndex:
    item_file: str  # the entry holding the items
    fmt: str  # its table format
    sizes: dict[str, int]  # every regular entry's inflated size, by its name


def _name_problem(name: str) -> str:
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute or Windows path"
    if any(part in ("..", "") for part in name.rstrip("/").split("/")):
        return "a path that climbs out of the archive (../) or has an empty part"
    if any(ord(ch) < 32 for ch in name):
        return "a control character in its name"
    return ""


def check_archive(stream: IO[bytes], *, label: str) -> ArchiveIndex:
    """The archive's index, or FileProblem naming what is wrong. Reads the directory only; rewinds."""
    try:
        with zipfile.ZipFile(stream) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise FileProblem(f"{label}: not a readable ZIP archive ({exc}).") from None
    finally:
        stream.seek(0)
    limit = settings.FUNNYBONE_MEDIA_MAX_FILES
    if len(infos) > limit:
        raise FileProblem(f"{label}: holds {len(infos):,} entries; an archive may hold at most {limit:,}.")
    per_file = max(settings.FUNNYBONE_MEDIA_MAX_BYTES, settings.FUNNYBONE_IMPORT_MAX_BYTES)
    total_limit = settings.FUNNYBONE_IMPORT_MAX_BYTES + limit * settings.FUNNYBONE_MEDIA_MAX_BYTES
    problems: list[str] = []
    sizes: dict[str, int] = {}
    total = 0
    for info in infos:
        name = info.filename
        where = f"{label}: {name!r}"
        problem = _name_problem(name)
        if problem:
            problems.append(f"{where}: {problem}; entries must be plain relative paths.")
            continue
        if info.is_dir():
            continue
        mode = info.external_attr >> 16
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            problems.append(f"{where}: a link or special file; only plain files are read.")
            continue
        if info.flag_bits & 0x1:
            problems.append(f"{where}: encrypted; upload an archive without a password.")
            continue
        if info.file_size > per_file:
            problems.append(f"{where}: inflates to {info.file_size:,} bytes; at most {per_file:,} per file.")
            continue
        if info.file_size > 1024 * 1024 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            problems.append(f"{where}: inflates {info.file_size // max(info.compress_size, 1):,} times (a zip bomb).")
            continue
        if name in sizes:
            problems.append(f"{where}: appears twice in the archive.")
            continue
        sizes[name] = info.file_size
        total += info.file_size
    if total > total_limit:
        problems.append(f"{label}: inflates to {total:,} bytes in all; at most {total_limit:,}.")
    if problems:
        raise FileProblem(problems)
    return ArchiveIndex(*_item_file(sizes, label), sizes=sizes)


def _item_file(sizes: dict[str, int], label: str) -> tuple[str, str]:
    tables_at_top = [
        name for name in sizes if "/" not in name and name.rsplit(".", 1)[-1].lower() in ("csv", "xlsx", "jsonl")
    ]
    named = [name for name in tables_at_top if name.rsplit(".", 1)[0].lower() == ITEM_FILE_STEM]
    chosen = named or tables_at_top
    if len(chosen) != 1:
        found = ", ".join(sorted(tables_at_top)) or "none"
        raise FileProblem(
            f"{label}: needs exactly one item file at its top level (items.csv, items.xlsx or items.jsonl); found {found}."
        )
    return chosen[0], tables.detect_format(chosen[0])


def media_key(source: str) -> str:
    """What identifies a media reference within one import: its URL, or its normalised path in the archive."""
    if is_url(source):
        return source.strip()
    return posixpath.normpath(source.strip().replace("\\", "/")).lstrip("/")


def _member(name: str, index: ArchiveIndex) -> str | None:
    """The archive entry a row's path names (relative to the archive's top, ./ allowed), if present."""
    clean = media_key(name)
    if clean.startswith("../") or clean == "..":
        return None
    return clean if clean in index.sizes else None


def _read(source: str, *, archive: zipfile.ZipFile | None, index: ArchiveIndex | None, label: str) -> tuple[bytes, str]:
    """The bytes a reference names and the name to report, or MediaProblem / LookupError."""
    if is_url(source):
        return fetch_media(source), source.strip()
    if archive is None or index is None:
        raise LookupError(f"names the media file {source!r}; upload a .zip holding the item file and its media.")
    member = _member(source, index)
    if member is None:
        raise LookupError(f"the media file {source!r} is not in {label}.")
    if member == index.item_file:
        raise LookupError(f"{source!r} is the item file, not a media file.")
    with archive.open(member) as stream:
        return stream.read(settings.FUNNYBONE_MEDIA_MAX_BYTES + 1), f"{label}: {member}"


def resolve_media(
    specs: list[ItemSpec],
    *,
    label: str,
    archive: zipfile.ZipFile | None = None,
    index: ArchiveIndex | None = None,
    beat: Callable[[], None] | None = None,
) -> dict[str, CheckedMedia]:
    """Every file the items name (in the archive, or by URL fetched once), read and checked.

    FileProblem listing each bad reference or file; a file named twice is read once.
    """
    problems: list[str] = []
    checked: dict[str, CheckedMedia] = {}
    refused: set[str] = set()
    for spec in specs:
        for media in spec.media:
            key = media_key(media.source)
            if key in checked or key in refused:
                continue
            try:
                data, name = _read(media.source, archive=archive, index=index, label=label)
                checked[key] = check_media(data, name)
            except LookupError as exc:
                problems.append(f"{spec.row}: {exc.args[0]}")
                refused.add(key)
            except MediaProblem as exc:
                problems.append(str(exc))
                refused.add(key)
            if beat is not None:
                beat()
    if problems:
        raise FileProblem(problems)
    return checked


def media_attach(*, study: Study, specs: list[ItemSpec], checked: dict[str, CheckedMedia], written: StoredFiles) -> int:
    """Store the checked files and attach them to the items just written; how many attachments."""
    wanted = [spec for spec in specs if spec.media]
    if not wanted:
        return 0
    ids = dict(
        Item.objects.filter(study=study, external_id__in=[s.external_id for s in wanted]).values_list(
            "external_id", "id"
        )
    )
    candidates = {
        (item_id, key): pk
        for pk, item_id, key in Candidate.objects.filter(item_id__in=ids.values()).values_list("id", "item_id", "key")
    }
    stored: dict[str, int] = {}
    attachments: list[MediaAttachment] = []
    for spec in wanted:
        item_id = ids[spec.external_id]
        for number, media in enumerate(spec.media):
            member = media_key(media.source)
            if member not in stored:
                stored[member] = media_store(
                    study=study, checked=checked[member], original_name=member, written=written
                ).pk
            attachments.append(
                MediaAttachment(
                    media_id=stored[member],
                    item_id=item_id,
                    candidate_id=candidates.get((item_id, media.candidate_key)) if media.candidate_key else None,
                    role=media.role,
                    alt_text=media.alt,
                    position=media.position or number,
                )
            )
    MediaAttachment.objects.bulk_create(attachments)
    return len(attachments)


__all__ = ["ARCHIVE", "MediaProblem", "check_archive", "is_archive"]
