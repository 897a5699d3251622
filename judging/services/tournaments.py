"""HumorRank tournaments stored in the database.

The source study holds the prompts, each with one candidate per contestant
(candidate key = contestant name). The tournament owns a pairwise "match
study": every scheduled match is one of its items (the prompt and the two
contestants' candidates), judged by the tournament's judge through an
ordinary judge run. Rounds are therefore resumable like any run: the task
first finishes an unfinished round, then schedules the next from the verdicts
stored so far, until the budget is spent.

The budget counts judge calls, not matches: a judge that judges both orders
(A/B and B/A) or several trials spends that many calls on each match, so the
tournament schedules ``budget // calls_per_match`` matches.
"""

import random

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.job_tasks import JobKind, job_kind_register, job_run
from annotation.models import Item, Judgment, Study
from annotation.protocols import humorrank, study_from_template
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from ratings.leaderboards import judge_verdicts
from ratings.stats.leaderboard import MatchVerdict

from ..models import ACTIVE_RUN_STATES, JudgeConfig, JudgeRun, JudgeUnit, RunStatus, Tournament
from ..rankings import current_ratings
from ..runner import unfinished
from ..tournament import Schedule, round_robin, swiss_round
from .recovery import tournaments_recover
from .runs import process_run, run_create


def _contestants(source: Study) -> tuple[list[str], list[Item]]:
    prompts = list(
        source.items.filter(is_attention_check=False).prefetch_related("candidates").order_by("position", "pk")
    )
    names = sorted({c.key for item in prompts for c in item.candidates.all()})
    return names, prompts


def calls_per_match(judge: JudgeConfig) -> int:
    """Judge calls one match costs: one per trial, twice over when both orders are judged."""
    return judge.trials * (2 if judge.both_orders else 1)


def match_budget(tournament: Tournament) -> int | None:
    """The most matches the tournament's call budget pays for (None: no budget)."""
    if tournament.budget is None:
        return None
    return tournament.budget // calls_per_match(tournament.judge)


def tournament_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    source_study: Study,
    judge: JudgeConfig,
    schedule: str = Tournament.Schedule.ROUND_ROBIN,
    budget: int | None = None,
    seed: int = 0,
    enqueue: bool = True,
) -> Tournament:
    if schedule not in Tournament.Schedule.values:
        raise ValidationError(f"Unknown schedule {schedule!r}.")
    names, prompts = _contestants(source_study)
    if len(names) < 2 or not prompts:
        raise ValidationError("A tournament needs prompts with candidates from at least two contestants.")
    cost = calls_per_match(judge)
    if budget is not None and budget < cost:
        raise ValidationError(
            f"The budget counts judge calls, and one match costs {cost} with this judge (its trials, "
            f"times two when it judges both orders): the budget must be at least {cost}."
        )
    with transaction.atomic():
        match_study = study_create(
            owner=owner,
            name=f"{name} — matches",
            task_type="pairwise",
            # The report on the contest study finds its tournaments' matches by this key and link.
            protocol=humorrank.MATCHES,
            config={
                humorrank.SOURCE_LINK: source_study.slug,
                "tournament": name,
                "schedule": schedule,
                "budget": budget,
            },
            description=f"Pairwise matches of the tournament {name!r} on {source_study.name!r}.",
        )
        tournament = Tournament.objects.create(
            owner=owner,
            name=name,
            source_study=source_study,
            match_study=match_study,
            judge=judge,
            schedule=schedule,
            budget=budget,
            seed=seed,
        )
        if enqueue:
            from ..tasks import tournament_task

            transaction.on_commit(lambda: tournament_task.delay(tournament.pk))
    return tournament


