"""What a judge run does with one unit: build the prompt, ask, parse, record the judgment."""

import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.utils import timezone

from annotation.media import item_media
from annotation.models import Assignment, Judgment
from annotation.services.assignment import assignments_for_judge
from annotation.services.judgments import ModelAnswer, judgment_retry, judgment_submit, judgments_submit_many
from annotation.task_types import get_task_type

from ..backends.baseline import NoBaseline, baseline_value, study_facts
from ..backends.chat import ChatBackend
from ..keys import redact, resolve_api_key
from ..limits import endpoint_call_limits
from ..models import JudgeRun, JudgeUnit, UnitOutcome, UnitStatus
from ..parsing import parse_answer
from ..prompts import CandidateView, build_context, default_schema, render_messages
from ..prompts.images import image_parts, refuse_blind, with_images
from ..retry import ABANDONED, OK, Answer, RetryPolicy, ask
from ..runner import complete_unit, pause_run, release_unit, update_rows
from .runs import SWAPPED_TRIAL_OFFSET, unit_assignment


@dataclass
class Prepared:
    unit: JudgeUnit
    assignment: Assignment
    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None
    shown: list[str]
    item_text: str
    rng: random.Random
    retry: bool = False


EXCERPT_CHARS = 500
# What finish_many sets per unit, in the order of its rows (after the unit's id).
UNIT_RESULT_FIELDS = [
    "attempts",
    "assignment",
    "outcome",
    "error",
    "reason",
    "prompt_tokens",
    "completion_tokens",
    "answer_excerpt",
]


def failure_kind(error: str) -> str:
    """An error without what differs from unit to unit (how many tries over how long), for counting by reason."""
    return error.split(" (gave up after")[0].strip()[:200]


def _cost(judge, prompt_tokens: int, completion_tokens: int) -> float:
    return round(
        (prompt_tokens * judge.input_cost_per_million + completion_tokens * judge.output_cost_per_million) / 1e6, 8
    )


