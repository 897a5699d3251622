"""Re-queue work whose task the broker lost, with no extra server.

A queued or running judge run, generation run or tournament moves only while
some worker holds a task for it. If the broker loses that message (a restart
without persistence, a purged queue), nothing else re-queues it: only the
Resume button did. A worker calls ``stalled_work_requeue`` when it starts and
every few minutes after (see ``judging.tasks``). Work counts as stalled when
none of its units holds a live lease and nothing about it (created, started,
a unit finished) happened for longer than the lease. Re-queueing is safe to
repeat: units are claimed under leases, so a duplicate task only works what
is left, and a task for finished work returns at once.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from ..models import ACTIVE_RUN_STATES, GenerationRun, GenerationUnit, JudgeRun, JudgeUnit, Tournament, UnitStatus
from ..runner import LEASE_SECONDS

logger = logging.getLogger(__name__)


@dataclass
class Requeued:
    judge_runs: list[int] = field(default_factory=list)
    generation_runs: list[int] = field(default_factory=list)
    tournaments: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.judge_runs or self.generation_runs or self.tournaments)


def _live_lease(unit_model, now: datetime, **outer: str) -> Exists:
    return Exists(
        unit_model.objects.filter(
            status=UnitStatus.CLAIMED, claimed_until__gt=now, **{k: OuterRef(v) for k, v in outer.items()}
        )
    )


def stalled_judge_runs(*, now: datetime, stale_after: float) -> list[int]:
    """Active runs outside tournaments (a tournament's task drives its rounds) with no live lease and no recent step."""
    last_step = Greatest(
        "created_at", Coalesce("started_at", "created_at"), Coalesce(Max("units__finished_at"), "created_at")
    )
    return list(
        JudgeRun.objects.filter(status__in=ACTIVE_RUN_STATES, tournament=None)
        .exclude(_live_lease(JudgeUnit, now, run_id="pk"))
        .annotate(last_step=last_step)
        .filter(last_step__lt=now - timedelta(seconds=stale_after))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def stalled_generation_runs(*, now: datetime, stale_after: float) -> list[int]:
    return list(
        GenerationRun.objects.filter(status__in=ACTIVE_RUN_STATES)
        .exclude(_live_lease(GenerationUnit, now, run_id="pk"))
        .annotate(last_step=Greatest("created_at", Coalesce(Max("units__finished_at"), "created_at")))
        .filter(last_step__lt=now - timedelta(seconds=stale_after))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def stalled_tournaments(*, now: datetime, stale_after: float) -> list[int]:
    """Active tournaments none of whose rounds holds a live lease or moved lately (a new round counts)."""
    rounds = JudgeRun.objects.filter(tournament=OuterRef("pk"))
    leased = JudgeUnit.objects.filter(run__tournament=OuterRef("pk"), status=UnitStatus.CLAIMED, claimed_until__gt=now)
    cutoff = now - timedelta(seconds=stale_after)
    recent_round = rounds.filter(
        Q(created_at__gte=cutoff) | Q(started_at__gte=cutoff) | Q(units__finished_at__gte=cutoff)
    )
    return list(
        Tournament.objects.filter(status__in=ACTIVE_RUN_STATES, created_at__lt=cutoff)
        .exclude(Exists(leased))
        .exclude(Exists(recent_round))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def stalled_work_requeue(*, now: datetime | None = None, stale_after: float = LEASE_SECONDS) -> Requeued:
    """Queue a task again for every stalled run and tournament; returns what was queued."""
    from ..tasks import generation_run_task, judge_run_task, tournament_task

    now = now or timezone.now()
    found = Requeued(
        judge_runs=stalled_judge_runs(now=now, stale_after=stale_after),
        generation_runs=stalled_generation_runs(now=now, stale_after=stale_after),
        tournaments=stalled_tournaments(now=now, stale_after=stale_after),
    )
    with transaction.atomic():
        for task, ids in (
            (judge_run_task, found.judge_runs),
            (generation_run_task, found.generation_runs),
            (tournament_task, found.tournaments),
        ):
            for pk in ids:
                transaction.on_commit(lambda task=task, pk=pk: task.delay(pk))
    if found:
        logger.warning(
            "re-queued stalled work: judge runs %s, generation runs %s, tournaments %s",
            found.judge_runs,
            found.generation_runs,
            found.tournaments,
        )
    return found
