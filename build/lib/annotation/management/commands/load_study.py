"""Create a study, its settings and its items from a YAML or JSON study file."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.study_files import StudyFileError, load_study_data, read_study_file


class Command(BaseCommand):
    help = (
        "Load a study file (YAML or JSON; see docs/study-files.md). Everything is checked first "
        "and nothing is written unless the whole file is valid."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Path of the .yaml, .yml or .json study file.")
        parser.add_argument(
            "--owner", help="Username of the researcher who owns the study (default: the only superuser)."
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Update the owner's study of the same name and replace its items (refused once it has judgments).",
        )
        parser.add_argument("--check", action="store_true", help="Only check the file; write nothing.")

    def handle(self, *args, **options) -> None:
        owner = self._owner(options["owner"])
        path = Path(options["file"])
        try:
            data = read_study_file(path)
            study = load_study_data(
                data,
                owner=owner,
                base_dir=path.resolve().parent,
                replace=options["replace"],
                check_only=options["check"],
            )
        except StudyFileError as exc:
            for problem in exc.problems:
                self.stderr.write(f"  {problem}")
            count = len(exc.problems)
            raise CommandError(f"{path}: {count} problem{'s' if count != 1 else ''}; nothing was written.") from None
        if study is None:
            self.stdout.write(self.style.SUCCESS(f"{path}: the study file is valid."))
            return
        items = study.items.count()
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded study {study.name!r} (slug {study.slug}, id {study.pk}): {items} items, state {study.state}."
            )
        )
        self.stdout.write(f"Crowd entry link path: /s/{study.entry_token}/")

    def _owner(self, username: str | None):
        users = get_user_model().objects
        if username:
            try:
                return users.get(**{users.model.USERNAME_FIELD: username})
            except users.model.DoesNotExist:
                raise CommandError(f"There is no user named {username!r}.") from None
        superusers = list(users.filter(is_superuser=True)[:2])
        if len(superusers) != 1:
            raise CommandError("Name the study's owner with --owner USERNAME.")
        return superusers[0]
