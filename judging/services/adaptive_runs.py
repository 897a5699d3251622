"""Judge runs whose trials per item an adaptive policy allocates (``JudgeRun.allocation_policy``).

A person's hand-out asks the policy once per item (``annotation.allocation.state``); a judge run asks it
once per wave. The first wave asks every item one trial. Each later wave, made once the run has no
unit left, reads the judge's answers on the run's items into per-item sums, ranks the items with the
same ``plan`` the crowd path uses (the study's settings, ``study_params``), and gives the first ``WAVE``
items still in contention that have fewer than the run's ``trials`` their next trial. The run ends
when the policy retires every item or every item has had all its trials: a researcher spends API
calls on the items whose answer is still in doubt.

Each wave is logged (``JudgeWave``) with what it was decided from, in the shape the crowd's allocation
log uses (``decision_state``), and ``replay_run`` ranks every logged wave again from its record alone.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction

from annotation.allocation import UNIFORM, Arms, get_policy, order
from annotation.allocation.state import NotReplayable, Replayed, decision_state, logged_order, study_params
from annotation.models import SWAPPED_TRIAL_OFFSET, Judgment
from annotation.task_types import get_task_type

from ..models import JudgeRun, JudgeUnit, JudgeWave
from ..runner import unfinished

#: Items given one more trial per wave: enough to keep a judge's concurrent calls busy.
WAVE = 32


def first_wave_trials(run: JudgeRun) -> int:
    """Trials every item gets up front: all of them, or one under an adaptive policy."""
    return run.trials if run.allocation_policy == UNIFORM else 1


def run_next_wave(run: JudgeRun) -> int:
    """Make the next wave of an adaptive run's units; how many (0: the run is complete)."""
    if run.allocation_policy == UNIFORM:
        return 0
    policy = get_policy(run.allocation_policy)
    study = run.study
    with transaction.atomic():
        # One worker at a time decides a wave, and only once the last one is judged.
        JudgeRun.objects.select_for_update().filter(pk=run.pk).first()
        if unfinished(JudgeUnit, run.pk).exists():
            return 0
        units = list(JudgeUnit.objects.filter(run=run).values_list("item_id", "trial"))
        trials: dict[int, int] = {}
        for item_id, trial in units:
            trials[item_id] = max(trials.get(item_id, 0), trial + 1)
        ids = np.array(sorted(trials), dtype=np.int64)
        arms = Arms(ids=ids, n=np.zeros(len(ids)), total=np.zeros(len(ids)), total_sq=np.zeros(len(ids)))
        at = {item_id: i for i, item_id in enumerate(ids.tolist())}
        task_type = get_task_type(study.task_type)
        config = task_type.config(study.config)
        answers = Judgment.objects.filter(
            rater=run.judge.rater, item_id__in=list(trials), status=Judgment.Status.OK
        ).values_list("item_id", "assignment__trial", "value")
        for item_id, trial, value in answers:
            if trial is None or trial >= SWAPPED_TRIAL_OFFSET or trial >= trials[item_id]:
                continue
            reward = policy.reward(task_type, config, value, [])
            if reward is not None:
                i = at[item_id]
                arms.n[i] += 1
                arms.total[i] += reward
                arms.total_sq[i] += reward * reward
        policy.add_columns(study, arms)
        params = study_params(study)
        plan = policy.plan(arms, params)
        left = np.fromiter((trials[item_id] < run.trials for item_id in ids.tolist()), dtype=bool, count=len(ids))
        ranked = order(plan.priority, ids, seed=study.seed, rater=run.judge.rater_id, among=left, limit=WAVE)
        wanted = ids[ranked].tolist()
        if wanted:
            JudgeWave.objects.create(
                run=run,
                number=JudgeWave.objects.filter(run=run).count() + 2,
                policy=policy.name,
                state=decision_state(policy, plan, arms, params, wanted),
            )
        orders = (False, True) if run.both_orders else (False,)
        made = JudgeUnit.objects.bulk_create(
            [
                JudgeUnit(run=run, item_id=item_id, trial=trials[item_id], swapped=swapped)
                for item_id in wanted
                for swapped in orders
            ],
            ignore_conflicts=True,
        )
    return len(made)


def replay_run(run: JudgeRun) -> list[Replayed]:
    """Every logged wave of the run ranked again from its record alone (in the judge's tie order): one
    ``Replayed`` per item the wave gave a trial (``log_id`` the wave's id), the item at each place of the
    logged order against the one the rule puts there.
    A wave logged by an earlier version of the policy's rule is reported as not replayable."""
    seed, rater = run.study.seed, run.judge.rater_id
    results: list[Replayed] = []
    for wave in JudgeWave.objects.filter(run=run).order_by("number"):
        try:
            ranked = logged_order(wave.policy, wave.state, seed=seed, rater=rater)
        except NotReplayable as refused:
            results += [Replayed(wave.pk, item, None, str(refused)) for item in wave.items]
            continue
        results += [
            Replayed(wave.pk, item, ranked[at] if at < len(ranked) else None) for at, item in enumerate(wave.items)
        ]
    return results
