"""Erase participants' platform ids older than FUNNYBONE_RAW_ID_RETENTION_DAYS (the worker also runs it hourly)."""

from django.core.management.base import BaseCommand

from annotation.privacy import erase_expired_raw_ids, retention_days


class Command(BaseCommand):
    help = "Erase the platform ids of participants who entered longer ago than the retention setting."

    def handle(self, *args, **options) -> None:
        days = retention_days()
        if days is None:
            self.stdout.write("FUNNYBONE_RAW_ID_RETENTION_DAYS is 0: platform ids are kept.")
            return
        n = erase_expired_raw_ids()
        self.stdout.write(f"Erased the platform ids of {n} enrolment(s) older than {days} days.")
