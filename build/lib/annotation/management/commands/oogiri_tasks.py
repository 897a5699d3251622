"""Build the five OOGIRI-MASTER benchmark studies from a voting study."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.protocols.oogiri import TASKS
from annotation.protocols.oogiri_benchmark import benchmark_tasks_build


class Command(BaseCommand):
    help = "Filter an OOGIRI voting study by total votes, take top-3/bottom-3, and create the benchmark studies."

    def add_arguments(self, parser):
        parser.add_argument("study", help="slug of the voting study")
        parser.add_argument("--min-votes", type=int, default=None, help="minimum total votes per prompt (default 100)")
        parser.add_argument("--per-task", type=int, default=None, help="prompts drawn per task (default 100)")
        parser.add_argument("--seed", type=int, default=0, help="seed for drawing prompts and shuffling options")
        parser.add_argument("--task", action="append", choices=list(TASKS), help="only these tasks (repeatable)")
        parser.add_argument("--owner", help="username owning the new studies (default: the voting study's owner)")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        owner = study.owner
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"No user {options['owner']!r}.")
        try:
            built = benchmark_tasks_build(
                study=study,
                owner=owner,
                min_total_votes=options["min_votes"],
                per_task=options["per_task"],
                seed=options["seed"],
                tasks=options["task"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        for task, benchmark in built.items():
            count = benchmark.items.filter(is_attention_check=False).count()
            self.stdout.write(f"{task}: {benchmark.slug} ({count} items)")
