"""python manage.py generate STUDY --base-url URL --model NAME [...] — queue (and watch) candidate generation."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.generation_selectors import generation_progress, generation_summary
from judging.management.run_commands import (
    add_call_arguments,
    add_endpoint_arguments,
    add_run_arguments,
    endpoint_settings,
    run_owner,
    study_by_ref,
    work_and_report,
)
from judging.models import GenerationRun, GeneratorConfig
from judging.services.generation import generation_run_create, generator_find_or_create, process_generation_run


class Command(BaseCommand):
    help = (
        "Create or reuse one generator (an LLM endpoint and model; it is one contestant), queue a run writing "
        "one candidate per prompt of the study, optionally wait. Run it once per contestant."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="Study slug (or id) holding the prompts.")
        add_endpoint_arguments(
            parser,
            required=True,
            name_help="Generator (contestant) name, the candidates' key; default: from the model.",
        )
        add_call_arguments(parser)
        add_run_arguments(parser, what="generator")

    def handle(self, *args, **opts):
        study = study_by_ref(opts["study"])
        owner = run_owner(study, opts)
        try:
            generator = self._generator(owner, opts)
            run = generation_run_create(study=study, generators=[generator], enqueue=not opts["inline"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stderr.write(
            f"Generation {run.pk}: generator {generator.name!r} on {study.slug} ({run.units.count()} prompts)"
        )
        work_and_report(self, run, opts, process=process_generation_run, describe=_describe, summary=generation_summary)

    def _generator(self, owner, opts) -> GeneratorConfig:
        # The operator typed --api-key-env: it may name any variable (see judging.keys).
        generator, created = generator_find_or_create(
            owner=owner,
            base_url=opts["base_url"],
            model=opts["model"],
            name=opts["name"],
            key_env_by_operator=bool(opts["api_key_env"]),
            **endpoint_settings(opts),
        )
        self.stderr.write(f"{'Created' if created else 'Reusing'} generator {generator.name!r}")
        return generator


def _describe(run: GenerationRun) -> str:
    p = generation_progress(run=run)
    return (
        f"{p.finished}/{p.total} prompts ({p.percent}%) — generated {p.generated}, failed {p.failed}, "
        f"cut off at max tokens {p.truncated}, tokens {p.tokens} [{p.status}]"
    )
