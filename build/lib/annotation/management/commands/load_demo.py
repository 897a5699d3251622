"""``manage.py load_demo``: the demo login and the demo studies of every protocol (some with answers already given).

Safe to run again: existing demo studies and an existing ``demo`` user are left
as they are. Under ``FUNNYBONE_PRODUCTION=1`` the demo login (published password)
is refused: ``--owner USERNAME`` loads the studies for an existing account instead.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.demo.builder import DEMO_PASSWORD, DEMO_USERNAME, DemoLoginRefused, load_demo


class Command(BaseCommand):
    help = "Create the demo researcher login and the open demo studies of every protocol (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help="Give the demo studies to this existing account instead of the demo login "
            "(the only way to load them under FUNNYBONE_PRODUCTION=1).",
        )

    def handle(self, *args, owner: str | None = None, **options) -> None:
        user = None
        if owner:
            user_model = get_user_model()
            user = user_model.objects.filter(**{user_model.USERNAME_FIELD: owner}).first()
            if user is None:
                raise CommandError(f"No account named {owner!r}: create it first (manage.py createsuperuser).")
        try:
            result = load_demo(owner=user)
        except DemoLoginRefused as exc:
            raise CommandError(f"{exc}{self._published_password_warning()}") from None
        if result.user_created:
            self.stdout.write(
                self.style.WARNING(
                    f"Created the researcher login {DEMO_USERNAME} / {DEMO_PASSWORD}. It is for local use only: "
                    "change its password or delete it before anyone else can reach this server."
                )
            )
        for study in result.created:
            self.stdout.write(
                f"Created demo study {study.name!r} ({study.protocol}, {study.task_type}, {study.items.count()} items)."
            )
        for study in result.existing:
            self.stdout.write(f"Demo study {study.name!r} already exists; left as is.")
        self.stdout.write(
            self.style.SUCCESS(f"Demo ready: {len(result.created)} created, {len(result.existing)} already present.")
        )

    @staticmethod
    def _published_password_warning() -> str:
        # A demo login left from before production mode still opens with the published password.
        if not settings.FUNNYBONE_PRODUCTION:
            return ""
        user_model = get_user_model()
        demo = user_model.objects.filter(**{user_model.USERNAME_FIELD: DEMO_USERNAME}).first()
        if demo is not None and demo.check_password(DEMO_PASSWORD):
            return (
                f" Warning: the account {DEMO_USERNAME!r} on this server still has the published password; "
                f"change it (manage.py changepassword {DEMO_USERNAME}) or delete the account."
            )
        return ""
