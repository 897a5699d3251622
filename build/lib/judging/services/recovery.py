"""Hand work whose worker died, or whose task the broker lost, to another worker.

A queued or running judge run, generation run or tournament moves only while
some worker holds a task for it. The worker driving it renews the run's
heartbeat (``judging.runner.run_heartbeat``) every third of the lease
(``FUNNYBONE_RUN_LEASE_SECONDS``); a worker killed mid-run stops beating, and
if the broker loses a queued message nothing beats at all. Every worker calls
``stalled_work_requeue`` when it starts and every half lease after (see
``judging.tasks``), so a dead worker's run is queued again within about one
and a half leases of its last beat. Work counts as stalled when none of its
units holds a live lease and its last sign of life (created, started, a
heartbeat, a unit finished) is older than the lease.

Queueing again stamps the heartbeat with a conditional update, so several
workers checking at once queue one task, and a run waiting for a busy worker
is queued again only once per lease. A duplicate task is harmless anyway:
units are claimed under leases, so it only works what is left, and a task for
finished work returns at once.
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
        "created_at",
        Coalesce("started_at", "created_at"),
        Coalesce("heartbeat_at", "created_at"),
        Coalesce(Max("units__finished_at"), "created_at"),
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
        .annotate(
            last_step=Greatest(
                "created_at", Coalesce("heartbeat_at", "created_at"), Coalesce(Max("units__finished_at"), "created_at")
            )
        )
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
        .exclude(heartbeat_at__gte=cutoff)
        .exclude(Exists(leased))
        .exclude(Exists(recent_round))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _hand_out(model, pks: list[int], *, now: datetime, stale_after: float) -> list[int]:
    """Stamp each stalled row's heartbeat, keeping those this check stamped (a concurrent check got the others)."""
    silent = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=now - timedelta(seconds=stale_after))
    return [
        pk for pk in pks if model.objects.filter(silent, pk=pk, status__in=ACTIVE_RUN_STATES).update(heartbeat_at=now)
    ]


def stalled_work_requeue(*, now: datetime | None = None, stale_after: float | None = None) -> Requeued:
    """Queue a task again for every stalled run and tournament; returns what was queued."""
    from ..tasks import generation_run_task, judge_run_task, tournament_task

    now = now or timezone.now()
    stale_after = LEASE_SECONDS if stale_after is None else stale_after
    found = Requeued()
    with transaction.atomic():
        for task, model, stalled, ids in (
            (judge_run_task, JudgeRun, stalled_judge_runs, found.judge_runs),
            (generation_run_task, GenerationRun, stalled_generation_runs, found.generation_runs),
            (tournament_task, Tournament, stalled_tournaments, found.tournaments),
        ):
            candidates = stalled(now=now, stale_after=stale_after)
            ids.extend(_hand_out(model, candidates, now=now, stale_after=stale_after))
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
