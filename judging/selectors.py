"""Reads for the judge pages, the API and the CLI: progress and summaries, counted from rows."""

from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.access import owned_by
from annotation.models import Judgment
from ratings.pairwise import judge_consistency

from .models import PROBLEM_OUTCOMES, JudgeConfig, JudgeRun, JudgeUnit, RunStatus, UnitOutcome, UnitStatus


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
    """What this run did: its own calls, answers and tokens (a unit an earlier run had judged is
    ``already``, not judged again), counted from its units."""

    judged: int
    unparseable: int
    failed: int
    already: int
    calls: int
    tokens: int
    cost: float
    seconds: float
    position_consistency: float | None
    consistent_pairs: int
    # How the run ended, as the page says it: done, partial (some units failed), failed (none judged).
    outcome: str


def run_judgments(run: JudgeRun):
    """The judgments a run's units point at (including those an earlier run of the same judge made)."""
    return Judgment.objects.filter(assignment_id__in=run.units.exclude(assignment=None).values("assignment_id"))


def run_outcome(*, status: str, judged: int, problems: int) -> str:
    """A finished run's honest state: ``partial`` when some units failed, ``failed`` when none was judged."""
    if status != RunStatus.DONE or not problems:
        return status
    return "partial" if judged else RunStatus.FAILED


def run_progress(*, run: JudgeRun) -> RunProgress:
    units = run.units.aggregate(
        total=Count("id"),
        finished=Count("id", filter=Q(status__in=[UnitStatus.DONE, UnitStatus.FAILED])),
        pending=Count("id", filter=Q(status=UnitStatus.PENDING)),
        in_progress=Count("id", filter=Q(status=UnitStatus.CLAIMED)),
        judged=Count("id", filter=Q(outcome=UnitOutcome.OK)),
        unparseable=Count("id", filter=Q(outcome=UnitOutcome.UNPARSEABLE)),
        failed=Count("id", filter=Q(outcome=UnitOutcome.FAILED)),
        already=Count("id", filter=Q(outcome=UnitOutcome.ALREADY)),
        calls=Sum("attempts"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
    )
    prompt_tokens, completion_tokens = units["prompt_tokens"] or 0, units["completion_tokens"] or 0
    judge = run.judge
    cost = (prompt_tokens * judge.input_cost_per_million + completion_tokens * judge.output_cost_per_million) / 1e6
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
        judged=units["judged"],
        unparseable=units["unparseable"],
        failed=units["failed"],
        already=units["already"],
        calls=units["calls"] or 0,
        tokens=prompt_tokens + completion_tokens,
        cost=round(cost, 6),
        seconds=round((end - started).total_seconds(), 2) if started else 0.0,
        position_consistency=consistency,
        consistent_pairs=pairs,
        outcome=run_outcome(status=run.status, judged=units["judged"], problems=units["failed"] + units["unparseable"]),
    )


def position_consistency(*, run: JudgeRun) -> tuple[float | None, int]:
    """The judge's position consistency over this run's judgments, and how many pairs counted.

    The definition is the one every page uses (``ratings.pairwise``): each item and
    trial judged usably in both orders is a pair, consistent when both answers name
    the same candidate (or a tie both times); attention checks are left out, as on
    the alignment page and the leaderboards.
    """
    judgments = run_judgments(run).filter(item__is_attention_check=False)
    found = judge_consistency(study=run.study, judgments=judgments).get(run.judge.rater_id)
    if found is None or found.value is None:
        return None, 0
    return round(found.value, 4), found.n_pairs


def run_summary(*, run: JudgeRun) -> dict[str, Any]:
    """The CLI's final JSON: what this run did (counts, calls, tokens) and how long it took."""
    p = run_progress(run=run)
    summary = {
        "run": p.run,
        "status": p.status,
        "outcome": p.outcome,
        "judge": {"id": run.judge_id, "name": run.judge.name, "version": run.judge.version},
        "units": p.total,
        "judged": p.judged,
        "failed": p.failed,
        "unparseable": p.unparseable,
        "already": p.already,
        "calls": p.calls,
        "tokens": p.tokens,
        "cost": p.cost,
        "seconds": p.seconds,
    }
    if run.both_orders:
        summary["position_consistency"] = p.position_consistency
    return summary


