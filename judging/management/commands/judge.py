"""python manage.py judge STUDY --base-url URL --model NAME [...] — queue (and watch) a judge run."""

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from judging.models import JudgeConfig, JudgeRun
from judging.selectors import run_progress, run_summary
from judging.services.judges import judge_find_or_create
from judging.services.runs import process_run, run_create


def study_by_ref(ref: str) -> Study:
    """A study by slug, or by id when the reference is a number."""
    study = Study.objects.filter(slug=ref).first()
    if study is None and ref.isdigit():
        study = Study.objects.filter(pk=int(ref)).first()
    if study is None:
        raise CommandError(f"No study {ref!r}.")
    return study


class Command(BaseCommand):
    help = "Create or reuse a judge (an LLM endpoint or a baseline), queue a run over a study, optionally wait."

    def add_arguments(self, parser):
        parser.add_argument("study", help="Study slug (or id).")
        parser.add_argument("--base-url", default="", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--model", default="")
        parser.add_argument(
            "--name",
            default="",
            help="Judge name: reuses the judge of this name, or creates it; without it the judge of this "
            "endpoint and model is reused. Give two names to compare two prompts on one model.",
        )
        parser.add_argument("--api-key-env", default="", help="Environment variable holding the API key.")
        parser.add_argument("--template", default="", help="Prompt template name for the study's task type.")
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument("--trials", type=int)
        parser.add_argument("--both-orders", action="store_true", help="Pairwise: judge A/B and B/A.")
        parser.add_argument("--concurrency", type=int)
        parser.add_argument("--timeout", type=float)
        parser.add_argument("--baseline", choices=["random", "constant", "length"])
        parser.add_argument("--owner", default="", help="Username owning the judge (default: the study's owner).")
        parser.add_argument("--wait", action="store_true", help="Show progress and print a JSON summary at the end.")
        parser.add_argument(
            "--inline", action="store_true", help="Work the run in this process instead of a Celery worker."
        )

    def handle(self, *args, **opts):
        study = study_by_ref(opts["study"])
        owner = study.owner
        if opts["owner"]:
            owner = get_user_model().objects.filter(username=opts["owner"]).first()
            if owner is None:
                raise CommandError(f"No user named {opts['owner']!r}.")
        try:
            judge = self._judge(owner, study, opts)
            run = run_create(
                study=study,
                judge=judge,
                trials=opts["trials"],
                both_orders=True if opts["both_orders"] else None,
                enqueue=not opts["inline"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stderr.write(f"Run {run.pk}: judge {judge.name!r} on {study.slug} ({run.units.count()} units)")
        if opts["inline"]:
            process_run(run_id=run.pk)
        if opts["wait"] or opts["inline"]:
            self._wait(run)
            run.refresh_from_db()
            self.stdout.write(json.dumps(run_summary(run=run)))

    def _judge(self, owner, study: Study, opts) -> JudgeConfig:
        if opts["baseline"]:
            judge, _ = judge_find_or_create(owner=owner, baseline=opts["baseline"])
            return judge
        if not (opts["base_url"] and opts["model"]):
            raise CommandError("Give --base-url and --model, or --baseline random|constant|length.")
        settings = {
            key: opts[opt]
            for key, opt in (
                ("temperature", "temperature"),
                ("max_tokens", "max_tokens"),
                ("concurrency", "concurrency"),
                ("timeout_seconds", "timeout"),
            )
            if opts[opt] is not None
        }
        if opts["api_key_env"]:
            settings["api_key_env"] = opts["api_key_env"]
        if opts["name"]:
            settings["name"] = opts["name"]
        if opts["template"]:
            settings["templates"] = {study.task_type: opts["template"]}
        try:
            judge, created = judge_find_or_create(
                owner=owner, base_url=opts["base_url"], model=opts["model"], **settings
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stderr.write(f"{'Created' if created else 'Reusing'} judge {judge.name!r}")
        return judge

    def _wait(self, run: JudgeRun) -> None:
        def describe(run: JudgeRun) -> str:
            p = run_progress(run=run)
            return (
                f"{p.finished}/{p.total} units ({p.percent}%) — judged {p.judged}, unparseable {p.unparseable}, "
                f"failed {p.failed}, tokens {p.tokens} [{p.status}]"
            )

        watch(self.stderr, run, describe)


def watch(stderr, run, describe: Callable[[Any], str]) -> None:
    """Write ``describe(run)`` whenever it changes (on one line on a terminal) until the run has ended."""
    tty = sys.stderr.isatty()
    last = None
    while True:
        run.refresh_from_db()
        line = describe(run)
        if line != last:
            stderr.write(("\r" + line) if tty else line, ending="" if tty else "\n")
            last = line
        if not run.is_active:
            if tty:
                stderr.write("")
            return
        time.sleep(0.5)
