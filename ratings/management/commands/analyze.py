# SPDX-License-Identifier: GPL-3.0-or-later
"""``manage.py analyze KIND FILE``: the ``funnybone analyze`` command inside the project.

Arguments, output and errors are those of ``ratings.cli`` (which needs no
Django and is what ``pip install`` gives as the ``funnybone`` command); this
command only hands them over, so both print the same figures. Bad input stops
with a message naming the row, a non-zero exit code and nothing on standard
output.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ratings import cli


class Command(BaseCommand):
    help = (
        "Analyse judgments in a CSV or XLSX file. KIND: ratings (agreement), subset (choose k raters), "
        "pairwise (Bradley-Terry, Stable Elo, win rates), alignment (a rater against a reference). "
        "The same as `funnybone analyze`, which needs no database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_analyze_arguments(parser)

    def run_from_argv(self, argv: list[str]) -> None:
        # "--labels -2,-1,0,1,2": argparse would take the scale for an option (see cli.join_option_values).
        super().run_from_argv(argv[:2] + cli.join_option_values(argv[2:]))

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self.stdout.write(cli.analyze(options))
        except cli.AnalyzeError as exc:
            raise CommandError(str(exc)) from None
