"""A judge run whose trials per item an adaptive policy allocates: waves until the policy is satisfied."""

from collections import Counter

import pytest
from django.core.exceptions import ValidationError

from annotation.allocation.state import ReplayCounts, replay_counts
from annotation.services.studies import ItemSpec, items_create, study_create, study_update
from judging.models import JudgeUnit, JudgeWave
from judging.services.adaptive_runs import WAVE, replay_run
from judging.services.judges import judge_find_or_create
from judging.services.runs import process_run, run_create

pytestmark = pytest.mark.django_db


def test_precision_stops_asking_items_the_judge_answers_the_same_way(researcher):
    study = study_create(owner=researcher, name="judged", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text="ha " * (n + 1)) for n in range(10)])
    study_update(study=study, allocation_target_width=1.5)
    judge, _ = judge_find_or_create(owner=researcher, baseline="length")
    run = run_create(study=study, judge=judge, trials=10, allocation_policy="precision", enqueue=False)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    per_item = Counter(JudgeUnit.objects.filter(run=run, status="done").values_list("item_id", flat=True))
    # The length baseline answers an item the same way every trial: each is settled well before 10 trials.
    assert len(per_item) == 10
    assert all(2 <= n < 10 for n in per_item.values()), per_item
    assert sum(per_item.values()) < 10 * 10


def test_a_policy_that_does_not_fit_is_refused(researcher):
    study = study_create(owner=researcher, name="pairs", task_type="pairwise")
    judge, _ = judge_find_or_create(owner=researcher, baseline="random")
    with pytest.raises(ValidationError) as refused:
        run_create(study=study, judge=judge, allocation_policy="top_k", enqueue=False)
    assert "allocation_policy" in refused.value.message_dict


def _top_k_run(researcher, *, items: int = 40, trials: int = 6):
    """A top_k run of the random baseline over an ordinal study: its answers differ trial to trial, so
    waves rank items with unequal counts and sums, and equal ones in the judge's tie order. More items
    than a wave takes (``WAVE``), so a wave passes over some."""
    study = study_create(owner=researcher, name="judged waves", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text=f"joke {n}") for n in range(items)])
    study_update(study=study, allocation_k=3)
    judge, _ = judge_find_or_create(owner=researcher, baseline="random")
    run = run_create(study=study, judge=judge, trials=trials, allocation_policy="top_k", enqueue=False)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    return run


def test_every_wave_is_logged_and_replays_to_the_same_items_in_the_same_order(researcher):
    run = _top_k_run(researcher)
    waves = list(JudgeWave.objects.filter(run=run).order_by("number"))
    assert waves, "a top_k run over 40 items with 6 trials each needs more than its first wave"
    assert len(waves[0].items) == WAVE < 40
    assert [w.number for w in waves] == list(range(2, len(waves) + 2))
    # Every trial after the first was given by a logged wave, and every logged item got one.
    later = Counter(JudgeUnit.objects.filter(run=run, trial__gte=1).values_list("item_id", flat=True))
    assert Counter(item for w in waves for item in w.items) == later
    replayed = replay_run(run)
    assert len(replayed) == sum(later.values())
    assert replay_counts(replayed) == ReplayCounts(same=len(replayed), differs=0, not_replayable=0)
    # The record holds what the rule reads: each logged item's count, sum and top flag at the wave.
    assert all(row[1] == 1 and "top" in row[4] for row in waves[0].state["arms"])


def test_a_wave_whose_record_is_altered_replays_differently_and_an_earlier_rules_wave_is_not_replayable(researcher):
    run = _top_k_run(researcher)
    first, *rest = JudgeWave.objects.filter(run=run).order_by("number")
    assert len(first.items) >= 2 and rest
    # The logged order of the first two items swapped: the rule still ranks them by their logged counts,
    # so the first two places differ.
    rows = first.state["arms"]
    first.state = {**first.state, "arms": [rows[1], rows[0], *rows[2:]]}
    first.save(update_fields=["state"])
    rest[0].state = {**rest[0].state, "rule": 0}
    rest[0].save(update_fields=["state"])
    results = replay_run(run)
    wrong = [r for r in results if r.differs]
    assert {r.logged for r in wrong} == set(first.items[:2]) and all(r.log_id == first.pk for r in wrong)
    refused = [r for r in results if r.not_replayable]
    assert len(refused) == len(rest[0].items)
    assert all("earlier version of the top_k rule" in r.not_replayable for r in refused)
