"""A judge's "Test connection": one real question about a sample item, through everything a run uses.

The call goes through the judge's backend (``backends.chat.ChatBackend``, with its
outbound guard), the retry rule (``retry.ask``, with no retries and the judge's
timeout) and the answer reader (``parsing.parse_answer``), with the prompt its
template gives for the task type asked. Nothing is stored: no run, assignment or
judgment. The researcher sees the raw answer, how it was read, or why it failed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from annotation.task_types import get_task_type

from ..backends.chat import CallError, ChatBackend
from ..keys import ApiKeyUnavailable, redact, resolve_api_key
from ..limits import LocalLimits
from ..models import JudgeConfig
from ..outbound import OutboundRefused, refusal_in, unreachable_in
from ..parsing import parse_answer
from ..prompts import CandidateView, build_context, default_schema, render_messages
from ..retry import OK, RetryPolicy, ask
from .templates import judge_template

#: The longest a test may wait for its one answer, whatever the judge's own timeout (seconds).
TEST_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class _SampleItem:
    prompt: str
    text: str


@dataclass
class ConnectionResult:
    ok: bool
    task_type: str
    raw: str = ""
    value: Any = None
    method: str = ""
    parse_error: str = ""
    error: str = ""
    latency_ms: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


def test_connection(*, judge: JudgeConfig, task_type: str) -> ConnectionResult:
    """Ask ``judge`` once about a sample item of ``task_type``; never raises for an endpoint's failure."""
    kind = get_task_type(task_type)
    config = kind.config(kind.default_config)
    prompt, text, candidate_texts = kind.sample_item()
    keys = [f"c{i}" for i in range(len(candidate_texts))]
    candidates = [CandidateView(key, candidate, "") for key, candidate in zip(keys, candidate_texts, strict=True)]
    template = judge_template(judge=judge, task_type=task_type)
    context = build_context(item=_SampleItem(prompt, text), candidates=candidates, config=config, task_type=task_type)
    messages = render_messages(system=template.system_text, user=template.user_text, context=context)
    schema = template.response_schema or default_schema(
        task_type=task_type, config=config, n_candidates=len(keys), item_text=text
    )
    secret = ""
    try:
        secret = resolve_api_key(judge)
        backend = ChatBackend(
            base_url=judge.base_url,
            api_key=secret,
            model=judge.model,
            temperature=judge.temperature,
            max_tokens=judge.max_tokens,
            timeout=min(judge.timeout_seconds, TEST_TIMEOUT_SECONDS),
            structured_output=judge.structured_output,
            concurrency=1,
        )
    except (OutboundRefused, ValidationError, CallError, ApiKeyUnavailable) as exc:
        message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        return ConnectionResult(False, task_type, error=redact(message, secret))
    try:
        answer = ask(
            backend=backend,
            messages=messages,
            schema=schema,
            parse=lambda raw: parse_answer(
                task_type=task_type,
                text=raw,
                shown_order=keys,
                config=config,
                structured=backend.structured_mode != "off",
            ),
            # One call: no retries and no time budget for trying again.
            policy=RetryPolicy(max_retries=0, base_seconds=0.0, max_elapsed_seconds=0.0),
            limiter=LocalLimits(concurrency=1, per_minute=0),
            rng=random.Random(0),
        )
    except Exception as exc:  # noqa: BLE001 - anything the endpoint or the SDK throws is the test's answer
        refused, unreachable = refusal_in(exc), unreachable_in(exc)
        message = str(refused) if refused else unreachable or f"{type(exc).__name__}: {exc}"
        return ConnectionResult(False, task_type, error=redact(message, secret))
    finally:
        backend.close()
    completion = answer.completion
    parsed = answer.parsed
    result = ConnectionResult(
        ok=answer.status == OK,
        task_type=task_type,
        raw=redact(completion.content or "", secret) if completion else "",
        latency_ms=completion.latency_ms if completion else None,
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
        error=redact(answer.error, secret),
    )
    if parsed is not None:
        result.value, result.method, result.parse_error = parsed.value, parsed.method or "", parsed.error or ""
    return result
