"""Importing an item file into a study: read, check every row, then write all or nothing."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO

from django.conf import settings

from ..models import Study
from ..services.studies import ImportErrors, ItemSpec, item_problems, items_create
from ..task_types import get_task_type
from .items import FileProblem, RowResult, item_from_object
from .readers import read_rows

# A file that is wrong everywhere would otherwise produce one message per row.
MAX_REPORTED_ERRORS = 500


@dataclass
class ImportResult:
    """How many items were created, or every problem found (then nothing was written)."""

    count: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def capped_errors(errors: list[str]) -> list[str]:
    """At most MAX_REPORTED_ERRORS messages, and how many more there were."""
    if len(errors) <= MAX_REPORTED_ERRORS:
        return errors
    hidden = len(errors) - MAX_REPORTED_ERRORS
    return [*errors[:MAX_REPORTED_ERRORS], f"... and {hidden} more problems not listed."]


def check_size(size: int) -> None:
    limit = settings.FUNNYBONE_IMPORT_MAX_BYTES
    if size > limit:
        raise FileProblem(
            f"The file is {size / 1_048_576:.1f} MB; the largest file accepted is {limit / 1_048_576:.1f} MB. "
            "Split it into several files."
        )


def collect(rows: Iterable[RowResult], *, study: Study, replace: bool) -> tuple[list[ItemSpec], list[str]]:
    """Every row's own problems and the study's checks (ids, candidates, gold), in file order."""
    existing = [] if replace else study.items.values_list("external_id", flat=True)
    seen = dict.fromkeys(existing, "")
    specs: list[ItemSpec] = []
    errors: list[str] = []
    for row in rows:
        errors.extend(row.errors)
        if row.spec is not None:
            errors.extend(item_problems(study=study, spec=row.spec, seen=seen))
            specs.append(row.spec)
    return specs, errors


def prepare(
    *, study: Study, stream: IO[bytes], fmt: str, size: int, replace: bool, refuse: bool = False
) -> tuple[list[ItemSpec], list[str]]:
    """Read and check a whole file without writing: the items, or every problem found.

    A file refused as a whole comes back as its messages, or with ``refuse``
    raises FileProblem so the caller can tell it from row problems.
    """
    try:
        check_size(size)
        rows = read_rows(stream, fmt=fmt, task_type=get_task_type(study.task_type))
        specs, errors = collect(rows, study=study, replace=replace)
    except FileProblem as exc:
        if refuse:
            raise
        return [], exc.messages
    return specs, capped_errors(errors)


def create_items(*, study: Study, specs: list[ItemSpec], replace: bool = False) -> ImportResult:
    """Write checked items in one transaction; a late problem (a race, judgments) is reported, not raised."""
    try:
        count = items_create(study=study, items=specs, replace=replace)
    except ImportErrors as exc:
        return ImportResult(errors=capped_errors(exc.errors_by_row))
    return ImportResult(count=count)


def import_item_file(*, study: Study, stream: IO[bytes], fmt: str, size: int, replace: bool = False) -> ImportResult:
    """Import a CSV, XLSX or JSON Lines file of items into the study (see docs/study-files.md)."""
    specs, errors = prepare(study=study, stream=stream, fmt=fmt, size=size, replace=replace)
    if errors:
        return ImportResult(errors=errors)
    return create_items(study=study, specs=specs, replace=replace)


def import_item_objects(*, study: Study, objects: list, replace: bool = False) -> ImportResult:
    """Import items written as objects (the study-file shape), e.g. a JSON list posted to the API."""
    task_type = get_task_type(study.task_type)
    rows = (item_from_object(obj, where=f"Item {n}", task_type=task_type) for n, obj in enumerate(objects, start=1))
    specs, errors = collect(rows, study=study, replace=replace)
    if errors:
        return ImportResult(errors=capped_errors(errors))
    return create_items(study=study, specs=specs, replace=replace)
