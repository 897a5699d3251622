"""``manage.py protocol``: study templates, protocol data imports and protocol reports from the command line.

manage.py protocol templates
manage.py protocol create TEMPLATE "Study name" --owner USER
manage.py protocol import STUDY FILE
manage.py protocol report STUDY [--json] [--xlsx PATH]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.protocols import TEMPLATES, protocol_import, study_from_template
from ratings.protocols import NoProtocolReport, protocol_report, report_json, write_report_workbook


class Command(BaseCommand):
    help = "List study templates, create a study from one, import a protocol's data file, print a protocol report."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("templates", help="List the study templates.")
        create = sub.add_parser("create", help="Create a draft study from a template.")
        create.add_argument("template")
        create.add_argument("name")
        create.add_argument("--owner", required=True, help="Username of the researcher who owns the study.")
        create.add_argument(
            "--config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="Set a task setting, e.g. source_study=my-contest to link a HumorRank human check (repeatable).",
        )
        imp = sub.add_parser("import", help="Import a file shaped like the protocol's data (CSV, XLSX or JSONL).")
        imp.add_argument("study", help="Study slug.")
        imp.add_argument("file")
        report = sub.add_parser("report", help="Print the protocol report of a study.")
        report.add_argument("study", help="Study slug.")
        report.add_argument("--json", action="store_true", help="Print the report as JSON.")
        report.add_argument("--xlsx", dest="workbook", metavar="PATH", help="Also write the report to this workbook.")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _study(self, slug: str) -> Study:
        try:
            return Study.objects.get(slug=slug)
        except Study.DoesNotExist:
            raise CommandError(f"No study with the slug {slug!r}.") from None

    def _templates(self, options: dict[str, Any]) -> None:
        for key, template in sorted(TEMPLATES.items(), key=lambda kv: (kv[1].protocol, kv[0])):
            self.stdout.write(f"{key:28} {template.task_type:16} {template.title}")
            if template.columns:
                self.stdout.write(f"{'':28} columns: {template.columns}")

    def _create(self, options: dict[str, Any]) -> None:
        try:
            owner = get_user_model().objects.get(username=options["owner"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {options['owner']!r}.") from None
        config = {}
        for pair in options["config"]:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise CommandError(f"--config takes KEY=VALUE, not {pair!r}.")
            config[key.strip()] = value.strip()
        try:
            study = study_from_template(owner=owner, template=options["template"], name=options["name"], config=config)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(f"Created draft study {study.slug} from template {study.protocol}.")

    def _import(self, options: dict[str, Any]) -> None:
        study = self._study(options["study"])
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No file {path}.")
        result = protocol_import(study=study, data=path.read_bytes(), filename=path.name)
        if not result.ok:
            for error in result.errors:
                self.stderr.write(error)
            raise CommandError(f"Nothing was imported: {len(result.errors)} problem(s).")
        self.stdout.write(f"Imported {result.items} items and {result.judgments} judgments into {study.slug}.")

    def _report(self, options: dict[str, Any]) -> None:
        study = self._study(options["study"])
        try:
            report = protocol_report(study=study)
        except NoProtocolReport as exc:
            raise CommandError(str(exc)) from None
        if options["workbook"]:
            with open(options["workbook"], "wb") as stream:
                write_report_workbook(report, stream)
        if options["json"]:
            self.stdout.write(json.dumps(report_json(report), ensure_ascii=False, indent=2))
            return
        self.stdout.write(report.title)
        for name, value in report.summary:
            self.stdout.write(f"  {name}: {_text(value)}")
        for table in report.tables():
            self.stdout.write(f"\n{table.title}")
            self.stdout.write("  " + " | ".join(table.columns))
            for row in table.rows:
                self.stdout.write("  " + " | ".join(_text(v) for v in row))
        for note in report.notes:
            self.stdout.write(f"Note: {note}")


def _text(value: Any) -> str:
    """A cell for the terminal: four decimals at most (the JSON and the workbook keep full precision)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return str(value)
