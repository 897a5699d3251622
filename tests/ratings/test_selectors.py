# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a study's judgments into the arrays the statistics need."""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotation.models import Assignment, Enrollment, Item, Judgment, Rater
from annotation.services.judgments import judgment_submit
from annotation.services.studies import ItemSpec, items_create
from ratings.selectors import (
    NoNumericCoding,
    study_pairwise_outcomes,
    study_raters,
    study_rating_matrix,
)

pytestmark = pytest.mark.django_db


def add_rater(study, name, kind=Rater.Kind.CROWD, *, excluded=False):
    rater = Rater.objects.create(kind=kind, name=name, external_id=f"{study.slug}-{name}")
    Enrollment.objects.create(study=study, rater=rater, excluded=excluded)
    return rater


def judge(study, rater, item, value, *, trial=0, status=Judgment.Status.OK):
    """Store one judgment through the same service the annotator UI uses."""
    now = timezone.now()
    assignment = Assignment.objects.create(
        study=study,
        item=item,
        rater=rater,
        trial=trial,
        leased_at=now,
        lease_expires_at=now + timedelta(minutes=10),
        shown_order=list(item.candidates.values_list("key", flat=True)),
    )
    return judgment_submit(assignment=assignment, rater=rater, value=value, status=status).judgment


def rate_all(study, rater, ratings):
    """``ratings`` lists one value per item in position order; None skips the item."""
    for item, rating in zip(study.items.filter(is_attention_check=False).order_by("position"), ratings, strict=True):
        if rating is not None:
            judge(study, rater, item, {"rating": rating})


@pytest.fixture
def ordinal_study(make_study):
    """4 items, three crowdworkers (one excluded), an expert and an LLM judge."""
    study = make_study(n_items=4, quota_per_item=10)
    items_create(
        study=study,
        items=[ItemSpec(external_id="check-1", text="Type 3 here.", gold={"rating": 3}, is_attention_check=True)],
    )
    raters = {
        "ann": add_rater(study, "ann"),
        "bob": add_rater(study, "bob"),
        "cat": add_rater(study, "cat", excluded=True),
        "eve": add_rater(study, "eve", Rater.Kind.EXPERT),
        "gpt": add_rater(study, "gpt", Rater.Kind.LLM),
    }
    rate_all(study, raters["ann"], [0, 1, 2, 3])
    rate_all(study, raters["bob"], [0, 1, 3, None])
    rate_all(study, raters["cat"], [3, 3, 0, 0])
    rate_all(study, raters["eve"], [1, 1, 2, 3])
    rate_all(study, raters["gpt"], [0, 2, 2, 3])
    check = Item.objects.get(study=study, external_id="check-1")
    for name in ("ann", "cat"):
        judge(study, raters[name], check, {"rating": 3 if name == "ann" else 0})
    return study, raters


def column(data, name):
    return data.values[:, [r.label for r in data.raters].index(name)]


