"""Reads about candidate generation for the pages, the API and the CLI, counted from rows."""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, IntegerField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from annotation.models import Candidate

from .models import GenerationRun, UnitStatus
from .selectors import Progress


@dataclass(frozen=True)
class GenerationProgress(Progress):
    generated: int
    failed: int
    truncated: int
    tokens: int
    seconds: float
    per_generator: list[dict[str, Any]] = field(default_factory=list)


#: A candidate the model stopped writing because it reached max_tokens (see ``is_truncated``).
TRUNCATED = Q(provenance__truncated=True)


def generation_candidates(*, run: GenerationRun):
    """The candidates this run wrote (not those an earlier run had written already)."""
    return Candidate.objects.filter(item__study_id=run.study_id, provenance__generation_run=run.pk)


def generation_progress(*, run: GenerationRun) -> GenerationProgress:
    done, failed = Q(status=UnitStatus.DONE), Q(status=UnitStatus.FAILED)
    units = run.units.aggregate(
        total=Count("id"),
        generated=Count("id", filter=done),
        failed=Count("id", filter=failed),
        pending=Count("id", filter=Q(status=UnitStatus.PENDING)),
        in_progress=Count("id", filter=Q(status=UnitStatus.CLAIMED)),
    )
    per_generator = list(
        run.units.values("generator__name")
        .annotate(total=Count("id"), generated=Count("id", filter=done), failed=Count("id", filter=failed))
        .order_by("generator__name")
    )
    written = generation_candidates(run=run)
    tokens = written.aggregate(
        prompt=Sum(Cast(KT("provenance__tokens__prompt"), IntegerField())),
        completion=Sum(Cast(KT("provenance__tokens__completion"), IntegerField())),
        truncated=Count("id", filter=TRUNCATED),
    )
    truncated_by = dict(written.filter(TRUNCATED).values_list("key").annotate(n=Count("id")).values_list("key", "n"))
    end = run.finished_at or timezone.now()
    return GenerationProgress(
        run=run.pk,
        status=run.status,
        total=units["total"],
        finished=units["generated"] + units["failed"],
        pending=units["pending"],
        in_progress=units["in_progress"],
        generated=units["generated"],
        failed=units["failed"],
        truncated=tokens["truncated"],
        tokens=(tokens["prompt"] or 0) + (tokens["completion"] or 0),
        seconds=round((end - run.created_at).total_seconds(), 2),
        per_generator=[
            {
                "generator": row["generator__name"],
                **{k: row[k] for k in ("total", "generated", "failed")},
                "truncated": truncated_by.get(row["generator__name"], 0),
            }
            for row in per_generator
        ],
    )


def truncated_candidates(*, run: GenerationRun, limit: int = 20) -> list[Candidate]:
    """The first ``limit`` candidates of this run that the model cut off at max_tokens, for the run page."""
    return list(generation_candidates(run=run).filter(TRUNCATED).select_related("item").order_by("pk")[:limit])


def generation_summary(*, run: GenerationRun) -> dict[str, Any]:
    """The CLI's final JSON line."""
    p = generation_progress(run=run)
    return {
        "run": p.run,
        "status": p.status,
        "units": p.total,
        "generated": p.generated,
        "failed": p.failed,
        "truncated": p.truncated,
        "tokens": p.tokens,
        "seconds": p.seconds,
    }
