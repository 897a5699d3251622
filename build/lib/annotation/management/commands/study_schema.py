"""Write the JSON Schema of study files, for editors that check YAML or JSON as you type."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from annotation.study_file_schema import study_file_schema


class Command(BaseCommand):
    help = (
        "Print the JSON Schema of study files (see docs/study-files.md), built from the same "
        "declarations the loader checks with."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="Write to this file instead of printing.")

    def handle(self, *args, **options) -> None:
        text = json.dumps(study_file_schema(), indent=2, ensure_ascii=False) + "\n"
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {options['output']}.")
        else:
            self.stdout.write(text, ending="")
