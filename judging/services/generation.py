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
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import Candidate, Item, Study

from ..backends.chat import ChatBackend
from ..keys import ApiKeyUnavailable, redact, resolve_api_key
from ..models import ACTIVE_RUN_STATES, GenerationRun, GenerationUnit, GeneratorConfig, RunStatus, UnitStatus
from ..parsing import Parsed, find_json_object
from ..prompts.render import render
from ..retry import ABANDONED, OK, RateLimiter, RetryPolicy, ask
from ..runner import complete_unit, drive, release_unit, unfinished

DEFAULT_GENERATOR_PROMPT = (
    "Write one short, original joke for this prompt. Reply with the joke only, no introduction.\n\nPrompt: {{ prompt }}"
)
MAX_CANDIDATE_CHARS = 2000


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


def generator_create(*, owner, name: str, api_key: str | None = None, **settings: Any) -> GeneratorConfig:
    from ..keys import set_api_key
    from .judges import _check_base_url

    generator = GeneratorConfig(owner=owner, name=name, **{"temperature": 0.7, **settings})
    generator.user_text = generator.user_text or DEFAULT_GENERATOR_PROMPT
    _check_base_url(generator.base_url)
    set_api_key(generator, api_key)
    generator.full_clean()
    generator.save()
    return generator


def generation_run_create(
    *, study: Study, generators: list[GeneratorConfig], items=None, created_by=None, enqueue: bool = True
) -> GenerationRun:
    if not generators:
        raise ValidationError("Choose at least one generator.")
    if len({g.name for g in generators}) != len(generators):
        raise ValidationError("Generators in one run need different names (they become the candidate keys).")
    item_list = list(items) if items is not None else list(study.items.filter(is_attention_check=False))
    if not item_list:
        raise ValidationError("The study has no prompts.")
    with transaction.atomic():
        run = GenerationRun.objects.create(study=study, created_by=created_by)
        run.generators.set(generators)
        GenerationUnit.objects.bulk_create(
            GenerationUnit(run=run, item=item, generator=g) for item in item_list for g in generators
        )
        if enqueue:
            from ..tasks import generation_run_task

            transaction.on_commit(lambda: generation_run_task.delay(run.pk))
    return run


def generation_run_fail(*, run_id: int, error: str) -> None:
    GenerationRun.objects.filter(pk=run_id).exclude(status=RunStatus.CANCELLED).update(
        status=RunStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


@dataclass
class _Prepared:
    unit: GenerationUnit
    generator: GeneratorConfig
    messages: list[dict[str, str]]
    rng: random.Random


class GenerationJob:
    unit_model = GenerationUnit

    def __init__(self, run: GenerationRun, *, sleep=time.sleep):
        self.run = run
        self.sleep = sleep
        self.stop = threading.Event()
        self.generators = {g.pk: g for g in run.generators.all()}
        self.concurrency = max(g.concurrency for g in self.generators.values())
        self.backends: dict[int, ChatBackend] = {}
        self.limiters: dict[int, RateLimiter] = {}
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
            self.limiters[g.pk] = RateLimiter(g.rate_limit_per_minute)

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()

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
        return _Prepared(unit, generator, messages, random.Random(f"{unit.pk}"))  # noqa: S311

    def call(self, prepared: _Prepared):
        g = prepared.generator
        return ask(
            backend=self.backends[g.pk],
            messages=prepared.messages,
            schema=None,
            parse=parse_candidate,
            policy=RetryPolicy(max_retries=g.max_retries, base_seconds=g.backoff_seconds),
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


def process_generation_run(*, run_id: int, sleep=time.sleep) -> None:
    started = GenerationRun.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).update(status=RunStatus.RUNNING)
    if not started:
        return
    run = GenerationRun.objects.select_related("study").get(pk=run_id)
    try:
        job = GenerationJob(run, sleep=sleep)
    except ApiKeyUnavailable as exc:
        generation_run_fail(run_id=run_id, error=str(exc))
        return

    def is_cancelled() -> bool:
        cancelled = not GenerationRun.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).exists()
        if cancelled:
            job.stop.set()
        return cancelled

    try:
        result = drive(job, run_id=run_id, is_cancelled=is_cancelled)
    finally:
        job.close()
    if not result.cancelled and not unfinished(GenerationUnit, run_id).exists():
        GenerationRun.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.DONE, finished_at=timezone.now()
        )
