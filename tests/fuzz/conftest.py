"""What every fuzzed import must leave behind: all the rows as items, or messages that say where and no change."""

import re

from annotation.models import Candidate, Item, Study

# A problem with one row names it ("Row 3: ...", "Line 2, byte offset 7: ...", "Item 4 (id 'x'): ...");
# a problem with the file as a whole says which column or what about the file.
ROW_MESSAGE = re.compile(r"^(Row|Line|Item) \d+[:,( ]")
FILE_MESSAGES = (
    "The file ",
    "The column ",
    "Unknown column ",
    "The candidate ",
    "This is not a readable XLSX file",
    "The workbook has no sheets.",
    "Save the file as UTF-8",
    "... and ",
)


def is_located(message: str) -> bool:
    return bool(ROW_MESSAGE.match(message)) or message.startswith(FILE_MESSAGES)


def database_counts() -> tuple[int, int, int]:
    return Study.objects.count(), Item.objects.count(), Candidate.objects.count()
