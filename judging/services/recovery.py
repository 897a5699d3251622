"""Hand work whose worker died, or whose task the broker lost, to another worker.

A queued or running judge run, generation run or tournament moves only while
some worker holds a task for it. The worker driving it renews the run's
heartbeat (``annotation.jobs.heartbeat``, started by the one building block
``annotation.job_tasks.job_run``) every ``FUNNYBONE_JOB_HEARTBEAT_SECONDS``;
a worker killed mid-run stops beating, and if the broker loses a queued
message nothing beats at all. Each kind's ``*_recover`` below is its
``JobKind.recover``, so the one recovery loop every worker runs at start and
every half lease (``annotation.tasks.recover_stale_jobs_task``), and once more
just after a silent run's lease runs out (``*_expiry`` below), queues a dead
worker's run again about one lease after its last beat. Work counts as stalled when none of its
units holds a live lease and its last sign of life (created, started, a
heartbeat, a unit finished) is older than the lease.

Queueing again stamps the heartbeat with a conditional update, so several
workers checking at once queue one task, and a run waiting for a busy worker
is queued again only once per lease. A duplicate task is harmless anyway:
units are claimed under leases, so it only works what is left, and a task for
finished work returns at once.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from annotation.jobs import Recovered, lease_seconds

from ..models import ACTIVE_RUN_STATES, GenerationRun, GenerationUnit, JudgeRun, JudgeUnit, Tournament, UnitStatus

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


def _judge_runs_last_step():
    """Active runs outside tournaments (a tournament's task drives its rounds), with their last sign of life."""
    return JudgeRun.objects.filter(status__in=ACTIVE_RUN_STATES, tournament=None).annotate(
        last_step=Greatest(
            "created_at",
            Coalesce("started_at", "created_at"),
            Coalesce("heartbeat_at", "created_at"),
            Coalesce(Max("units__finished_at"), "created_at"),
        )
    )


def _generation_runs_last_step():
    return GenerationRun.objects.filter(status__in=ACTIVE_RUN_STATES).annotate(
        last_step=Greatest(
            "created_at", Coalesce("heartbeat_at", "created_at"), Coalesce(Max("units__finished_at"), "created_at")
        )
    )


def stalled_judge_runs(*, now: datetime, stale_after: float) -> list[int]:
    """Active runs outside tournaments with no live lease and no recent step."""
    return list(
        _judge_runs_last_step()
        .exclude(_live_lease(JudgeUnit, now, run_id="pk"))
        .filter(last_step__lt=now - timedelta(seconds=stale_after))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def stalled_generation_runs(*, now: datetime, stale_after: float) -> list[int]:
    return list(
        _generation_runs_last_step()
        .exclude(_live_lease(GenerationUnit, now, run_id="pk"))
        .filter(last_step__lt=now - timedelta(seconds=stale_after))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _soonest_stall(runs, unit_model, *, lease: float | None) -> datetime | None:
    """When the first of ``runs`` becomes stalled if nobody works it from now on: its last step plus the
    lease, or its units' last lease, whichever is later (the rule of ``stalled_*`` above, read ahead)."""
    lease = lease_seconds() if lease is None else lease
    leased = unit_model.objects.filter(run_id=OuterRef("pk"), status=UnitStatus.CLAIMED).order_by("-claimed_until")
    expiries = [
        max(last_step + timedelta(seconds=lease), leased_until or last_step)
        for last_step, leased_until in runs.annotate(
            leased_until=Subquery(leased.values("claimed_until")[:1])
        ).values_list("last_step", "leased_until")
    ]
    return min(expiries, default=None)


def judge_runs_expiry(*, lease: float | None = None) -> datetime | None:
    return _soonest_stall(_judge_runs_last_step(), JudgeUnit, lease=lease)


def generation_runs_expiry(*, lease: float | None = None) -> datetime | None:
    return _soonest_stall(_generation_runs_last_step(), GenerationUnit, lease=lease)


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


def _requeue(
    model,
    stalled: Callable[..., list[int]],
    enqueue: Callable[[int], None],
    *,
    now: datetime | None,
    stale_after: float | None,
) -> Recovered:
    """Queue a task again (``enqueue(pk)`` after commit) for each stalled row this check stamps."""
    now = now or timezone.now()
    stale_after = lease_seconds() if stale_after is None else stale_after
    found = Recovered()
    with transaction.atomic():
        found.requeued = _hand_out(model, stalled(now=now, stale_after=stale_after), now=now, stale_after=stale_after)
        for pk in found.requeued:
            transaction.on_commit(lambda pk=pk: enqueue(pk))
    if found:
        logger.warning("re-queued stalled %s %s", model.__name__, found.requeued)
    return found


def judge_runs_recover(*, now: datetime | None = None, stale_after: float | None = None) -> Recovered:
    from ..tasks import judge_run_task

    return _requeue(JudgeRun, stalled_judge_runs, judge_run_task.delay, now=now, stale_after=stale_after)


def generation_runs_recover(*, now: datetime | None = None, stale_after: float | None = None) -> Recovered:
    from ..tasks import generation_run_task

    return _requeue(GenerationRun, stalled_generation_runs, generation_run_task.delay, now=now, stale_after=stale_after)


def tournaments_recover(*, now: datetime | None = None, stale_after: float | None = None) -> Recovered:
    from ..tasks import tournament_task

    return _requeue(Tournament, stalled_tournaments, tournament_task.delay, now=now, stale_after=stale_after)


def stalled_work_requeue(*, now: datetime | None = None, stale_after: float | None = None) -> Requeued:
    """Recover the three driven kinds at once; returns what was queued (no attempt limit: Cancel stops a run)."""
    return Requeued(
        judge_runs=judge_runs_recover(now=now, stale_after=stale_after).requeued,
        generation_runs=generation_runs_recover(now=now, stale_after=stale_after).requeued,
        tournaments=tournaments_recover(now=now, stale_after=stale_after).requeued,
    )
