"""The five published protocols of PROTOCOLS.md as study templates with their own importers.

Each protocol module registers its templates on import; ``TEMPLATES`` lists
them all. The reports that go with them live in ``ratings.protocols``.
"""

from . import chumor, humorrank, jest, oogiri, semeval  # noqa: F401 - registration
from .base import (
    TEMPLATES,
    ImportPlan,
    StudyTemplate,
    get_template,
    protocol_judge_template,
    register_template,
    study_from_template,
    template_of,
)
from .importing import ProtocolImportResult, protocol_import
from .tables import Row, Table, read_table

__all__ = [
    "TEMPLATES",
    "ImportPlan",
    "ProtocolImportResult",
    "Row",
    "StudyTemplate",
    "Table",
    "get_template",
    "protocol_import",
    "protocol_judge_template",
    "read_table",
    "register_template",
    "study_from_template",
    "template_of",
]
