"""Candidate generation: generator models write the contestants' jokes for a study's prompts.

Each generator is one contestant: for every prompt item it writes one
candidate whose key is the generator's name, so a study of bare prompts
becomes the source of a HumorRank tournament. Runs work like judge runs
(claimed units, retries, resumable); the candidate row itself is the result,
unique per (item, key), so nothing is written twice.
"""

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify

from annotation.job_tasks import Held, JobKind, job_kind_register, job_run
from annotation.media import item_media
from annotation.models import Candidate, Item, Study
from annotation.task_types import get_task_type

from ..backends.chat import ChatBackend
from ..keys import ApiKeyUnavailable, redact, resolve_api_key, set_api_key, settle_key_source
from ..limits import Limits, endpoint_call_limits
from ..models import ACTIVE_RUN_STATES, GenerationRun, GenerationUnit, GeneratorConfig, RunStatus, UnitStatus
from ..outbound import OutboundRefused
from ..parsing import Parsed, find_json_object
from ..prompts.images import image_parts, refuse_blind, with_images
from ..prompts.render import check_template, render
from ..retry import ABANDONED, OK, RetryPolicy, ask
from ..runner import (
    cancel_run,
    complete_unit,
    drive,
    end_run_if_finished,
    release_unit,
    resume_run,
)
from .judges import _check_base_url, set_endpoint_settings
from .recovery import generation_runs_expiry, generation_runs_recover

DEFAULT_GENERATOR_PROMPT = (
    "Write one short, original joke for this prompt. Reply with the joke only, no introduction.\n\nPrompt: {{ prompt }}"
)
MAX_CANDIDATE_CHARS = 2000


def is_truncated(finish_reason: str | None) -> bool:
    """True when the model stopped because it ran out of tokens (OpenAI's ``finish_reason`` "length")."""
    return finish_reason == "length"


def parse_candidate(text: str | None) -> Parsed:
    """A generated joke: the reply itself, or the "joke"/"text" field of a JSON reply."""
    if not text or not text.strip():
        return Parsed(error="the answer is empty")
    obj = find_json_object(text)
    if obj is not None:
        joke = next((obj[k] for k in ("joke", "text", "answer", "response") if isinstance(obj.get(k), str)), None)
        if not joke or not joke.strip():
            return Parsed(error="the JSON answer has no joke")
        text = joke
    joke = text.strip().strip('"').strip()
    if len(joke) > MAX_CANDIDATE_CHARS:
        return Parsed(error=f"the joke is longer than {MAX_CANDIDATE_CHARS} characters")
    return Parsed(value={"text": joke}, method="json" if obj is not None else "text")


# A generator's settings, in the order forms and the API show them.
GENERATOR_SETTINGS = (
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "sees_images",
    "timeout_seconds",
    "max_retries",
    "backoff_seconds",
    "concurrency",
    "rate_limit_per_minute",
    "system_text",
    "user_text",
)
BARE_PROMPT_TASK_TYPES = "rating scale, binary label, micro-edit or written explanation"


def _apply_generator(generator: GeneratorConfig, changes: dict[str, Any]) -> None:
    set_endpoint_settings(generator, changes, known=GENERATOR_SETTINGS, kind="generator")
    generator.user_text = generator.user_text or DEFAULT_GENERATOR_PROMPT
    check_template(system=generator.system_text, user=generator.user_text, task_type=None)
    _check_base_url(generator.base_url)
    if not (generator.base_url and generator.model):
        raise ValidationError("A generator needs a base URL and a model name.")


def _check_name_free(owner, name: str, *, exclude: int | None = None) -> None:
    if GeneratorConfig.objects.filter(owner=owner, name=name).exclude(pk=exclude).exists():
        raise ValidationError(f"You already have a generator named {name!r}.")


