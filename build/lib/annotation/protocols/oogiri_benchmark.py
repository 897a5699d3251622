"""From an OOGIRI voting study to the five benchmark studies: vote totals, the filter, the selection.

Totals add the votes cast here (OK judgments of human voters) to the totals a
file imported (``Candidate.provenance["imported_votes"]``), so a study that was
voted on here, imported whole, or both gives the same kind of answer. Prompts
with fewer than ``min_total_votes`` votes are left out; of the rest the three
most-voted answers are "high" and the three least-voted "low". Ties are broken
by the order the responses were listed in, so a selection never changes between
two runs.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import Candidate, Item, Judgment, Rater, Study
from ..services.studies import CandidateSpec, ItemSpec, items_create
from .base import study_from_template
from .oogiri import (
    BINARY_TASK,
    DEFAULT_MIN_TOTAL_VOTES,
    IMPORTED_VOTES,
    TASK_OPTIONS,
    TASK_TITLES,
    TASKS,
    VOTING,
    task_of,
)

HUMAN_KINDS = (Rater.Kind.EXPERT, Rater.Kind.CROWD)


@dataclass(frozen=True)
class Response:
    key: str
    text: str
    votes: int


@dataclass
class PromptVotes:
    """One prompt of a voting study with its responses' vote totals, in listed order."""

    item_id: int
    prompt_id: str
    prompt: str
    responses: list[Response]
    voters: int  # voters who voted here (imported totals name no voters)

    @property
    def total(self) -> int:
        return sum(r.votes for r in self.responses)


@dataclass
class PromptSelection:
    prompt: PromptVotes
    high: list[Response]
    low: list[Response]


@dataclass
class Selection:
    min_total_votes: int
    top: int
    bottom: int
    kept: list[PromptSelection] = field(default_factory=list)
    # (prompt, why it was left out)
    excluded: list[tuple[PromptVotes, str]] = field(default_factory=list)


def prompt_votes(*, study: Study) -> list[PromptVotes]:
    """Every prompt of a voting study with each response's total votes."""
    counted: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    voters: dict[int, set[int]] = defaultdict(set)
    rows = Judgment.objects.filter(
        study=study, status=Judgment.Status.OK, rater__kind__in=HUMAN_KINDS, item__is_attention_check=False
    ).values_list("item_id", "rater_id", "value")
    for item_id, rater_id, value in rows.iterator():
        votes = (value or {}).get("votes") or {}
        for key, count in votes.items():
            counted[item_id][key] += int(count)
        voters[item_id].add(rater_id)
    candidates: dict[int, list[Candidate]] = defaultdict(list)
    for candidate in Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id"):
        candidates[candidate.item_id].append(candidate)
    prompts = []
    for item in Item.objects.filter(study=study, is_attention_check=False).order_by("position", "id"):
        responses = [
            Response(
                key=c.key,
                text=c.text,
                votes=counted[item.pk][c.key] + int((c.provenance or {}).get(IMPORTED_VOTES) or 0),
            )
            for c in candidates[item.pk]
        ]
        prompts.append(
            PromptVotes(
                item_id=item.pk,
                prompt_id=item.external_id,
                prompt=item.prompt or item.text,
                responses=responses,
                voters=len(voters[item.pk]),
            )
        )
    return prompts


def select_responses(
    *, study: Study, min_total_votes: int = DEFAULT_MIN_TOTAL_VOTES, top: int = 3, bottom: int = 3
) -> Selection:
    """Apply the minimum-total-votes filter and take each kept prompt's top and bottom responses."""
    selection = Selection(min_total_votes=min_total_votes, top=top, bottom=bottom)
    for prompt in prompt_votes(study=study):
        if prompt.total < min_total_votes:
            selection.excluded.append((prompt, f"{prompt.total} votes, fewer than {min_total_votes}"))
            continue
        if len(prompt.responses) < top + bottom:
            selection.excluded.append((prompt, f"only {len(prompt.responses)} responses, fewer than {top + bottom}"))
            continue
        listed = {r.key: i for i, r in enumerate(prompt.responses)}
        ranked = sorted(prompt.responses, key=lambda r: (-r.votes, listed[r.key]))
        high = ranked[:top]
        low = sorted(ranked[len(ranked) - bottom :], key=lambda r: (r.votes, listed[r.key]))
        if min(h.votes for h in high) <= max(lo.votes for lo in low):
            selection.excluded.append((prompt, "its top and bottom responses have the same number of votes"))
            continue
        selection.kept.append(PromptSelection(prompt=prompt, high=high, low=low))
    return selection


# -- building the benchmark studies ------------------------------------------------------------------


def _key(prompt: PromptVotes, response: Response) -> str:
    return f"{prompt.prompt_id}/{response.key}"[:100]


def _candidate(prompt: PromptVotes, response: Response, role: str) -> CandidateSpec:
    provenance = {"role": role, "prompt_id": prompt.prompt_id, "response_id": response.key, "votes": response.votes}
    return CandidateSpec(key=_key(prompt, response), text=response.text, provenance=provenance)