class JudgeJob:
    unit_model = JudgeUnit
    claim_related = ("item__candidates",)

    def __init__(self, run: JudgeRun, *, sleep=time.sleep):
        self.run = run
        self.study = run.study
        self.judge = run.judge
        self.rater = run.judge.rater
        self.task_type = self.study.task_type
        kind = get_task_type(self.task_type)
        self.config = kind.config(self.study.config)
        self.stop = threading.Event()
        self.sleep = sleep
        self.backend: ChatBackend | None = None
        self._secret = ""
        if self.judge.is_baseline:
            # No network: units are answered while being prepared; this only sizes each claim.
            self.concurrency = 50
            self.facts = study_facts(
                study=self.study, task_type=self.task_type, config=self.config, kind=self.judge.baseline
            )
            return
        self.concurrency = self.judge.concurrency
        # Pictures added to the study after the run was made must not be judged blind either.
        refuse_blind(study=self.study, sees_images=self.judge.sees_images, who=f"The judge {self.judge}")
        self._media: dict[int, list] = {}
        self._secret = resolve_api_key(self.judge)
        self.backend = ChatBackend(
            base_url=self.judge.base_url,
            api_key=self._secret,
            model=self.judge.model,
            temperature=self.judge.temperature,
            max_tokens=self.judge.max_tokens,
            timeout=self.judge.timeout_seconds,
            structured_output=self.judge.structured_output,
            concurrency=self.judge.concurrency,
        )
        self.policy = RetryPolicy(
            max_retries=self.judge.max_retries,
            base_seconds=self.judge.backoff_seconds,
            max_elapsed_seconds=settings.FUNNYBONE_JUDGE_RETRY_SECONDS,
        )
        # Held across every worker on this judge (when the cache is Redis), not per process; never more
        # calls at once than the endpoint serves (it is asked), else adapting to its latency.
        self.concurrency, self.limiter = endpoint_call_limits(
            backend=self.backend,
            scope="judge",
            pk=self.judge.pk,
            concurrency=self.judge.concurrency,
            per_minute=self.judge.rate_limit_per_minute,
            timeout=self.judge.timeout_seconds,
        )

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
        if getattr(self, "limiter", None) is not None:
            self.limiter.close()

    # -- the loop's thread ----------------------------------------------------
    def _candidates(self, assignment: Assignment) -> list[CandidateView]:
        by_key = {c.key: c for c in assignment.item.candidates.all()}  # prefetched with the claim
        return [CandidateView(key, by_key[key].text, by_key[key].context) for key in assignment.shown_order]

    def _rng(self, unit: JudgeUnit) -> random.Random:
        parts = f"judge:{self.judge.seed}:{self.judge.pk}:{unit.item_id}:{unit.trial}:{unit.swapped}".encode()
        return random.Random(int.from_bytes(hashlib.blake2b(parts, digest_size=8).digest(), "big"))

    def prepare(self, unit: JudgeUnit) -> Prepared | None:
        assignment = unit_assignment(unit=unit, run=self.run)
        # The claim fetched the item and its candidates; share them instead of reading them again.
        assignment.item, assignment.study, assignment.rater = unit.item, self.study, self.rater
        JudgeUnit.objects.filter(pk=unit.pk).update(assignment=assignment)
        existing = Judgment.objects.filter(assignment=assignment).values_list("status", flat=True).first()
        if self._already(existing):
            complete_unit(unit, assignment=assignment, outcome=UnitOutcome.ALREADY)
            return None
        retry = existing is not None
        if self.judge.is_baseline:
            self._judge_by_baseline(unit, assignment, retry=retry)
            return None
        self._fetch_media([unit])
        return self._prepared(unit, assignment, retry)

    def _fetch_media(self, units: list[JudgeUnit]) -> None:
        """The pictures of a claimed batch's items, in one query (a text-only judge never gets this far
        on a study with pictures: ``refuse_blind``)."""
        self._media = item_media([unit.item_id for unit in units]) if self.judge.sees_images else {}

    def _already(self, existing_status: str | None) -> bool:
        """Judged before by this judge version: nothing to ask. A retry run asks again where that failed."""
        if existing_status is None:
            return False
        return existing_status == Judgment.Status.OK or self.run.retry_of_id is None

    def prepare_many(self, units: list[JudgeUnit]) -> list[tuple[JudgeUnit, Prepared | None]]:
        """``prepare`` for a batch of claimed units with a handful of queries in all (the caller's transaction)."""
        if self.judge.is_baseline:
            return [(unit, self.prepare(unit)) for unit in units]
        self._fetch_media(units)
        base, made = assignments_for_judge(
            study=self.study, rater=self.rater, wanted=[(unit.item, unit.trial) for unit in units]
        )
        flipped = [unit for unit in units if unit.swapped]
        orders = {
            (u.item_id, SWAPPED_TRIAL_OFFSET + u.trial): list(reversed(base[(u.item_id, u.trial)].shown_order))
            for u in flipped
        }
        swapped, made_swapped = assignments_for_judge(
            study=self.study,
            rater=self.rater,
            wanted=[(u.item, SWAPPED_TRIAL_OFFSET + u.trial) for u in flipped],
            orders=orders,
        )
        # Assignments made just now (the usual case in a first run) have no judgment to look for.
        older = [a.pk for a in (*base.values(), *swapped.values()) if a.pk not in made | made_swapped]
        statuses = (
            dict(Judgment.objects.filter(assignment_id__in=older).values_list("assignment_id", "status"))
            if older
            else {}
        )
        out: list[tuple[JudgeUnit, Prepared | None]] = []
        already: list[JudgeUnit] = []
        for unit in units:
            if unit.swapped:
                assignment = swapped[(unit.item_id, SWAPPED_TRIAL_OFFSET + unit.trial)]
                wanted = orders[(unit.item_id, SWAPPED_TRIAL_OFFSET + unit.trial)]
                if assignment.shown_order != wanted and assignment.pk not in statuses:
                    Assignment.objects.filter(pk=assignment.pk).update(shown_order=wanted)
                    assignment.shown_order = wanted
            else:
                assignment = base[(unit.item_id, unit.trial)]
            assignment.item, assignment.study, assignment.rater = unit.item, self.study, self.rater
            unit.assignment = assignment
            existing = statuses.get(assignment.pk)
            if self._already(existing):
                already.append(unit)
                out.append((unit, None))
            else:
                out.append((unit, self._prepared(unit, assignment, existing is not None)))
        # A unit that is asked about gets its assignment when its answer is recorded (finish_many).
        update_rows(
            JudgeUnit,
            [(unit.pk, unit.assignment.pk) for unit in already],
            ["assignment"],
            {
                "status": UnitStatus.DONE,
                "outcome": UnitOutcome.ALREADY,
                "claimed_until": None,
                "finished_at": timezone.now(),
            },
            unless={"status": [UnitStatus.DONE, UnitStatus.FAILED]},
        )
        return out

    def _prepared(self, unit: JudgeUnit, assignment: Assignment, retry: bool) -> Prepared:
        """The prompt of a unit that needs a call."""
        item = assignment.item
        candidates = self._candidates(assignment)
        context = build_context(item=item, candidates=candidates, config=self.config, task_type=self.task_type)
        template = self.run.template
        messages = render_messages(system=template.system_text, user=template.user_text, context=context)
        refs = self._media.get(item.pk)
        if refs:
            messages = with_images(messages, image_parts(refs, shown=assignment.shown_order))
        schema = template.response_schema or default_schema(
            task_type=self.task_type, config=self.config, n_candidates=len(candidates), item_text=item.text
        )
        return Prepared(
            unit, assignment, messages, schema, list(assignment.shown_order), item.text, self._rng(unit), retry
        )

    def _record(
        self,
        unit: JudgeUnit,
        assignment: Assignment,
        *,
        retry: bool,
        value: Any,
        status: str,
        provenance: dict[str, Any],
        duration_ms: int | None = None,
        error: str = "",
        calls: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        content: str | None = None,
    ) -> None:
        """Write the unit's judgment (over a failed one in a retry run) and what this run did with the unit."""
        submit = judgment_retry if retry else judgment_submit
        submitted = submit(
            assignment=assignment,
            rater=self.rater,
            value=value,
            status=status,
            provenance=provenance,
            duration_ms=duration_ms,
        )
        outcome = status if submitted.created else UnitOutcome.ALREADY
        complete_unit(
            unit,
            attempts=calls,
            assignment=assignment,
            outcome=outcome,
            error=error if submitted.created else "",
            reason=failure_kind(error) if submitted.created else "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            answer_excerpt=(content or "")[:EXCERPT_CHARS],
        )

    def _judge_by_baseline(self, unit: JudgeUnit, assignment: Assignment, *, retry: bool = False) -> None:
        keys = [c.key for c in assignment.item.candidates.all()]
        texts = {c.key: c.text for c in assignment.item.candidates.all()}
        base = self._provenance_base(unit, assignment)
        try:
            value, notes = baseline_value(
                kind=self.judge.baseline,
                task_type=self.task_type,
                config=self.config,
                item=assignment.item,
                shown=list(assignment.shown_order),
                texts=texts,
                keys=keys,
                facts=self.facts,
                rng=self._rng(unit),
            )
        except NoBaseline as exc:
            self._record(
                unit,
                assignment,
                retry=retry,
                value=None,
                status=Judgment.Status.FAILED,
                provenance={**base, "error": str(exc)},
                error=str(exc),
            )
        else:
            self._record(
                unit,
                assignment,
                retry=retry,
                value=value,
                status=Judgment.Status.OK,
                provenance={**base, **notes},
                duration_ms=0,
            )

    def _provenance_base(self, unit: JudgeUnit, assignment: Assignment) -> dict[str, Any]:
        judge = self.judge
        base: dict[str, Any] = {
            "kind": "baseline" if judge.is_baseline else "llm",
            "judge": {"id": judge.pk, "name": judge.name},
            "run": self.run.pk,
            "trial": unit.trial,
            "swapped": unit.swapped,
            "shown_order": list(assignment.shown_order),
        }
        if judge.is_baseline:
            base["baseline"] = judge.baseline
        else:
            base["judge"].update(
                model=judge.model, base_url=judge.base_url, temperature=judge.temperature, max_tokens=judge.max_tokens
            )
            template = self.run.template
            base["template"] = {"id": template.pk, "name": template.name, "version": template.version}
        return base

    def finish(self, unit: JudgeUnit, prepared: Prepared, answer: Answer) -> None:
        if answer.status == ABANDONED:
            release_unit(unit, attempts=len(answer.attempts))
            return
        if answer.endpoint_down:
            self._pause(unit, answer)
            return
        record = self._answer_record(unit, prepared, answer)
        self._record(unit, prepared.assignment, retry=prepared.retry, **record)

    def finish_many(self, results: list[tuple[JudgeUnit, Prepared, Answer]]) -> None:
        """``finish`` for a batch of answers in the caller's transaction: the judgments in one insert, the
        units in one update (a retry's replacement, rare, goes one by one)."""
        batch: list[tuple[JudgeUnit, Prepared, dict[str, Any]]] = []
        for unit, prepared, answer in results:
            if answer.status == ABANDONED or answer.endpoint_down or prepared.retry:
                self.finish(unit, prepared, answer)
            else:
                batch.append((unit, prepared, self._answer_record(unit, prepared, answer)))
        if not batch:
            return
        created = judgments_submit_many(
            rater=self.rater,
            answers=[
                ModelAnswer(
                    assignment=prepared.assignment,
                    value=record["value"],
                    status=record["status"],
                    provenance=record["provenance"],
                    duration_ms=record["duration_ms"],
                )
                for _, prepared, record in batch
            ],
        )
        rows = []
        for unit, prepared, record in batch:
            mine = prepared.assignment.pk in created
            rows.append(
                (
                    unit.pk,
                    unit.attempts + record["calls"],
                    prepared.assignment.pk,
                    record["status"] if mine else UnitOutcome.ALREADY,
                    record["error"] if mine else "",
                    failure_kind(record["error"]) if mine else "",
                    record["prompt_tokens"],
                    record["completion_tokens"],
                    (record["content"] or "")[:EXCERPT_CHARS],
                )
            )
        update_rows(
            JudgeUnit,
            rows,
            UNIT_RESULT_FIELDS,
            {"status": UnitStatus.DONE, "claimed_until": None, "finished_at": timezone.now()},
            # A unit another worker finished meanwhile (its lease had run out) keeps what that worker did.
            unless={"status": [UnitStatus.DONE, UnitStatus.FAILED]},
        )

    def _pause(self, unit: JudgeUnit, answer: Answer) -> None:
        """The endpoint has not answered once in this run: every unit would fail the same way, so the
        unit goes back to pending and the run pauses with the reason, for the researcher to fix and resume."""
        release_unit(unit, attempts=len(answer.attempts))
        reason = redact(failure_kind(answer.error), self._secret)
        pause_run(
            JudgeRun,
            pk=self.run.pk,
            reason=f"Paused: {reason}. Check the judge's base URL or start its server, then resume the run.",
        )
        self.stop.set()

    def _answer_record(self, unit: JudgeUnit, prepared: Prepared, answer: Answer) -> dict[str, Any]:
        """The judgment and the unit's record of one answer, as ``_record`` takes them."""
        provenance = self._provenance_base(unit, prepared.assignment)
        completion = answer.completion
        prompt_tokens, completion_tokens = answer.prompt_tokens, answer.completion_tokens
        provenance.update(
            parse={
                "status": answer.status,
                "method": answer.parsed.method if answer.parsed else "",
                "error": "" if answer.status == OK else answer.error,
            },
            structured_output=answer.structured_output,
            **({"structured_output_refused": answer.refusals} if answer.refusals else {}),
            raw_response=completion.raw if completion else "",
            content=completion.content if completion else None,
            tokens={
                "prompt": prompt_tokens,
                "completion": completion_tokens,
                "total": prompt_tokens + completion_tokens,
            },
            latency_ms=completion.latency_ms if completion else None,
            cost=_cost(self.judge, prompt_tokens, completion_tokens),
            attempts=answer.attempts,
        )
        if answer.parsed is not None:
            provenance.update(answer.parsed.extras)
        provenance = json.loads(redact(json.dumps(provenance), self._secret))
        duration = sum(a.get("latency_ms") or 0 for a in answer.attempts)
        return {
            "value": answer.parsed.value if answer.status == OK else None,
            "status": answer.status,
            "provenance": provenance,
            "duration_ms": duration,
            "error": "" if answer.status == OK else redact(answer.error, self._secret),
            "calls": len(answer.attempts),
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "content": redact(completion.content or "", self._secret) if completion else None,
        }

    def fail(self, unit: JudgeUnit, prepared: Prepared | None, error: BaseException) -> None:
        """Record the unit as a failed judgment with the (redacted) reason."""
        try:
            assignment = prepared.assignment if prepared else unit_assignment(unit=unit, run=self.run)
        except Exception as exc:  # noqa: BLE001 - without an assignment the unit itself carries the failure
            message = redact(f"{type(exc).__name__}: {exc}", self._secret)[:2000]
            complete_unit(
                unit, status=UnitStatus.FAILED, outcome=UnitOutcome.FAILED, error=message, reason=failure_kind(message)
            )
            return
        message = redact(f"{type(error).__name__}: {error}", self._secret)[:2000]
        provenance = {**self._provenance_base(unit, assignment), "error": message}
        self._record(
            unit,
            assignment,
            retry=bool(prepared and prepared.retry) or self.run.retry_of_id is not None,
            value=None,
            status=Judgment.Status.FAILED,
            provenance=provenance,
            error=message,
        )

    # -- pool threads: network only ------------------------------------------------
    def call(self, prepared: Prepared) -> Answer:
        parse = partial(
            self._parse,
            task_type=self.task_type,
            shown=prepared.shown,
            config=self.config,
            item_text=prepared.item_text,
            backend=self.backend if prepared.schema else None,
        )
        return ask(
            backend=self.backend,
            messages=prepared.messages,
            schema=prepared.schema,
            parse=parse,
            policy=self.policy,
            limiter=self.limiter,
            rng=prepared.rng,
            should_stop=self.stop.is_set,
            sleep=self.sleep,
        )

    @staticmethod
    def _parse(text, *, task_type, shown, config, item_text, backend):
        # Read the mode when the answer arrives: a refused schema steps the backend down mid-run,
        # and only an answer asked for with a schema or JSON mode counts as structured output.
        structured = backend is not None and backend.structured_mode != "off"
        return parse_answer(
            task_type=task_type,
            text=text,
            shown_order=shown,
            config=config,
            item_text=item_text,
            structured=structured,
        )
