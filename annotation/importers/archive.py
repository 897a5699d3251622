"""An uploaded archive: one item file and the media its rows name, checked before anything is stored.

``check_archive`` refuses, before the upload is kept, a file that is no ZIP,
holds more than ``FUNNYBONE_MEDIA_MAX_FILES`` entries, a name that climbs out
(``../``, an absolute path, a drive, a backslash), a link, an entry that
inflates past its limit or far beyond its packed size (a zip bomb), or not
exactly one item file at its top level (``items.csv``, ``items.xlsx`` or
``items.jsonl``, or the only table file there). ``archive_media`` reads and
checks every file the items name (``annotation.media.checks``); ``media_attach``
stores them and attaches them to the written items. Every refusal is a
``FileProblem`` that names the archive entry.
"""

import posixpath
import stat
import zipfile
from dataclasses import dataclass
from typing import IO

from django.conf import settings

from .. import tables
from ..media.checks import CheckedMedia, MediaProblem, check_media
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


def _member(name: str, index: ArchiveIndex) -> str | None:
    """The archive entry a row's path names (relative to the archive's top, ./ allowed), if present."""
    clean = posixpath.normpath(name.strip().replace("\\", "/")).lstrip("/")
    if clean.startswith("../") or clean == "..":
        return None
    return clean if clean in index.sizes else None


def archive_media(
    archive: zipfile.ZipFile, index: ArchiveIndex, specs: list[ItemSpec], *, label: str
) -> dict[str, CheckedMedia]:
    """Every entry the items name, read and checked; FileProblem listing each bad reference or file."""
    problems: list[str] = []
    checked: dict[str, CheckedMedia] = {}
    refused: set[str] = set()
    limit = settings.FUNNYBONE_MEDIA_MAX_BYTES
    for spec in specs:
        for media in spec.media:
            member = _member(media.source, index)
            if member is None:
                problems.append(f"{spec.row}: the media file {media.source!r} is not in {label}.")
                continue
            if member in checked or member in refused:
                continue
            if member == index.item_file:
                problems.append(f"{spec.row}: {media.source!r} is the item file, not a media file.")
                refused.add(member)
                continue
            with archive.open(member) as stream:
                data = stream.read(limit + 1)
            try:
                checked[member] = check_media(data, f"{label}: {member}")
            except MediaProblem as exc:
                problems.append(str(exc))
                refused.add(member)
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
            member = posixpath.normpath(media.source.strip().replace("\\", "/")).lstrip("/")
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


def refuse_media_outside_archive(specs: list[ItemSpec]) -> list[str]:
    """Rows of a plain item file that name media: they need the archive their files travel in."""
    return [
        f"{spec.row}: names the media file {spec.media[0].source!r}; upload a .zip holding the item file and its media."
        for spec in specs
        if spec.media
    ]


__all__ = ["ARCHIVE", "MediaProblem", "check_archive", "is_archive"]
