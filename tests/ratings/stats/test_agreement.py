# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import (
    adjacent_agreement,
    exact_agreement,
    item_summary,
    mean_absolute_deviation,
    mean_item_sd,
    percentage_agreement,
)

from .examples import random_ratings

NAN = np.nan

# Four items, three raters, 0-3 scale; the last item has a single rating.
SMALL = np.array(
    [
        [2, 2, 2],  # exact
        [1, 2, 2],  # adjacent
        [0, 3, 1],  # neither
        [3, NAN, NAN],  # excluded
    ]
)


class TestExactAgreement:
    def test_it_is_the_share_of_items_where_everyone_agreed(self):
        result = exact_agreement(SMALL)
        assert result.value == pytest.approx(1 / 3)
        assert (result.n_items, result.n_excluded) == (3, 1)

    def test_it_is_nan_when_no_item_has_two_ratings(self):
        result = exact_agreement([[1, NAN], [NAN, 2]])
        assert np.isnan(result.value) and result.n_excluded == 2


class TestAdjacentAgreement:
    def test_it_is_the_share_of_items_spanning_at_most_one_point(self):
        assert adjacent_agreement(SMALL).value == pytest.approx(2 / 3)

    def test_it_rejects_a_negative_tolerance(self):
        with pytest.raises(ValueError, match="tolerance"):
            adjacent_agreement(SMALL, tolerance=-1)


class TestMeanItemSD:
    def test_it_averages_the_sample_sd_of_each_item(self):
        expected = np.mean([0.0, np.std([1, 2, 2], ddof=1), np.std([0, 3, 1], ddof=1)])
        assert mean_item_sd(SMALL).value == pytest.approx(expected)

    def test_it_can_use_the_population_sd(self):
        expected = np.mean([0.0, np.std([1, 2, 2]), np.std([0, 3, 1])])
        assert mean_item_sd(SMALL, ddof=0).value == pytest.approx(expected)
        with pytest.raises(ValueError, match="ddof"):
            mean_item_sd(SMALL, ddof=2)


class TestMeanAbsoluteDeviation:
    def test_it_measures_distance_from_the_item_mean_by_default(self):
        second = np.mean(np.abs(np.array([1, 2, 2]) - 5 / 3))
        third = np.mean(np.abs(np.array([0, 3, 1]) - 4 / 3))
        assert mean_absolute_deviation(SMALL).value == pytest.approx((0 + second + third) / 3)

    def test_it_can_measure_distance_from_the_median(self):
        expected = (0 + 1 / 3 + (1 + 2 + 0) / 3) / 3
        assert mean_absolute_deviation(SMALL, center="median").value == pytest.approx(expected)
        with pytest.raises(ValueError, match="center"):
            mean_absolute_deviation(SMALL, center="mode")


class TestPercentageAgreement:
    def test_it_averages_the_share_of_agreeing_rater_pairs(self):
        labels = np.array([[0, 0, 0], [0, 1, 1], [0, 1, 2], [2, NAN, 2]])
        assert percentage_agreement(labels).value == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)

    def test_it_matches_a_brute_force_pair_count(self):
        data = random_ratings(3, n_items=25, n_raters=5, missing=0.3)
        per_item = []
        for row in data:
            vals = row[~np.isnan(row)]
            if vals.size < 2:
                continue
            pairs = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1 :]]
            per_item.append(np.mean([a == b for a, b in pairs]))
        assert percentage_agreement(data).value == pytest.approx(np.mean(per_item))


class TestItemSummary:
    def test_it_gives_per_item_figures_for_a_dataset_a_sheet(self):
        summary = item_summary(SMALL)
        np.testing.assert_array_equal(summary.n_ratings, [3, 3, 3, 1])
        np.testing.assert_allclose(summary.median, [2, 2, 1, 3])
        np.testing.assert_allclose(summary.exact[:3], [1, 0, 0])
        np.testing.assert_allclose(summary.adjacent[:3], [1, 1, 0])
        np.testing.assert_allclose(summary.share_at_median[:3], [1, 2 / 3, 1 / 3])
        np.testing.assert_allclose(summary.share_within_one_of_median[:3], [1, 1, 2 / 3])
        assert np.isnan(summary.sd[3]) and np.isnan(summary.share_at_median[3])


class TestAgreementProperties:
    @settings(max_examples=30, deadline=None)
    @given(n_items=st.integers(1, 15), n_raters=st.integers(2, 6), seed=st.integers(0, 10_000))
    def test_identical_raters_agree_perfectly(self, n_items, n_raters, seed):
        column = np.random.default_rng(seed).integers(0, 4, size=(n_items, 1)).astype(float)
        data = np.repeat(column, n_raters, axis=1)
        assert exact_agreement(data).value == 1.0
        assert adjacent_agreement(data).value == 1.0
        assert percentage_agreement(data).value == 1.0
        assert mean_item_sd(data).value == 0.0
        assert mean_absolute_deviation(data).value == 0.0

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_the_figures_do_not_depend_on_rater_or_item_order(self, seed):
        data = random_ratings(seed, n_items=12, n_raters=4, missing=0.2)
        rng = np.random.default_rng(seed)
        shuffled = data[rng.permutation(12)][:, rng.permutation(4)]
        for fn in (exact_agreement, adjacent_agreement, mean_item_sd, mean_absolute_deviation, percentage_agreement):
            assert fn(data).value == pytest.approx(fn(shuffled).value, nan_ok=True)

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_exact_agreement_never_exceeds_adjacent_agreement(self, seed):
        data = random_ratings(seed, n_items=12, n_raters=3, missing=0.1)
        assert exact_agreement(data).value <= adjacent_agreement(data).value
