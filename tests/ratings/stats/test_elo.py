# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import sequential_elo, stable_elo


def random_matches(seed: int, k: int = 5, n: int = 300):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    score = rng.choice([0.0, 0.5, 1.0], n)
    return a, b, score


class TestSequentialElo:
    def test_a_win_between_equals_moves_both_by_half_the_k_factor(self):
        np.testing.assert_allclose(sequential_elo([0], [1], [1]), [1016, 984])

    def test_a_tie_between_equals_changes_nothing(self):
        np.testing.assert_allclose(sequential_elo([0], [1], [0.5]), [1000, 1000])

    def test_it_follows_the_elo_update_step_by_step(self):
        ratings = sequential_elo([0, 0], [1, 1], [1, 0], k_factor=20, initial=1500)
        after_first = np.array([1510.0, 1490.0])
        expected_a = 1 / (1 + 10 ** ((after_first[1] - after_first[0]) / 400))
        delta = 20 * (0 - expected_a)
        np.testing.assert_allclose(ratings, after_first + [delta, -delta])

    def test_it_rejects_a_non_positive_k_factor(self):
        with pytest.raises(ValueError, match="k_factor"):
            sequential_elo([0], [1], [1], k_factor=0)


class TestStableElo:
    def test_each_ordering_is_a_seeded_permutation_of_the_match_list(self):
        a, b, score = random_matches(1)
        result = stable_elo(a, b, score, n_orderings=4, seed=9)
        rng = np.random.default_rng(9)
        for row in result.per_ordering:
            order = rng.permutation(a.size)
            np.testing.assert_allclose(row, sequential_elo(a[order], b[order], score[order]))

    def test_it_reports_the_mean_and_sample_sd_across_orderings(self):
        a, b, score = random_matches(2)
        result = stable_elo(a, b, score, n_orderings=5)
        np.testing.assert_allclose(result.mean, result.per_ordering.mean(axis=0))
        np.testing.assert_allclose(result.sd, result.per_ordering.std(axis=0, ddof=1))
        assert np.all(result.sd > 0)

    def test_the_same_seed_gives_the_same_ratings(self):
        a, b, score = random_matches(3)
        first = stable_elo(a, b, score, seed=1)
        again = stable_elo(a, b, score, seed=1)
        np.testing.assert_array_equal(first.per_ordering, again.per_ordering)

    def test_it_rejects_bad_settings(self):
        with pytest.raises(ValueError, match="n_orderings"):
            stable_elo([0], [1], [1], n_orderings=0)
        with pytest.raises(ValueError, match="ddof"):
            stable_elo([0], [1], [1], ddof=3)

    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_ratings_are_zero_sum_around_the_initial_rating(self, seed):
        a, b, score = random_matches(seed, k=4, n=50)
        result = stable_elo(a, b, score, n_orderings=2, seed=seed)
        np.testing.assert_allclose(result.per_ordering.mean(axis=1), 1000.0)

    def test_a_stronger_contestant_ends_up_higher(self):
        rng = np.random.default_rng(5)
        a = np.zeros(400, dtype=int)
        b = rng.integers(1, 4, 400)
        score = (rng.random(400) < 0.8).astype(float)
        result = stable_elo(a, b, score, n_orderings=5)
        assert result.mean[0] == result.mean.max()
