"""python manage.py retry_run RUN [--wait] [--inline] — ask again for a run's failed and unparseable units."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.management.commands.judge import _describe
from judging.management.run_commands import work_and_report
from judging.models import JudgeRun
from judging.selectors import run_summary
from judging.services.runs import process_run, run_retry_failed


class Command(BaseCommand):
    help = (
        "Queue a new run of the same judge version over a run's failed and unparseable units; the earlier "
        "attempts stay in each judgment's provenance."
    )

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, help="The run whose failures to retry (its id).")
        parser.add_argument("--wait", action="store_true", help="Show progress and print a JSON summary at the end.")
        parser.add_argument(
            "--inline", action="store_true", help="Work the run in this process instead of a Celery worker."
        )

    def handle(self, *args, **opts):
        run = JudgeRun.objects.select_related("judge", "study").filter(pk=opts["run"]).first()
        if run is None:
            raise CommandError(f"No run {opts['run']}.")
        try:
            retry = run_retry_failed(run=run, enqueue=not opts["inline"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        count = "the failed" if retry.preparing else retry.units.count()
        self.stderr.write(f"Run {retry.pk}: retrying {count} units of run {run.pk}")
        work_and_report(self, retry, opts, process=process_run, describe=_describe, summary=run_summary)
