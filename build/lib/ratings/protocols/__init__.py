"""Paper-style reports for the studies made from the protocol templates (see annotation.protocols)."""

from . import chumor, chumor_preference, humorrank, jest, oogiri, oogiri_benchmark, semeval  # noqa: F401 - registration
from .base import (
    BUILDERS,
    Figure,
    NoProtocolReport,
    ProtocolReport,
    Section,
    Table,
    has_report,
    protocol_report,
    register_report,
    report_json,
)
from .workbook import write_report_workbook

__all__ = [
    "BUILDERS",
    "Figure",
    "NoProtocolReport",
    "ProtocolReport",
    "Section",
    "Table",
    "has_report",
    "protocol_report",
    "register_report",
    "report_json",
    "write_report_workbook",
]