class TestStudyRatingMatrix:
    def test_it_puts_items_in_rows_and_humans_in_columns(self, ordinal_study):
        study, _ = ordinal_study
        data = study_rating_matrix(study=study, group="humans")
        assert data.item_labels == ["item-0", "item-1", "item-2", "item-3"]
        assert [r.label for r in data.raters] == ["eve", "ann", "bob", "cat"]
        np.testing.assert_array_equal(column(data, "ann"), [0, 1, 2, 3])
        np.testing.assert_array_equal(column(data, "bob"), [0, 1, 3, np.nan])
        np.testing.assert_array_equal(column(data, "eve"), [1, 1, 2, 3])
        assert data.n_judgments == 15

    def test_it_leaves_attention_checks_out(self, ordinal_study):
        study, _ = ordinal_study
        data = study_rating_matrix(study=study, group="everyone")
        assert "check-1" not in data.item_labels
        assert data.values.shape == (4, 5)

    def test_passers_drop_the_excluded_rater(self, ordinal_study):
        study, _ = ordinal_study
        data = study_rating_matrix(study=study, group="passers")
        assert sorted(r.label for r in data.raters) == ["ann", "bob", "eve"]

    def test_experts_crowd_and_judges_are_separate_groups(self, ordinal_study):
        study, _ = ordinal_study
        assert [r.label for r in study_rating_matrix(study=study, group="experts").raters] == ["eve"]
        assert sorted(r.label for r in study_rating_matrix(study=study, group="crowd").raters) == ["ann", "bob", "cat"]
        judges = study_rating_matrix(study=study, group="judges")
        assert [(r.label, r.kind) for r in judges.raters] == [("gpt", "llm")]
        np.testing.assert_array_equal(judges.values[:, 0], [0, 2, 2, 3])

    def test_a_chosen_subset_narrows_the_group(self, ordinal_study):
        study, raters = ordinal_study
        data = study_rating_matrix(study=study, group="everyone", rater_ids=[raters["ann"].pk, raters["gpt"].pk])
        assert sorted(r.label for r in data.raters) == ["ann", "gpt"]

    def test_failed_and_unparseable_judgments_do_not_count(self, ordinal_study):
        study, raters = ordinal_study
        llama = add_rater(study, "llama", Rater.Kind.LLM)
        item = study.items.get(external_id="item-0")
        judge(study, llama, item, None, status=Judgment.Status.UNPARSEABLE)
        data = study_rating_matrix(study=study, group="judges")
        assert [r.label for r in data.raters] == ["gpt"]

    def test_a_judges_repeated_trials_use_the_first_trial(self, ordinal_study):
        study, raters = ordinal_study
        item = study.items.get(external_id="item-0")
        judge(study, raters["gpt"], item, {"rating": 3}, trial=1)
        data = study_rating_matrix(study=study, group="judges")
        assert data.values[0, 0] == 0
        assert any("earliest" in w for w in data.warnings)

    def test_the_scale_comes_from_the_study(self, ordinal_study):
        study, _ = ordinal_study
        data = study_rating_matrix(study=study)
        np.testing.assert_array_equal(data.scale.codes, [0, 1, 2, 3])
        assert data.scale.names[0] == "0 Not funny"
        assert not data.scale.nominal

    def test_study_raters_lists_everyone_who_judged(self, ordinal_study):
        study, _ = ordinal_study
        assert len(study_raters(study=study)) == 5


class TestOtherTaskTypes:
    def test_binary_labels_code_the_positive_label_as_one(self, make_study):
        study = make_study(task_type="binary", n_items=2, quota_per_item=10)
        a, b = add_rater(study, "a"), add_rater(study, "b")
        first, second = study.items.order_by("position")
        judge(study, a, first, {"label": "funny"})
        judge(study, a, second, {"label": "not_funny"})
        judge(study, b, first, {"label": "funny"})
        data = study_rating_matrix(study=study)
        np.testing.assert_array_equal(data.values, [[1, 1], [0, np.nan]])
        assert data.scale.nominal
        assert data.scale.names == ["not_funny", "funny"]

    def test_free_text_has_no_matrix(self, make_study):
        study = make_study(task_type="explanation", n_items=1)
        with pytest.raises(NoNumericCoding):
            study_rating_matrix(study=study)


class TestPairwiseOutcomes:
    def test_contestants_are_the_generating_models(self, make_study):
        study = make_study(task_type="pairwise", n_items=3, n_candidates=2, quota_per_item=10)
        a, b = add_rater(study, "a"), add_rater(study, "b")
        items = list(study.items.order_by("position"))
        judge(study, a, items[0], {"choice": "c0"})
        judge(study, a, items[1], {"choice": "c1"})
        judge(study, b, items[2], {"choice": "tie"})
        out = study_pairwise_outcomes(study=study)
        assert out.a == ["secret-model-0"] * 3
        assert out.b == ["secret-model-1"] * 3
        assert sorted(out.score.tolist()) == [0.0, 0.5, 1.0]

    def test_the_candidate_key_stands_in_without_a_model(self, make_study):
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2, quota_per_item=10)
        study.items.get().candidates.update(provenance={})
        judge(study, add_rater(study, "a"), study.items.get(), {"choice": "c1"})
        out = study_pairwise_outcomes(study=study)
        assert (out.a, out.b, out.score.tolist()) == (["c0"], ["c1"], [0.0])
