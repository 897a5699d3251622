# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ratings.stats import kendall, mean_offdiagonal, spearman, spearman_matrix

from .examples import random_ratings


class TestSpearman:
    def test_it_reports_scipys_rho_and_p_value(self):
        rng = np.random.default_rng(1)
        x = rng.integers(0, 4, 50)
        y = np.clip(x + rng.integers(-1, 2, 50), 0, 3)
        result = spearman(x, y, n_resamples=300)
        expected = stats.spearmanr(x, y)
        assert result.estimate == pytest.approx(expected.statistic)
        assert result.p_value == pytest.approx(expected.pvalue)
        assert result.ci_low < result.estimate < result.ci_high
        assert result.n == 50

    def test_each_vectorised_resample_equals_scipy_on_the_same_indices(self):
        rng = np.random.default_rng(2)
        x, y = rng.normal(size=25), rng.normal(size=25)
        result = spearman(x, y, n_resamples=40, seed=8)
        replay = np.random.default_rng(8).integers(0, 25, size=(40, 25))
        expected = [stats.spearmanr(x[i], y[i]).statistic for i in replay]
        np.testing.assert_allclose(result.samples, expected, atol=1e-12)

    def test_its_bootstrap_p_value_is_the_share_of_resamples_at_or_below_zero(self):
        rng = np.random.default_rng(3)
        x, y = rng.normal(size=30), rng.normal(size=30)
        result = spearman(x, y, n_resamples=400)
        assert result.bootstrap_p_value == pytest.approx(np.mean(result.samples <= 0))

    def test_it_rejects_missing_values_and_short_or_unequal_input(self):
        with pytest.raises(ValueError, match="missing"):
            spearman([1, 2, np.nan, 4], [1, 2, 3, 4])
        with pytest.raises(ValueError, match="same length"):
            spearman([1, 2, 3, 4], [1, 2, 3])
        with pytest.raises(ValueError, match="at least 3"):
            spearman([1, 2], [1, 2])

    @settings(max_examples=25, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_is_invariant_to_permuting_pairs_and_to_monotone_transforms(self, seed):
        rng = np.random.default_rng(seed)
        x, y = rng.normal(size=20), rng.normal(size=20)
        perm = rng.permutation(20)
        base = spearman(x, y, n_resamples=10).estimate
        assert spearman(x[perm], y[perm], n_resamples=10).estimate == pytest.approx(base)
        assert spearman(np.exp(x), y**3, n_resamples=10).estimate == pytest.approx(base)


class TestKendall:
    def test_it_reports_scipys_tau_b_with_a_bootstrap_interval(self):
        rng = np.random.default_rng(4)
        x = rng.integers(0, 4, 40)
        y = np.clip(x + rng.integers(-1, 2, 40), 0, 3)
        result = kendall(x, y, n_resamples=200)
        expected = stats.kendalltau(x, y)
        assert result.estimate == pytest.approx(expected.statistic)
        assert result.p_value == pytest.approx(expected.pvalue)
        assert result.ci_low < result.estimate < result.ci_high

    def test_a_resample_with_a_constant_side_is_skipped_and_counted(self):
        result = kendall([0, 0, 0, 1], [1, 2, 3, 4], n_resamples=200, seed=1)
        assert result.n_valid < 200
        assert result.warnings


class TestSpearmanMatrix:
    def test_it_matches_scipy_pair_by_pair_on_complete_data(self):
        data = random_ratings(5, n_items=30, n_raters=4)
        matrix = spearman_matrix(data)
        for i in range(4):
            for j in range(4):
                expected = 1.0 if i == j else stats.spearmanr(data[:, i], data[:, j]).statistic
                assert matrix[i, j] == pytest.approx(expected)

    def test_it_uses_pairwise_complete_items_when_ratings_are_missing(self):
        data = random_ratings(6, n_items=30, n_raters=3, missing=0.2)
        matrix = spearman_matrix(data)
        both = ~np.isnan(data[:, 0]) & ~np.isnan(data[:, 2])
        assert matrix[0, 2] == pytest.approx(stats.spearmanr(data[both, 0], data[both, 2]).statistic)
        assert matrix[2, 0] == matrix[0, 2]

    @settings(max_examples=25, deadline=None)
    @given(seed=st.integers(0, 10_000), whole=st.booleans())
    def test_its_fast_ranking_agrees_with_scipy_for_whole_and_fractional_ratings(self, seed, whole):
        rng = np.random.default_rng(seed)
        data = rng.integers(-3, 8, size=(25, 3)).astype(float)
        if not whole:
            data = data + rng.normal(size=data.shape)
        data[rng.random(data.shape) < 0.15] = np.nan
        matrix = spearman_matrix(data)
        for i, j in ((0, 1), (0, 2), (1, 2)):
            both = ~np.isnan(data[:, i]) & ~np.isnan(data[:, j])
            expected = stats.spearmanr(data[both, i], data[both, j]).statistic
            assert matrix[i, j] == pytest.approx(expected, nan_ok=True)

    def test_it_leaves_nan_where_raters_share_too_few_items(self):
        data = np.array([[1, np.nan], [2, np.nan], [3, 1], [0, 2], [2, 0.0]])
        assert np.isnan(spearman_matrix(data, min_overlap=4)[0, 1])

    def test_its_mean_off_diagonal_skips_nan_cells(self):
        square = np.array([[1, 0.5, np.nan], [0.5, 1, 0.7], [np.nan, 0.7, 1]])
        assert mean_offdiagonal(square) == pytest.approx(0.6)
        with pytest.raises(ValueError, match="square"):
            mean_offdiagonal(np.ones((2, 3)))

    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_permuting_raters_permutes_the_matrix(self, seed):
        data = random_ratings(seed, n_items=20, n_raters=4, missing=0.1)
        perm = np.random.default_rng(seed).permutation(4)
        base = spearman_matrix(data)
        np.testing.assert_allclose(spearman_matrix(data[:, perm]), base[np.ix_(perm, perm)])
