"""Baseline judges: random, constant and length answer every study offline, named as baselines."""

import pytest

from annotation.models import Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from judging.services.judges import ensure_baseline_judges, judge_find_or_create
from judging.services.runs import process_run, run_create

pytestmark = pytest.mark.django_db


def run_baseline(study, owner, kind, **kwargs):
    judge, _ = judge_find_or_create(owner=owner, baseline=kind)
    run = run_create(study=study, judge=judge, enqueue=False, **kwargs)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    return judge, Judgment.objects.filter(rater=judge.rater, study=study)


def human_ratings(study, ratings):
    for n, rating in enumerate(ratings):
        enrollment = enroll_crowdworker(study=study, participant_id=f"person-{n}")
        assignment = next_assignment(enrollment=enrollment).assignment
        judgment_submit(assignment=assignment, rater=enrollment.rater, value={"rating": rating})


def jokes_study(owner, texts_by_item, task_type="pairwise"):
    study = study_create(owner=owner, name=f"{task_type} jokes", task_type=task_type)
    items_create(
        study=study,
        items=[
            ItemSpec(
                external_id=f"i{n}",
                prompt="A prompt",
                candidates=[CandidateSpec(key=f"k{j}", text=t) for j, t in enumerate(texts)],
            )
            for n, texts in enumerate(texts_by_item)
        ],
    )
    study_set_state(study=study, state="open")
    return study


class TestBaselineJudges:
    def test_the_three_baselines_are_named_as_baselines(self, researcher):
        judges = ensure_baseline_judges(owner=researcher)
        assert [j.name for j in judges] == [
            "baseline: random",
            "baseline: constant",
            "baseline: length (shorter is funnier)",
        ]
        assert {j.rater.kind for j in judges} == {"baseline"}
        assert ensure_baseline_judges(owner=researcher) == judges

    def test_random_answers_every_item_with_a_valid_value_reproducibly(self, make_study, researcher):
        study = make_study(n_items=6)
        judge, judgments = run_baseline(study, researcher, "random", trials=2)
        assert judgments.count() == 12
        values = list(judgments.order_by("item_id", "assignment__trial").values_list("value", flat=True))
        assert all(v["rating"] in (0, 1, 2, 3) for v in values)
        assert all(j.provenance["baseline"] == "random" for j in judgments)

    def test_constant_answers_the_scale_point_nearest_the_human_mean(self, make_study, researcher):
        study = make_study(n_items=3, quota_per_item=3)
        human_ratings(study, [3, 3, 2, 3, 2, 3])  # mean 2.67 → 3
        _, judgments = run_baseline(study, researcher, "constant")
        assert {tuple(v.items()) for v in judgments.values_list("value", flat=True)} == {(("rating", 3),)}
        assert {j.provenance["constant_source"] for j in judgments} == {"human_labels"}

    def test_constant_without_labels_says_so(self, make_study, researcher):
        _, judgments = run_baseline(make_study(n_items=2), researcher, "constant")
        assert {j.provenance["constant_source"] for j in judgments} == {"no_labels"}
        assert {j.value["rating"] for j in judgments} == {1}

    def test_length_picks_the_shorter_joke_whichever_side_it_is_on(self, researcher):
        study = jokes_study(
            researcher, [["Short one.", "A much, much longer joke that goes on."], ["A long long long one.", "Brief."]]
        )
        _, judgments = run_baseline(study, researcher, "length", both_orders=True)
        chosen = {(j.item.external_id, j.value["choice"]) for j in judgments}
        assert chosen == {("i0", "k0"), ("i1", "k1")}
        assert judgments.count() == 4

    def test_length_calls_equal_lengths_a_tie(self, researcher):
        study = jokes_study(researcher, [["Same size", "Same size"]])
        _, judgments = run_baseline(study, researcher, "length")
        assert judgments.get().value == {"choice": "tie"}

    def test_length_rates_shorter_texts_higher(self, researcher):
        study = study_create(owner=researcher, name="ratings", task_type="ordinal")
        texts = [
            "Hi.",
            "A medium text here.",
            "A rather longer text than the others here.",
            "The longest text of them all, by quite some distance.",
        ]
        items_create(study=study, items=[ItemSpec(external_id=f"t{n}", text=t) for n, t in enumerate(texts)])
        study_set_state(study=study, state="open")
        _, judgments = run_baseline(study, researcher, "length")
        ratings = [j.value["rating"] for j in judgments.order_by("item__position")]
        assert ratings == [3, 2, 1, 0]

    def test_baselines_do_not_write_explanations(self, researcher):
        study = study_create(owner=researcher, name="explain", task_type="explanation")
        items_create(study=study, items=[ItemSpec(external_id="e1", text="A joke to explain.")])
        _, judgments = run_baseline(study, researcher, "random")
        judgment = judgments.get()
        assert judgment.status == "failed"
        assert "do not write text" in judgment.provenance["error"]
