"""Reading item files (CSV, XLSX, JSON Lines) and study-file items into a study.

The file formats are described in docs/study-files.md. Everything is checked
before anything is written, every problem names its row, and an import is all
or nothing.
"""

from .background import INLINE_MAX_BYTES, item_import_run, item_import_start
from .files import ImportResult, import_item_file, import_item_objects
from .gold import gold_from_file
from .items import FileProblem, item_from_object
from .readers import detect_format

__all__ = [
    "INLINE_MAX_BYTES",
    "FileProblem",
    "ImportResult",
    "detect_format",
    "gold_from_file",
    "import_item_file",
    "import_item_objects",
    "item_from_object",
    "item_import_run",
    "item_import_start",
]