def generator_create(
    *, owner, name: str, api_key: str | None = None, key_env_by_operator: bool = False, **settings: Any
) -> GeneratorConfig:
    """A new generator (one contestant). ``api_key`` is stored encrypted and never shown again.

    ``api_key_env`` must name a variable declared for judge keys, unless ``key_env_by_operator`` (a
    manage.py command, never a web request) vouches for it: see ``judging.keys``."""
    name = (name or "").strip()
    _check_name_free(owner, name)
    generator = GeneratorConfig(owner=owner, name=name, temperature=0.7)
    _apply_generator(generator, settings)
    set_api_key(generator, api_key)
    settle_key_source(generator, by_operator=key_env_by_operator)
    generator.full_clean()
    generator.save()
    return generator


def generator_update(
    *, generator: GeneratorConfig, api_key: str | None = None, key_env_by_operator: bool = False, **changes: Any
) -> GeneratorConfig:
    """Change a generator. ``api_key=None`` keeps the stored key; "" removes it (``key_env_by_operator``: as
    in ``generator_create``).

    Renaming changes the key of candidates written from now on, not of those already written.
    """
    name = changes.pop("name", None)
    if name is not None:
        name = name.strip()
        _check_name_free(generator.owner, name, exclude=generator.pk)
        generator.name = name
    _apply_generator(generator, changes)
    set_api_key(generator, api_key)
    settle_key_source(generator, by_operator=key_env_by_operator)
    generator.full_clean()
    generator.save()
    return generator


def generator_find_or_create(
    *, owner, base_url: str, model: str, name: str = "", key_env_by_operator: bool = False, **settings: Any
) -> tuple[GeneratorConfig, bool]:
    """The owner's generator by ``name`` (else by endpoint and model), made if missing; settings updated.

    ``key_env_by_operator`` as in ``generator_create``."""
    found = GeneratorConfig.objects.filter(owner=owner)
    existing = (
        found.filter(name=name).first() if name else found.filter(base_url=base_url, model=model).order_by("pk").first()
    )
    if existing:
        changes = {
            k: v for k, v in {"base_url": base_url, "model": model, **settings}.items() if getattr(existing, k) != v
        }
        if key_env_by_operator and settings.get("api_key_env"):
            changes["api_key_env"] = settings["api_key_env"]  # the operator vouches for it now
        if not changes:
            return existing, False
        return generator_update(generator=existing, key_env_by_operator=key_env_by_operator, **changes), False
    base = name or slugify(model)[:90] or "generator"
    name, n = base, 2
    while found.filter(name=name).exists():
        name, n = f"{base}-{n}", n + 1
    return generator_create(
        owner=owner, name=name, base_url=base_url, model=model, key_env_by_operator=key_env_by_operator, **settings
    ), True


def _check_study_takes_candidates(study: Study, names: set[str], items: list[Item]) -> None:
    """Generated candidates must fit the study: bare prompts, or room for more candidates per item."""
    task_type = get_task_type(study.task_type)
    high = task_type.candidates[1]
    if high == 0 or high is None:
        return  # bare prompts (the candidates are only the tournament's), or no upper limit
    existing: dict[int, set[str]] = {}
    for item_id, key in Candidate.objects.filter(item__in=items).values_list("item_id", "key"):
        existing.setdefault(item_id, set()).add(key)
    for item in items:
        wanted = len(existing.get(item.pk, set()) | names)
        if wanted > high:
            raise ValidationError(
                f"{task_type.title} items take at most {high} candidates; item {item.external_id!r} would have "
                f"{wanted}. Generate into a study of bare prompts instead: a {BARE_PROMPT_TASK_TYPES} study "
                "whose items have a prompt and no candidates."
            )


