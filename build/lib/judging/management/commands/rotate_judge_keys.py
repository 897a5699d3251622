"""python manage.py rotate_judge_keys — encrypt stored judge and generator keys again under the current secret.

Run it after changing FUNNYBONE_KEY_SECRET (or SECRET_KEY) with the old value in FUNNYBONE_KEY_SECRET_OLD;
once it reports nothing unreadable, the old value can be removed.
"""

from django.core.management.base import BaseCommand, CommandError

from judging.keys import stored_keys_rotate


class Command(BaseCommand):
    help = "Re-encrypt every stored judge and generator API key under the current FUNNYBONE_KEY_SECRET/SECRET_KEY."

    def handle(self, *args, **opts):
        counts, unreadable = stored_keys_rotate()
        self.stdout.write(
            f"Re-encrypted {counts['judge']} judge keys and {counts['generator']} generator keys "
            "under the current secret."
        )
        if unreadable:
            raise CommandError(
                "No known secret decrypts the key of "
                + ", ".join(unreadable)
                + ": add the secret it was stored under to FUNNYBONE_KEY_SECRET_OLD, or enter those keys again."
            )
