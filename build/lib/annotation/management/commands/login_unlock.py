"""``manage.py login_unlock USERNAME [--address ADDRESS]``: lift a login pause before it runs out.

A guesser can pause logins to a known account on purpose (that is the price of
refusing the right password during a pause); this lets an operator let its owner back in.
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.logins import login_unlock


class Command(BaseCommand):
    help = "Lift the login pause of a username and/or a client address (after too many failed logins)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", nargs="?", default="", help="the account whose logins are paused")
        parser.add_argument("--address", default="", help="a client address whose logins are paused")

    def handle(self, *args, username: str = "", address: str = "", **options) -> None:
        if not username and not address:
            raise CommandError("Name a username, an --address, or both.")
        login_unlock(username=username, address=address)
        lifted = " and ".join(part for part in (username and f"account {username!r}", address and address) if part)
        self.stdout.write(self.style.SUCCESS(f"Logins for {lifted} may go ahead again."))