def generation_run_create(
    *, study: Study, generators: list[GeneratorConfig], items=None, created_by=None, enqueue: bool = True
) -> GenerationRun:
    """A queued run: one unit per (prompt item, generator); attention checks are left out unless ``items`` is given."""
    if not generators:
        raise ValidationError("Choose at least one generator.")
    if len({g.name for g in generators}) != len(generators):
        raise ValidationError("Generators in one run need different names (they become the candidate keys).")
    item_list = list(items) if items is not None else list(study.items.filter(is_attention_check=False))
    if not item_list:
        raise ValidationError("The study has no prompts.")
    if any(item.study_id != study.pk for item in item_list):
        raise ValidationError("Every item must belong to the study.")
    _check_study_takes_candidates(study, {g.name for g in generators}, item_list)
    for generator in generators:
        refuse_blind(study=study, sees_images=generator.sees_images, who=f"The generator {generator}", items=item_list)
    with transaction.atomic():
        run = GenerationRun.objects.create(study=study, created_by=created_by)
        run.generators.set(generators)
        GenerationUnit.objects.bulk_create(
            GenerationUnit(run=run, item=item, generator=g) for item in item_list for g in generators
        )
        if enqueue:
            _enqueue(run.pk)
    return run


def _enqueue(run_id: int) -> None:
    from ..tasks import generation_run_task

    transaction.on_commit(lambda: generation_run_task.delay(run_id))


def generation_run_cancel(*, run: GenerationRun) -> bool:
    """Stop handing out the run's units; calls in flight finish and are kept. False if it had ended."""
    return cancel_run(run)


def generation_run_resume(*, run: GenerationRun, enqueue: bool = True) -> GenerationRun:
    """Queue the run again: unfinished units (or ones held by a dead worker) are worked; written candidates stay."""
    return resume_run(run, unit_model=GenerationUnit, enqueue=_enqueue if enqueue else None)