def judge_versions(judge: JudgeConfig):
    """Every version of the judge's name (all its owner's), newest first."""
    return owned_by(JudgeConfig, user=judge.owner).filter(name=judge.name).order_by("-version")


def judge_version_rows(*, judge: JudgeConfig) -> list[dict[str, Any]]:
    """Every version of the judge's name, newest first, with what it was and what its rater judged."""
    versions = list(
        judge_versions(judge)
        .prefetch_related("template_pins__template")
        .annotate(
            judged=Count("rater__judgments", filter=Q(rater__judgments__status=Judgment.Status.OK)),
            problems=Count("rater__judgments", filter=~Q(rater__judgments__status=Judgment.Status.OK)),
        )
        .order_by("-version")
    )
    runs = dict(JudgeRun.objects.filter(judge__in=versions).values_list("judge_id").annotate(n=Count("id")).order_by())
    return [
        {
            "judge": version,
            "judged": version.judged,
            "problems": version.problems,
            "runs": runs.get(version.pk, 0),
            "templates": ", ".join(f"{t['name']} v{t['version']}" for t in version.templates.values()),
        }
        for version in versions
    ]


def run_failure_reasons(*, run: JudgeRun) -> list[dict[str, Any]]:
    """How many of the run's units failed or came back unparseable for each reason, most frequent first."""
    return list(
        run.units.filter(outcome__in=PROBLEM_OUTCOMES)
        .values("outcome", "reason")
        .annotate(units=Count("id"))
        .order_by("-units", "outcome", "reason")
    )


def timeout_advice(*, run: JudgeRun, reasons: list[dict[str, Any]]) -> str:
    """What to do when units failed because the endpoint answered too late ("" when none did).

    A local server that serves fewer requests at once than the judge sends queues the rest, and the
    time in its queue counts against the timeout (judging.concurrency)."""
    units = sum(r["units"] for r in reasons if r["outcome"] == UnitOutcome.FAILED and _timed_out(r["reason"]))
    if not units:
        return ""
    judge = run.judge
    return (
        f"{units} unit{'s' if units != 1 else ''} failed because the endpoint did not answer within the judge's "
        f"timeout ({judge.timeout_seconds:g} s). A server that answers fewer requests at once than the judge "
        f"sends (concurrency {judge.concurrency}) queues the others, and their wait counts: lower the judge's "
        "concurrency to what the server serves at once (a local llama.cpp server with one slot: 1), or raise "
        "the timeout, then retry the failed units."
    )


def _timed_out(reason: str) -> bool:
    return (reason or "").startswith("timed out")


class UnitRows:
    """A run's units for its per-item table, in item order, read one page at a time.

    Units are made in item order (``run_create`` inserts them by item position,
    then trial and order; a retry run copies its units in the first run's
    order; positions never change), so their ids are in item order and a page
    is an id range: its ids come from the ``(run, id)`` index alone, however
    deep the page, and only that page's rows and items are read. Sorting the
    units by their items' positions instead sorted every unit of the run for
    each page (8 s for a 1,000,000-unit run). ``total`` is the count the page
    already has from ``run_progress``, so the paginator counts nothing.
    """

    ordered = True  # for Django's paginator

    def __init__(self, *, run: JudgeRun, problems_only: bool, total: int) -> None:
        units = run.units.all()
        if problems_only:
            units = units.filter(outcome__in=PROBLEM_OUTCOMES)
        self._ids = units.order_by("pk").values_list("pk", flat=True)
        self._total = total

    def count(self) -> int:
        return self._total

    def __len__(self) -> int:
        return self._total

    def __getitem__(self, page: slice):
        # One query, run only when the table is shown (an htmx poll of the progress part never reads it).
        return (
            JudgeUnit.objects.filter(pk__in=self._ids[page])
            .select_related("item")
            .order_by("pk")
            .only(
                "item",
                "item__external_id",
                "item__text",
                "trial",
                "swapped",
                "status",
                "outcome",
                "reason",
                "error",
                "answer_excerpt",
                "attempts",
            )
        )


def run_unit_rows(*, run: JudgeRun, progress: RunProgress, problems_only: bool = False) -> UnitRows:
    """The run's units for its per-item table (item, trial, order, outcome, reason, answer), counted by ``progress``."""
    total = progress.failed + progress.unparseable if problems_only else progress.total
    return UnitRows(run=run, problems_only=problems_only, total=total)
