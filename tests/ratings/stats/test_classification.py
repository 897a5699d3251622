# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pingouin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import matthews_corrcoef

from ratings.stats import (
    accuracy,
    binary_scores,
    compare_groups,
    funnier_of_two,
    mae_by_grade_bin,
    rmse,
    rmse_by_tail,
)


class TestBinaryScores:
    def test_it_counts_the_confusion_cells_and_derives_the_rates(self):
        gold = [1, 1, 1, 0, 0, 0, 0, 1]
        pred = [1, 0, 1, 0, 1, 0, 0, 1]
        result = binary_scores(gold, pred)
        assert (result.tp, result.fn, result.fp, result.tn) == (3, 1, 1, 3)
        assert result.accuracy == pytest.approx(6 / 8)
        assert result.fpr == pytest.approx(1 / 4)
        assert result.fnr == pytest.approx(1 / 4)
        assert result.mcc == pytest.approx(matthews_corrcoef(gold, pred))

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_its_mcc_matches_sklearn(self, seed):
        rng = np.random.default_rng(seed)
        gold = rng.integers(0, 2, 40)
        pred = np.where(rng.random(40) < 0.7, gold, 1 - gold)
        assert binary_scores(gold, pred).mcc == pytest.approx(matthews_corrcoef(gold, pred), abs=1e-12)

    def test_a_missing_answer_counts_as_wrong_on_either_side(self):
        result = binary_scores([1, 0, 1, 0], [np.nan, np.nan, 1, 0])
        assert (result.tp, result.fn, result.fp, result.tn) == (1, 1, 1, 1)
        assert result.accuracy == 0.5 and result.n_missing == 2

    def test_it_honours_an_explicit_positive_label(self):
        result = binary_scores([2, 2, 5, 5], [2, 5, 5, 5], positive=2, negative=5)
        assert (result.tp, result.fn, result.fp, result.tn) == (1, 1, 0, 2)

    def test_mcc_is_undefined_when_the_reference_has_one_class_and_rates_are_nan_without_a_class(self):
        result = binary_scores([1, 1, 1], [1, 1, 1])
        assert result.mcc is None and result.mcc_undefined == "the reference has one class only"
        assert np.isnan(result.fpr) and result.fnr == 0.0

    def test_mcc_is_undefined_not_minus_one_when_every_answer_is_missing(self):
        # Missing answers count on the wrong side, which alone would give a perfect −1.
        result = binary_scores([1, 0, 1, 0], [np.nan] * 4)
        assert result.mcc is None and result.mcc_undefined == "the judge gave no usable answers"
        assert result.accuracy == 0.0

    def test_mcc_is_undefined_not_zero_when_the_judge_answers_one_class_only(self):
        result = binary_scores([1, 0, 1, 0], [1, 1, 1, 1])
        assert result.mcc is None and result.mcc_undefined == "the judge answered one class only"
        assert result.accuracy == 0.5

    def test_it_rejects_more_than_two_labels(self):
        with pytest.raises(ValueError, match="non-positive label"):
            binary_scores([0, 1, 2], [0, 1, 1])
        with pytest.raises(ValueError, match="neither positive"):
            binary_scores([0, 1], [1, 3], negative=0)