def generation_run_fail(*, run_id: int, error: str) -> None:
    GenerationRun.objects.filter(pk=run_id).exclude(status=RunStatus.CANCELLED).update(
        status=RunStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


@dataclass
class _Prepared:
    unit: GenerationUnit
    generator: GeneratorConfig
    messages: list[dict[str, Any]]
    rng: random.Random


class GenerationJob:
    unit_model = GenerationUnit

    def __init__(self, run: GenerationRun, *, sleep=time.sleep):
        self.run = run
        self.sleep = sleep
        self.stop = threading.Event()
        self.generators = {g.pk: g for g in run.generators.all()}
        widths: dict[int, int] = {}
        self.backends: dict[int, ChatBackend] = {}
        self.limiters: dict[int, Limits] = {}
        self.secrets: list[str] = []
        for g in self.generators.values():
            key = resolve_api_key(g)
            self.secrets.append(key)
            self.backends[g.pk] = ChatBackend(
                base_url=g.base_url,
                api_key=key,
                model=g.model,
                temperature=g.temperature,
                max_tokens=g.max_tokens,
                timeout=g.timeout_seconds,
                structured_output=False,
                concurrency=g.concurrency,
            )
            # Each generator's concurrency and rate hold across every worker on it (Redis cache), and
            # never exceed what its endpoint says it serves at once.
            widths[g.pk], self.limiters[g.pk] = endpoint_call_limits(
                backend=self.backends[g.pk],
                scope="generator",
                pk=g.pk,
                concurrency=g.concurrency,
                per_minute=g.rate_limit_per_minute,
                timeout=g.timeout_seconds,
            )
        self.concurrency = max(widths.values())

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()
        for limiter in self.limiters.values():
            limiter.close()

    def prepare(self, unit: GenerationUnit) -> _Prepared | None:
        generator = self.generators[unit.generator_id]
        item = Item.objects.get(pk=unit.item_id)
        if Candidate.objects.filter(item=item, key=generator.name).exists():
            complete_unit(unit)
            return None
        context = {"prompt": item.prompt or item.text, "text": item.text}
        messages = [{"role": "user", "content": render(generator.user_text, context)}]
        if generator.system_text.strip():
            messages.insert(0, {"role": "system", "content": render(generator.system_text, context)})
        if generator.sees_images:
            # Caption a cartoon: the prompt's pictures go with it (candidates' own are not the prompt's).
            refs = [ref for ref in item_media([item.pk]).get(item.pk, []) if ref.role != "candidate"]
            messages = with_images(messages, image_parts(refs, shown=[]))
        return _Prepared(unit, generator, messages, random.Random(f"{unit.pk}"))  # noqa: S311

    def call(self, prepared: _Prepared):
        g = prepared.generator
        return ask(
            backend=self.backends[g.pk],
            messages=prepared.messages,
            schema=None,
            parse=parse_candidate,
            policy=RetryPolicy(
                max_retries=g.max_retries,
                base_seconds=g.backoff_seconds,
                max_elapsed_seconds=django_settings.FUNNYBONE_JUDGE_RETRY_SECONDS,
            ),
            limiter=self.limiters[g.pk],
            rng=prepared.rng,
            should_stop=self.stop.is_set,
            sleep=self.sleep,
        )

    def finish(self, unit: GenerationUnit, prepared: _Prepared, answer) -> None:
        if answer.status == ABANDONED:
            release_unit(unit, attempts=len(answer.attempts))
            return
        if answer.status != OK:
            error = redact(f"{answer.status}: {answer.error}", *self.secrets)
            complete_unit(unit, status=UnitStatus.FAILED, attempts=len(answer.attempts), error=error[:2000])
            return
        g = prepared.generator
        provenance = json.loads(
            redact(
                json.dumps(
                    {
                        "generator": g.name,
                        "model": g.model,
                        "temperature": g.temperature,
                        "generation_run": self.run.pk,
                        "tokens": {"prompt": answer.prompt_tokens, "completion": answer.completion_tokens},
                        "latency_ms": answer.completion.latency_ms,
                        # "length": the model hit max_tokens, so the joke may be cut off mid-sentence.
                        "finish_reason": answer.completion.finish_reason,
                        "truncated": is_truncated(answer.completion.finish_reason),
                    }
                ),
                *self.secrets,
            )
        )
        highest = Candidate.objects.filter(item_id=unit.item_id).aggregate(p=Max("position"))["p"]
        position = 0 if highest is None else highest + 1
        try:
            with transaction.atomic():
                Candidate.objects.create(
                    item_id=unit.item_id,
                    key=g.name,
                    position=position,
                    text=answer.parsed.value["text"],
                    provenance=provenance,
                )
        except IntegrityError:
            pass  # another worker wrote this candidate first; one is kept
        complete_unit(unit, attempts=len(answer.attempts))

    def fail(self, unit: GenerationUnit, prepared, error: BaseException) -> None:
        message = redact(f"{type(error).__name__}: {error}", *self.secrets)
        complete_unit(unit, status=UnitStatus.FAILED, error=message[:2000])


GENERATION_RUNS = job_kind_register(
    JobKind(
        name="generation runs",
        model=GenerationRun,
        what="The generation run",
        driven=True,
        fail=lambda pk, reason, token: generation_run_fail(run_id=pk, error=reason),
        recover=generation_runs_recover,
        expiry=generation_runs_expiry,
        outcome="the candidates written so far are kept; Resume continues it.",
    )
)


def process_generation_run(*, run_id: int, sleep=time.sleep) -> None:
    job_run(GENERATION_RUNS, run_id, lambda held: generation_run_drive(held, sleep))


def generation_run_drive(held: Held, sleep: Callable[[float], None] = time.sleep) -> None:
    """Work a claimed generation run until every unit has its candidate (or the run is cancelled)."""
    run_id = held.pk
    run = GenerationRun.objects.select_related("study").get(pk=run_id)
    try:
        job = GenerationJob(run, sleep=sleep)
    except (ApiKeyUnavailable, OutboundRefused) as exc:
        generation_run_fail(run_id=run_id, error=str(exc))
        return

    def is_cancelled() -> bool:
        cancelled = not GenerationRun.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).exists()
        if cancelled:
            job.stop.set()
        return cancelled

    try:
        result = drive(job, run_id=run_id, is_cancelled=is_cancelled, token=held.token)
    finally:
        job.close()
    if not result.cancelled:
        end_run_if_finished(GenerationRun, GenerationUnit, run_id)