def _task_items(
    task: str, chosen: list[PromptSelection], everyone: list[PromptSelection], rng: random.Random, source: str
) -> list[ItemSpec]:
    items: list[ItemSpec] = []
    for selected in chosen:
        prompt = selected.prompt
        high, low = rng.choice(selected.high), rng.choice(selected.low)
        meta = {"task": task, "source_study": source, "source_prompt": prompt.prompt_id}
        if task == BINARY_TASK:
            for role, response, label in (("high", high, "funny"), ("low", low, "not_funny")):
                items.append(
                    ItemSpec(
                        external_id=f"{prompt.prompt_id}-{role}",
                        prompt=prompt.prompt,
                        text=response.text,
                        gold={"label": label},
                        metadata={**meta, "role": role, "response_id": response.key, "votes": response.votes},
                    )
                )
            continue
        others = [s for s in everyone if s is not selected]
        n_other = {"same": 0, "diff": 1, "triple": 1, "quad": 2}[task]
        if len(others) < n_other:
            continue
        options = [_candidate(prompt, high, "high")]
        if task != "diff":
            options.append(_candidate(prompt, low, "low"))
        for other in rng.sample(others, n_other):
            options.append(_candidate(other.prompt, rng.choice(other.high), "other_high"))
        rng.shuffle(options)
        items.append(
            ItemSpec(
                external_id=f"{prompt.prompt_id}-{task}",
                prompt=prompt.prompt,
                candidates=options,
                gold={"choice": _key(prompt, high)},
                metadata=meta,
            )
        )
    return items


def _attention_checks(task: str) -> list[ItemSpec]:
    """Items with one unmistakable answer: the screen says what to press."""
    meta = {"task": task, "attention_check": True}
    if task == BINARY_TASK:
        return [
            ItemSpec(
                external_id=f"check-{label}",
                prompt="Attention check.",
                text=f"Please answer “{word}” on this screen, whatever you think of it.",
                gold={"label": label},
                is_attention_check=True,
                metadata=meta,
            )
            for label, word in (("funny", "Funny"), ("not_funny", "Not funny"))
        ]
    n = TASK_OPTIONS[task]
    checks = []
    for pick in range(min(2, n)):
        options = [
            CandidateSpec(key=f"check-{i}", text="Pick this answer." if i == pick else "Do not pick this answer.")
            for i in range(n)
        ]
        checks.append(
            ItemSpec(
                external_id=f"check-{pick + 1}",
                prompt="Attention check: pick the answer that asks to be picked.",
                candidates=options,
                gold={"choice": f"check-{pick}"},
                is_attention_check=True,
                metadata=meta,
            )
        )
    return checks


def benchmark_tasks_build(
    *,
    study: Study,
    owner: AbstractBaseUser,
    min_total_votes: int | None = None,
    per_task: int | None = None,
    seed: int = 0,
    tasks: list[str] | None = None,
    attention_checks: bool = True,
) -> dict[str, Study]:
    """Create the benchmark studies (drafts with gold answers, options shuffled with ``seed``).

    ``per_task`` prompts are drawn for each task (the binary task gets two items
    per prompt: one high, one low response). Settings come from the voting
    template's ``analyses`` unless given.
    """
    if study.protocol != VOTING:
        raise ValidationError("Benchmark tasks are built from an OOGIRI voting study.")
    from .base import get_template

    preset: dict[str, Any] = get_template(VOTING).analyses
    min_total_votes = preset["min_total_votes"] if min_total_votes is None else min_total_votes
    per_task = preset["per_task"] if per_task is None else per_task
    selection = select_responses(
        study=study, min_total_votes=min_total_votes, top=preset["top"], bottom=preset["bottom"]
    )
    if not selection.kept:
        raise ValidationError(
            f"No prompt has at least {min_total_votes} votes and distinct top and bottom responses; "
            "nothing to build the tasks from."
        )
    unknown = set(tasks or []) - set(TASKS)
    if unknown:
        raise ValidationError(f"Unknown task(s) {', '.join(sorted(unknown))}; the tasks are {', '.join(TASKS)}.")
    built: dict[str, Study] = {}
    with transaction.atomic():
        for offset, task in enumerate(tasks or list(TASKS)):
            rng = random.Random(seed * 100 + offset)
            chosen = rng.sample(selection.kept, min(per_task, len(selection.kept)))
            items = _task_items(task, chosen, selection.kept, rng, study.slug)
            if not items:
                continue
            benchmark = study_from_template(
                owner=owner, template=TASKS[task], name=f"{study.name} — {TASK_TITLES[task]}"
            )
            items_create(study=benchmark, items=items + (_attention_checks(task) if attention_checks else []))
            built[task] = benchmark
    return built


def sibling_tasks(*, study: Study) -> dict[str, Study]:
    """The benchmark studies built from the same voting study (or from this one), newest per task."""
    source = study.slug if study.protocol == VOTING else None
    if source is None:
        first = Item.objects.filter(study=study, metadata__source_study__isnull=False).values("metadata").first()
        source = (first or {}).get("metadata", {}).get("source_study")
    if not source:
        return {task_of(study): study} if study.protocol in TASKS.values() else {}
    found: dict[str, Study] = {}
    ids = Item.objects.filter(metadata__source_study=source).values("study_id").distinct()
    for other in Study.objects.filter(pk__in=ids, protocol__in=TASKS.values()).order_by("created_at", "pk"):
        found[task_of(other)] = other
    return {task: found[task] for task in TASKS if task in found}