def tournament_fail(*, tournament_id: int, error: str) -> None:
    Tournament.objects.filter(pk=tournament_id).exclude(status=RunStatus.CANCELLED).update(
        status=RunStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def tournament_cancel(*, tournament: Tournament) -> None:
    with transaction.atomic():
        Tournament.objects.filter(pk=tournament.pk, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.CANCELLED, finished_at=timezone.now()
        )
        JudgeRun.objects.filter(tournament=tournament, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.CANCELLED, finished_at=timezone.now()
        )


def tournament_verdicts(tournament: Tournament) -> list[MatchVerdict]:
    """The judge's verdicts that count on the tournament's matches (``ratings.leaderboards``' rule)."""
    rater_id = tournament.judge.rater_id
    return judge_verdicts(study=tournament.match_study, rater_ids=[rater_id]).get(rater_id, [])


def _schedule_state(tournament: Tournament, names: list[str], prompts: list[Item]) -> Schedule:
    index = {n: i for i, n in enumerate(names)}
    prompt_index = {item.pk: p for p, item in enumerate(prompts)}
    schedule = Schedule(
        n_contestants=len(names),
        available=[frozenset(index[c.key] for c in item.candidates.all()) for item in prompts],
    )
    played = [
        (prompt_index[m["prompt_item"]], index[m["contestants"][0]], index[m["contestants"][1]])
        for m in tournament.match_study.items.values_list("metadata", flat=True)
    ]
    schedule.record(played)
    return schedule


def _is_active(tournament_id: int) -> bool:
    return Tournament.objects.filter(pk=tournament_id, status__in=ACTIVE_RUN_STATES).exists()


def _schedule_round(
    tournament: Tournament, names: list[str], prompts: list[Item], rng: random.Random
) -> JudgeRun | None:
    schedule = _schedule_state(tournament, names, prompts)
    if tournament.schedule == Tournament.Schedule.ROUND_ROBIN:
        matches = round_robin(schedule, budget=match_budget(tournament))
    else:
        ratings = current_ratings(names, tournament_verdicts(tournament))
        matches = swiss_round(schedule, ratings, rng=rng, budget=match_budget(tournament))
    if not matches:
        return None
    round_number = tournament.runs.count() + 1
    specs = []
    for prompt, i, j in matches:
        source = prompts[prompt]
        by_key = {c.key: c for c in source.candidates.all()}
        first, second = by_key[names[i]], by_key[names[j]]
        specs.append(
            ItemSpec(
                external_id=f"{source.external_id}|{first.key}|{second.key}",
                prompt=source.prompt or source.text,
                candidates=[
                    CandidateSpec(
                        key=c.key, text=c.text, context=c.context, provenance={**c.provenance, "contestant": c.key}
                    )
                    for c in (first, second)
                ],
                metadata={"prompt_item": source.pk, "contestants": [first.key, second.key], "round": round_number},
            )
        )
    with transaction.atomic():
        items_create(study=tournament.match_study, items=specs)
        new_items = tournament.match_study.items.filter(external_id__in=[s.external_id for s in specs])
        return run_create(
            study=tournament.match_study, judge=tournament.judge, items=new_items, tournament=tournament, enqueue=False
        )


TOURNAMENTS = job_kind_register(
    JobKind(
        name="tournaments",
        model=Tournament,
        what="The tournament",
        driven=True,
        fail=lambda pk, reason, token: tournament_fail(tournament_id=pk, error=reason),
        recover=tournaments_recover,
        outcome="the matches judged so far are kept; Resume continues it.",
    )
)


def process_tournament(*, tournament_id: int) -> None:
    """Play the tournament to its end: finish an open round, then schedule and judge rounds until done."""
    job_run(TOURNAMENTS, tournament_id, lambda held: tournament_play(held.pk))


def tournament_play(tournament_id: int) -> None:
    tournament = Tournament.objects.select_related("match_study", "source_study", "judge__rater").get(pk=tournament_id)
    names, prompts = _contestants(tournament.source_study)
    rng = random.Random(tournament.seed)  # noqa: S311 - scheduling, not security
    while _is_active(tournament_id):
        open_runs = [r for r in tournament.runs.order_by("pk") if unfinished(JudgeUnit, r.pk).exists()]
        for run in open_runs:
            JudgeRun.objects.filter(pk=run.pk, status__in=[RunStatus.CANCELLED, RunStatus.FAILED]).update(
                status=RunStatus.QUEUED
            )
            process_run(run_id=run.pk)
            run.refresh_from_db()
            if run.status == RunStatus.FAILED:
                tournament_fail(tournament_id=tournament_id, error=f"round {run.pk} failed: {run.error}")
                return
            if run.status == RunStatus.PAUSED:  # its endpoint never answered; a tournament has no resume
                tournament_fail(tournament_id=tournament_id, error=f"round {run.pk} stopped: {run.error}")
                return
        if not _is_active(tournament_id):
            return
        if open_runs:
            continue
        run = _schedule_round(tournament, names, prompts, rng)
        if run is None:
            Tournament.objects.filter(pk=tournament_id, status__in=ACTIVE_RUN_STATES).update(
                status=RunStatus.DONE, finished_at=timezone.now()
            )
            return


def human_check_create(
    *,
    owner: AbstractBaseUser,
    tournament: Tournament,
    name: str = "",
    n_pairs: int | None = None,
    seed: int = 0,
) -> Study:
    """A draft HumorRank human-check study: a random sample of the tournament's judged pairs.

    Each sampled match becomes one pairwise item with the same prompt and the
    same two candidates (first contestant first); the annotator form shows
    them in a random order per vote. The study links to the contest study, so
    the contest's report compares the people's votes with every judge.
    """
    n_pairs = n_pairs or humorrank.ANALYSES["human_check_pairs"]
    if n_pairs < 1:
        raise ValidationError("A human check needs at least one pair.")
    judged = (
        Judgment.objects.filter(study=tournament.match_study, status=Judgment.Status.OK)
        .values_list("item_id", flat=True)
        .distinct()
    )
    matches = list(tournament.match_study.items.filter(pk__in=judged).prefetch_related("candidates").order_by("pk"))
    if not matches:
        raise ValidationError("The tournament has no judged matches to sample from yet.")
    # One pair per (prompt, two contestants), whichever way round they met.
    unique: dict[tuple[int, frozenset[str]], Item] = {}
    for match in matches:
        unique.setdefault((match.metadata["prompt_item"], frozenset(match.metadata["contestants"])), match)
    sample = random.Random(seed).sample(list(unique.values()), min(n_pairs, len(unique)))  # noqa: S311
    prompt_ids = dict(tournament.source_study.items.values_list("pk", "external_id"))
    specs = []
    for match in sorted(sample, key=lambda m: m.pk):
        source_id = prompt_ids.get(match.metadata["prompt_item"], str(match.metadata["prompt_item"]))
        specs.append(
            ItemSpec(
                external_id=match.external_id,
                prompt=match.prompt,
                text=match.text,
                candidates=[
                    CandidateSpec(key=c.key, text=c.text, context=c.context, provenance=c.provenance)
                    for c in match.candidates.all()
                ],
                metadata={"prompt_id": source_id, "contestants": match.metadata["contestants"]},
            )
        )
    with transaction.atomic():
        study = study_from_template(
            owner=owner,
            template=humorrank.HUMAN_CHECK,
            name=name or f"{tournament.name} — human check",
            config={humorrank.SOURCE_LINK: tournament.source_study.slug, "tournament": tournament.name},
        )
        items_create(study=study, items=specs)
    return study
