"""Reads for the judge pages, the API and the CLI: progress and summaries, counted from rows."""

from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Count, IntegerField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from annotation.models import Judgment

from .models import JudgeConfig, JudgeRun, JudgeUnit, UnitStatus


def judge_prices(rater_ids: list[int]) -> dict[int, tuple[float, float]]:
    """Per judge rater: its configured (input, output) price per million tokens (for ratings' cost columns)."""
    return {
        rater_id: (inp, out)
        for rater_id, inp, out in JudgeConfig.objects.filter(rater_id__in=rater_ids).values_list(
            "rater_id", "input_cost_per_million", "output_cost_per_million"
        )
    }


@dataclass(frozen=True)
class Progress:
    """How far a run is; judge runs and generation runs add their own counts."""

    run: int
    status: str
    total: int
    finished: int
    pending: int
    in_progress: int

    @property
    def percent(self) -> int:
        return int(100 * self.finished / self.total) if self.total else 100

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "percent": self.percent}


@dataclass(frozen=True)
class RunProgress(Progress):
    judged: int
    unparseable: int
    failed: int
    tokens: int
    cost: float
    seconds: float
    position_consistency: float | None
    consistent_pairs: int


def run_judgments(run: JudgeRun):
    """The judgments a run's units point at (including those an earlier run of the same judge made)."""
    return Judgment.objects.filter(assignment_id__in=run.units.exclude(assignment=None).values("assignment_id"))


def run_progress(*, run: JudgeRun) -> RunProgress:
    units = run.units.aggregate(
        total=Count("id"),
        finished=Count("id", filter=Q(status__in=[UnitStatus.DONE, UnitStatus.FAILED])),
        unit_failed=Count("id", filter=Q(status=UnitStatus.FAILED)),
        pending=Count("id", filter=Q(status=UnitStatus.PENDING)),
        in_progress=Count("id", filter=Q(status=UnitStatus.CLAIMED)),
    )
    done_judgments = run_judgments(run).filter(
        assignment_id__in=run.units.filter(status=UnitStatus.DONE).values("assignment_id")
    )
    outcome = done_judgments.aggregate(
        judged=Count("id", filter=Q(status=Judgment.Status.OK)),
        unparseable=Count("id", filter=Q(status=Judgment.Status.UNPARSEABLE)),
        failed=Count("id", filter=Q(status=Judgment.Status.FAILED)),
        tokens=Sum(Cast(KT("provenance__tokens__total"), IntegerField())),
    )
    costs = done_judgments.exclude(provenance__cost=None).values_list("provenance__cost", flat=True)
    started = run.started_at
    end = run.finished_at or timezone.now()
    consistency, pairs = position_consistency(run=run) if run.both_orders else (None, 0)
    return RunProgress(
        run=run.pk,
        status=run.status,
        total=units["total"],
        finished=units["finished"],
        pending=units["pending"],
        in_progress=units["in_progress"],
        judged=outcome["judged"],
        unparseable=outcome["unparseable"],
        failed=outcome["failed"] + units["unit_failed"],
        tokens=outcome["tokens"] or 0,
        cost=round(sum(float(c) for c in costs if isinstance(c, (int, float))), 6),
        seconds=round((end - started).total_seconds(), 2) if started else 0.0,
        position_consistency=consistency,
        consistent_pairs=pairs,
    )


def position_consistency(*, run: JudgeRun) -> tuple[float | None, int]:
    """Share of (item, trial) pairs judged in both orders whose verdicts agree, and how many pairs counted.

    Only pairs where both orders gave a usable answer count. Agreement means the
    same candidate (or a tie both times), whichever side it was shown on.
    """
    rows = JudgeUnit.objects.filter(run=run, status=UnitStatus.DONE).values_list(
        "item_id", "trial", "swapped", "assignment__judgment__status", "assignment__judgment__value"
    )
    verdicts: dict[tuple[int, int], dict[bool, Any]] = {}
    for item_id, trial, swapped, status, value in rows:
        if status == Judgment.Status.OK and value:
            verdicts.setdefault((item_id, trial), {})[swapped] = value.get("choice")
    both = [v for v in verdicts.values() if len(v) == 2]
    if not both:
        return None, 0
    agree = sum(1 for v in both if v[False] == v[True])
    return round(agree / len(both), 4), len(both)


def run_summary(*, run: JudgeRun) -> dict[str, Any]:
    """The CLI's final JSON: counts, tokens and time."""
    p = run_progress(run=run)
    summary = {
        "run": p.run,
        "status": p.status,
        "units": p.total,
        "judged": p.judged,
        "failed": p.failed,
        "unparseable": p.unparseable,
        "tokens": p.tokens,
        "cost": p.cost,
        "seconds": p.seconds,
    }
    if run.both_orders:
        summary["position_consistency"] = p.position_consistency
    return summary
