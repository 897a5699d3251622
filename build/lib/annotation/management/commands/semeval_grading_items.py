"""``manage.py semeval_grading_items EDITING GRADING``: the editors' micro-edits become headlines to grade."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.protocols.semeval import grading_items_from_edits


class Command(BaseCommand):
    help = (
        "Add every edit collected by a SemEval-2020 Task 7 editing study as an edited headline of a grading study "
        "(each distinct word per headline once; running it again adds only new edits)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("editing", help="Slug of the editing study.")
        parser.add_argument("grading", help="Slug of the grading study.")

    def handle(self, *args, **options) -> None:
        studies = {s.slug: s for s in Study.objects.filter(slug__in=[options["editing"], options["grading"]])}
        missing = [slug for slug in (options["editing"], options["grading"]) if slug not in studies]
        if missing:
            raise CommandError(f"No study with the slug {missing[0]!r}.")
        try:
            added = grading_items_from_edits(editing=studies[options["editing"]], grading=studies[options["grading"]])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(f"Added {added} edited headline(s) to {options['grading']}.")