class TestAccuracyAndRMSE:
    def test_accuracy_counts_missing_predictions_as_wrong(self):
        assert accuracy([0, 1, 2, 2], [0, 1, np.nan, 1]) == 0.5

    def test_rmse_is_the_root_of_the_mean_squared_error(self):
        assert rmse([0, 1, 2], [1, 1, 0]) == pytest.approx(np.sqrt(5 / 3))
        with pytest.raises(ValueError, match="same length"):
            rmse([0, 1], [0])

    def test_rmse_by_tail_uses_the_funniest_and_least_funny_items(self):
        gold = np.array([0.0, 0.4, 1.0, 1.6, 2.2, 2.8, 3.0, 0.2, 1.2, 2.0])
        pred = np.full(10, 1.5)
        result = rmse_by_tail(gold, pred, percent=20)
        assert result.n == 2
        assert result.top == pytest.approx(np.sqrt(((3.0 - 1.5) ** 2 + (2.8 - 1.5) ** 2) / 2))
        assert result.bottom == pytest.approx(np.sqrt(((0.0 - 1.5) ** 2 + (0.2 - 1.5) ** 2) / 2))
        with pytest.raises(ValueError, match="percent"):
            rmse_by_tail(gold, pred, percent=0)

    def test_rmse_by_tail_does_not_depend_on_row_order_when_grades_tie_at_the_cut(self):
        # Five items, a 20% tail holds one: the top two tie at 2.8, so they share the place half each.
        gold = np.array([2.8, 2.8, 1.0, 0.4, 0.4])
        pred = np.array([2.8, 0.8, 1.0, 0.4, 1.4])
        result = rmse_by_tail(gold, pred, percent=20)
        assert result.n == 1
        assert result.top == pytest.approx(np.sqrt((0.0**2 + 2.0**2) / 2))
        assert result.bottom == pytest.approx(np.sqrt((0.0**2 + 1.0**2) / 2))
        rng = np.random.default_rng(3)
        for _ in range(20):
            order = rng.permutation(gold.size)
            again = rmse_by_tail(gold[order], pred[order], percent=20)
            assert (again.top, again.bottom) == pytest.approx((result.top, result.bottom))

    def test_rmse_by_tail_counts_items_beyond_the_cut_in_full(self):
        # A 40% tail of five holds two: 3.0 in full, then one place shared by the two items at 2.0.
        gold = np.array([3.0, 2.0, 2.0, 1.0, 0.0])
        pred = np.array([2.0, 2.0, 1.0, 1.0, 0.0])
        result = rmse_by_tail(gold, pred, percent=40)
        assert result.top == pytest.approx(np.sqrt((1.0 + 0.5 * 0.0 + 0.5 * 1.0) / 2))

    def test_mae_by_grade_bin_splits_the_scale_in_steps_of_0_2(self):
        gold = np.array([0.0, 0.1, 0.2, 0.6, 3.0, 2.9])
        pred = np.array([0.5, 0.1, 0.0, 0.6, 2.0, 3.0])
        bins = mae_by_grade_bin(gold, pred)
        assert len(bins) == 15
        assert (bins[0].low, bins[0].high, bins[0].n) == (0.0, 0.2, 2)
        assert bins[0].mae == pytest.approx(0.25)
        assert bins[1].n == 1 and bins[1].mae == pytest.approx(0.2)
        assert bins[3].n == 1 and bins[3].mae == 0.0
        assert bins[14].n == 2 and bins[14].mae == pytest.approx(0.55)
        assert bins[5].n == 0 and np.isnan(bins[5].mae)
        with pytest.raises(ValueError, match="must lie in"):
            mae_by_grade_bin([3.2], [3.0])


class TestFunnierOfTwo:
    def test_it_scores_accuracy_and_reward_and_skips_equal_grades(self):
        g1 = [2.0, 1.0, 1.4, 0.8]
        g2 = [1.0, 1.6, 1.4, 0.2]
        pred = [1, 1, 2, np.nan]
        result = funnier_of_two(g1, g2, pred)
        assert result.n_pairs == 3 and result.n_skipped_equal == 1
        assert result.accuracy == pytest.approx(1 / 3)
        assert result.reward == pytest.approx((1.0 - 0.6 - 0.6) / 3)

    def test_it_rejects_predictions_other_than_one_or_two(self):
        with pytest.raises(ValueError, match="only 1, 2"):
            funnier_of_two([1.0], [2.0], [0])
        with pytest.raises(ValueError, match="equal grades"):
            funnier_of_two([1.0], [1.0], [1])


class TestCompareGroups:
    def test_it_matches_scipys_student_t_and_pingouins_cohens_d(self):
        rng = np.random.default_rng(4)
        a, b = rng.normal(1.0, 1.0, 30), rng.normal(0.4, 1.3, 45)
        result = compare_groups(a, b)
        expected = stats.ttest_ind(a, b, equal_var=True)
        assert result.t == pytest.approx(expected.statistic)
        assert result.p_value == pytest.approx(expected.pvalue)
        assert result.df == 73
        assert result.cohens_d == pytest.approx(pingouin.compute_effsize(a, b, eftype="cohen"))

    def test_it_labels_the_effect_size(self):
        result = compare_groups([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
        assert result.cohens_d == pytest.approx(1 / np.std([1, 2, 3, 4, 5], ddof=1))
        assert result.magnitude == "medium"

    def test_it_rejects_constant_or_tiny_groups(self):
        with pytest.raises(ValueError, match="constant"):
            compare_groups([1, 1], [1, 1])
        with pytest.raises(ValueError, match="at least 2"):
            compare_groups([1], [1, 2])
