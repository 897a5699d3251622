"""``manage.py load_demo``: the demo login and the demo studies of every protocol (some with answers already given).

Safe to run again: existing demo studies and an existing ``demo`` user are left
as they are.
"""

from django.core.management.base import BaseCommand

from annotation.demo.builder import DEMO_PASSWORD, DEMO_USERNAME, load_demo


class Command(BaseCommand):
    help = "Create the demo researcher login and the open demo studies of every protocol (idempotent)."

    def handle(self, *args, **options) -> None:
        result = load_demo()
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
