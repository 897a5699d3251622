"""Importing a protocol's data file: its items and any answers it already holds, all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from ..importers.files import capped_errors
from ..importers.items import FileProblem
from ..models import Study
from ..services.imported_judgments import judgments_import
from ..services.studies import ImportErrors, items_create
from .base import template_of
from .tables import read_table


@dataclass
class ProtocolImportResult:
    items: int = 0
    judgments: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def protocol_import(
    *,
    study: Study,
    data: bytes,
    filename: str,
    actor: AbstractBaseUser | None = None,
    on_written: Callable[[int, int], None] | None = None,
) -> ProtocolImportResult:
    """Read a file shaped like the study's protocol data and store it; every problem is reported, nothing half-written.

    ``on_written(items, judgments)`` runs inside the writing transaction (a
    background import records itself done there); if it raises, nothing is kept.
    """
    template = template_of(study)
    if template is None or template.importer is None:
        return ProtocolImportResult(errors=["This study does not follow a protocol template with its own file format."])
    try:
        table = read_table(data, filename=filename)
        plan = template.importer(table, study)
        with transaction.atomic():
            count = items_create(study=study, items=plan.items, actor=actor) if plan.items else 0
            judged = judgments_import(study=study, judgments=plan.judgments)
            if on_written is not None and (count or judged):
                on_written(count, judged)
    except FileProblem as exc:
        return ProtocolImportResult(errors=capped_errors(exc.messages))
    except ImportErrors as exc:
        return ProtocolImportResult(errors=capped_errors(exc.errors_by_row))
    if not count and not judged:
        return ProtocolImportResult(errors=["The file holds no items and no answers."])
    return ProtocolImportResult(items=count, judgments=judged)
