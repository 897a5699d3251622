"""python manage.py generate STUDY --base-url URL --model NAME [...] — queue (and watch) candidate generation."""

import json

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.generation_selectors import generation_progress, generation_summary
from judging.models import GenerationRun, GeneratorConfig
from judging.services.generation import generation_run_create, generator_find_or_create, process_generation_run

from .judge import study_by_ref, watch


class Command(BaseCommand):
    help = (
        "Create or reuse one generator (an LLM endpoint and model; it is one contestant), queue a run writing "
        "one candidate per prompt of the study, optionally wait. Run it once per contestant."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="Study slug (or id) holding the prompts.")
        parser.add_argument(
            "--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1"
        )
        parser.add_argument("--model", required=True)
        parser.add_argument(
            "--name", default="", help="Generator (contestant) name, the candidates' key; default: from the model."
        )
        parser.add_argument("--api-key-env", default="", help="Environment variable holding the API key.")
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument("--concurrency", type=int)
        parser.add_argument("--timeout", type=float)
        parser.add_argument("--owner", default="", help="Username owning the generator (default: the study's owner).")
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
            generator = self._generator(owner, opts)
            run = generation_run_create(study=study, generators=[generator], enqueue=not opts["inline"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stderr.write(
            f"Generation {run.pk}: generator {generator.name!r} on {study.slug} ({run.units.count()} prompts)"
        )
        if opts["inline"]:
            process_generation_run(run_id=run.pk)
        if opts["wait"] or opts["inline"]:
            self._wait(run)
            run.refresh_from_db()
            self.stdout.write(json.dumps(generation_summary(run=run)))

    def _generator(self, owner, opts) -> GeneratorConfig:
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
        generator, created = generator_find_or_create(
            owner=owner, base_url=opts["base_url"], model=opts["model"], name=opts["name"], **settings
        )
        self.stderr.write(f"{'Created' if created else 'Reusing'} generator {generator.name!r}")
        return generator

    def _wait(self, run: GenerationRun) -> None:
        def describe(run: GenerationRun) -> str:
            p = generation_progress(run=run)
            return (
                f"{p.finished}/{p.total} prompts ({p.percent}%) — generated {p.generated}, failed {p.failed}, "
                f"tokens {p.tokens} [{p.status}]"
            )

        watch(self.stderr, run, describe)
