"""python manage.py judge STUDY --base-url URL --model NAME [...] — queue (and watch) a judge run."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from judging.management.run_commands import (
    add_call_arguments,
    add_endpoint_arguments,
    add_run_arguments,
    endpoint_settings,
    run_owner,
    study_by_ref,
    work_and_report,
)
from judging.models import JudgeConfig, JudgeRun
from judging.selectors import run_progress, run_summary
from judging.services.judges import judge_find_or_create
from judging.services.runs import process_run, run_create


class Command(BaseCommand):
    help = "Create or reuse a judge (an LLM endpoint or a baseline), queue a run over a study, optionally wait."

    def add_arguments(self, parser):
        parser.add_argument("study", help="Study slug (or id).")
        add_endpoint_arguments(
            parser,
            required=False,
            name_help="Judge name: reuses the judge of this name, or creates it; without it the judge of this "
            "endpoint and model is reused. Give two names to compare two prompts on one model.",
        )
        parser.add_argument(
            "--template",
            default="",
            help="Prompt template for the study's task type: the owner's own template of this name, else the "
            "built-in one. The judge is pinned to its newest version.",
        )
        add_call_arguments(parser)
        parser.add_argument("--trials", type=int)
        parser.add_argument("--both-orders", action="store_true", help="Pairwise: judge A/B and B/A.")
        parser.add_argument("--baseline", choices=["random", "constant", "length"])
        add_run_arguments(parser, what="judge")

    def handle(self, *args, **opts):
        study = study_by_ref(opts["study"])
        owner = run_owner(study, opts)
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
        if run.judge_id != judge.pk:
            self.stderr.write(f"Trials or both-orders changed: judge {judge.name!r} is now version {run.judge.version}")
        judge = run.judge
        self.stderr.write(
            f"Run {run.pk}: judge {judge.name!r} version {judge.version} on {study.slug} "
            f"({'units made by the worker' if run.preparing else f'{run.units.count()} units'})"
        )
        work_and_report(self, run, opts, process=process_run, describe=_describe, summary=run_summary)

    def _judge(self, owner, study: Study, opts) -> JudgeConfig:
        if opts["baseline"]:
            judge, _ = judge_find_or_create(owner=owner, baseline=opts["baseline"])
            return judge
        if not (opts["base_url"] and opts["model"]):
            raise CommandError("Give --base-url and --model, or --baseline random|constant|length.")
        settings = endpoint_settings(opts)
        if opts["name"]:
            settings["name"] = opts["name"]
        if opts["template"]:
            settings["templates"] = {study.task_type: opts["template"]}
        try:
            # The operator typed --api-key-env: it may name any variable (see judging.keys).
            judge, created = judge_find_or_create(
                owner=owner,
                base_url=opts["base_url"],
                model=opts["model"],
                key_env_by_operator=bool(opts["api_key_env"]),
                **settings,
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if created:
            self.stderr.write(f"Created judge {judge.name!r}")
        elif judge.version > 1 and judge.runs.count() == 0 and not judge.rater.judgments.exists():
            self.stderr.write(
                f"Reusing judge {judge.name!r} as version {judge.version}: what produces its answers changed, "
                "so this version is judged afresh"
            )
        else:
            self.stderr.write(f"Reusing judge {judge.name!r} (version {judge.version})")
        return judge


def _describe(run: JudgeRun) -> str:
    p = run_progress(run=run)
    return (
        f"{p.finished}/{p.total} units ({p.percent}%) — judged {p.judged}, unparseable {p.unparseable}, "
        f"failed {p.failed}, already judged {p.already}, calls {p.calls}, tokens {p.tokens} [{p.outcome}]"
    )
