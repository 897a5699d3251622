"""``manage.py humorrank_check TOURNAMENT``: a blind human A/B/tie check over a sample of a tournament's judged pairs."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.models import Tournament
from judging.services.tournaments import human_check_create


class Command(BaseCommand):
    help = "Create a draft HumorRank human-check study from a sample of a tournament's judged pairs."

    def add_arguments(self, parser) -> None:
        parser.add_argument("tournament", type=int, help="Tournament id (shown on its page and in the API).")
        parser.add_argument("--pairs", type=int, default=None, help="Pairs to sample (default: the template's 60).")
        parser.add_argument("--seed", type=int, default=0, help="Sampling seed, for a reproducible sample.")
        parser.add_argument("--name", default="", help="Name of the new study.")

    def handle(self, *args, **options) -> None:
        try:
            tournament = Tournament.objects.select_related("owner").get(pk=options["tournament"])
        except Tournament.DoesNotExist:
            raise CommandError(f"No tournament {options['tournament']}.") from None
        try:
            study = human_check_create(
                owner=tournament.owner,
                tournament=tournament,
                name=options["name"],
                n_pairs=options["pairs"],
                seed=options["seed"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(
            f"Created draft study {study.slug} with {study.items.count()} pairs; open it to collect votes."
        )
