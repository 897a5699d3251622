"""A judge run whose trials per item an adaptive policy allocates: waves until the policy is satisfied."""

from collections import Counter

import pytest
from django.core.exceptions import ValidationError

from annotation.services.studies import ItemSpec, items_create, study_create, study_update
from judging.models import JudgeUnit
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
