# SPDX-License-Identifier: GPL-3.0-or-later
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from ratings.stats import (
    bradley_terry,
    bradley_terry_bootstrap,
    bradley_terry_from_wins,
    win_matrix,
)

LN10_OVER_400 = np.log(10.0) / 400.0

# Stigler (1994) citations between four statistics journals, as in Agresti
# (2002, p. 448) and R's BradleyTerry2 package: CITES[i, j] = times journal i
# was cited by journal j (i "beats" j).
JOURNALS = ["Biometrika", "Comm Statist", "JASA", "JRSS-B"]
CITES = np.array(
    [
        [0, 730, 498, 221],
        [33, 0, 68, 17],
        [320, 813, 0, 142],
        [284, 276, 325, 0],
    ],
    dtype=float,
)
# BradleyTerry2::BTabilities(citeModel), log-abilities relative to Biometrika.
BT2_ABILITIES = [0.0, -2.9490725, -0.4795698, 0.2689541]


def simulate(seed: int, true_ratings: np.ndarray, n_matches: int, tie_share: float = 0.1):
    rng = np.random.default_rng(seed)
    k = true_ratings.size
    a = rng.integers(0, k, n_matches)
    b = (a + rng.integers(1, k, n_matches)) % k
    p_a = 1.0 / (1.0 + 10 ** ((true_ratings[b] - true_ratings[a]) / 400.0))
    u = rng.random(n_matches)
    decisive = 1.0 - tie_share
    score = np.where(u < p_a * decisive, 1.0, np.where(u < p_a * decisive + tie_share, 0.5, 0.0))
    return a, b, score


def scipy_mle(wins: np.ndarray) -> np.ndarray:
    """Independent fit: maximise the BT log-likelihood with BFGS, Elo scale, mean 1000."""
    k = wins.shape[0]

    def negloglik(theta):
        beta = np.concatenate([[0.0], theta])
        diff = beta[:, None] - beta[None, :]
        return -np.sum(wins * (diff - np.logaddexp(0.0, diff)))

    res = optimize.minimize(negloglik, np.zeros(k - 1), method="BFGS", options={"gtol": 1e-10})
    beta = np.concatenate([[0.0], res.x]) / LN10_OVER_400
    return beta - beta.mean() + 1000.0


class TestBradleyTerry:
    def test_it_reproduces_the_bradleyterry2_citation_abilities(self):
        result = bradley_terry_from_wins(CITES, names=JOURNALS)
        abilities = (result.ratings - result.ratings[0]) * LN10_OVER_400
        np.testing.assert_allclose(abilities, BT2_ABILITIES, atol=1e-6)
        assert result.converged and not result.regularized and result.warnings == []

    def test_its_ratings_are_on_the_elo_scale_and_average_1000(self):
        result = bradley_terry_from_wins(CITES)
        assert result.ratings.mean() == pytest.approx(1000.0)
        p_0_beats_1 = 1 / (1 + 10 ** ((result.ratings[1] - result.ratings[0]) / 400))
        s0, s1 = result.strengths[0], result.strengths[1]
        assert p_0_beats_1 == pytest.approx(s0 / (s0 + s1))

    @pytest.mark.parametrize("seed", range(3))
    def test_it_matches_an_independent_scipy_maximum_likelihood_fit(self, seed):
        a, b, score = simulate(seed, np.array([900, 1000, 1050, 1200, 800.0]), 400)
        ours = bradley_terry(a, b, score, n_contestants=5)
        wins = win_matrix(a, b, score, n_contestants=5)
        np.testing.assert_allclose(ours.ratings, scipy_mle(wins), atol=1e-3)

    def test_a_tie_is_worth_half_a_win_to_each_side(self):
        a, b, score = simulate(4, np.array([950, 1000, 1100.0]), 120, tie_share=0.4)
        with_ties = bradley_terry(a, b, score, n_contestants=3)
        # Replace each tie by one win each way and play every decisive match
        # twice: the win matrix doubles, so the MLE must not move.
        tie = score == 0.5
        dec_a, dec_b, dec_s = a[~tie], b[~tie], score[~tie]
        split_a = np.concatenate([dec_a, dec_a, a[tie], b[tie]])
        split_b = np.concatenate([dec_b, dec_b, b[tie], a[tie]])
        split_s = np.concatenate([dec_s, dec_s, np.ones(2 * tie.sum())])
        split = bradley_terry(split_a, split_b, split_s, n_contestants=3)
        assert tie.sum() > 20
        np.testing.assert_allclose(with_ties.ratings, split.ratings, atol=1e-6)

    def test_an_undefeated_contestant_gets_a_finite_rating_and_a_named_warning(self):
        wins = np.array([[0, 5, 4], [0, 0, 3], [0, 2, 0]], dtype=float)
        result = bradley_terry_from_wins(wins, names=["gpt", "kimi", "qwen"])
        assert np.all(np.isfinite(result.ratings))
        assert result.regularized
        assert result.ratings[0] == result.ratings.max()
        assert any("gpt is undefeated" in w for w in result.warnings)
        assert any("regularised" in w for w in result.warnings)

    def test_the_regularised_fit_satisfies_the_likelihood_equations_exactly(self):
        wins = np.array([[0, 50, 40, 30], [0, 0, 3, 4], [0, 2, 0, 5], [0, 3, 2, 0]], dtype=float)
        result = bradley_terry_from_wins(wins, regularization=0.01)
        padded = wins + 0.005 * (1 - np.eye(4))
        s = result.strengths
        expected_wins = ((padded + padded.T) * s[:, None] / (s[:, None] + s[None, :])).sum(axis=1)
        np.testing.assert_allclose(expected_wins, padded.sum(axis=1), atol=1e-9)
        assert result.converged

    def test_newton_finishing_steps_reach_the_same_maximum_as_mm(self, monkeypatch):
        module = sys.modules["ratings.stats.bradley_terry"]
        a, b, score = simulate(5, np.array([900, 1000, 1100, 1000, 950.0]), 500)
        by_mm = bradley_terry(a, b, score, n_contestants=5)
        monkeypatch.setattr(module, "MM_ITERATIONS_BEFORE_NEWTON", 3)
        by_newton = bradley_terry(a, b, score, n_contestants=5)
        assert by_newton.iterations < by_mm.iterations
        np.testing.assert_allclose(by_newton.ratings, by_mm.ratings, atol=1e-5)

    def test_a_winless_contestant_gets_a_finite_rating_and_a_named_warning(self):
        wins = np.array([[0, 5, 4], [1, 0, 3], [0, 0, 0]], dtype=float)
        result = bradley_terry_from_wins(wins, names=["gpt", "kimi", "llama"])
        assert np.all(np.isfinite(result.ratings)) and result.ratings[2] == result.ratings.min()
        assert any("llama is winless" in w for w in result.warnings)

    def test_a_disconnected_comparison_graph_is_reported(self):
        wins = np.zeros((4, 4))
        wins[0, 1], wins[1, 0], wins[2, 3], wins[3, 2] = 3, 1, 2, 2
        result = bradley_terry_from_wins(wins)
        assert np.all(np.isfinite(result.ratings))
        assert any("disconnected into 2 groups" in w for w in result.warnings)

    @settings(max_examples=10, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_recovers_a_known_ranking_from_simulated_matches(self, seed):
        truth = np.random.default_rng(seed).permutation(np.linspace(600, 1400, 9))
        a, b, score = simulate(seed, truth, 3000)
        result = bradley_terry(a, b, score, n_contestants=9)
        assert stats.kendalltau(result.ratings, truth).statistic >= 0.85

    @settings(max_examples=15, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_relabelling_contestants_permutes_the_ratings(self, seed):
        a, b, score = simulate(seed, np.array([950, 1000, 1100, 1020.0]), 200, tie_share=0.2)
        perm = np.random.default_rng(seed).permutation(4)
        base = bradley_terry(a, b, score, n_contestants=4)
        moved = bradley_terry(perm[a], perm[b], score, n_contestants=4)
        np.testing.assert_allclose(moved.ratings[perm], base.ratings, atol=1e-5)

    def test_it_rejects_bad_settings(self):
        with pytest.raises(ValueError, match="tol"):
            bradley_terry_from_wins(CITES, tol=0)
        with pytest.raises(ValueError, match="regularization"):
            bradley_terry_from_wins(CITES, regularization=0)
        with pytest.raises(ValueError, match="square"):
            bradley_terry_from_wins(np.ones((2, 3)))
        with pytest.raises(ValueError, match="no games"):
            bradley_terry_from_wins(np.zeros((3, 3)))


class TestBradleyTerryBootstrap:
    def test_its_intervals_bracket_the_fit_and_are_reproducible(self):
        a, b, score = simulate(1, np.array([800, 950, 1000, 1100, 1150.0]), 2000)
        first = bradley_terry_bootstrap(a, b, score, n_resamples=100, seed=4)
        again = bradley_terry_bootstrap(a, b, score, n_resamples=100, seed=4)
        assert np.all(first.ci_low < first.ratings) and np.all(first.ratings < first.ci_high)
        np.testing.assert_array_equal(first.ci_low, again.ci_low)
        assert first.samples.shape == (100, 5)
        np.testing.assert_allclose(first.samples.mean(axis=1), 1000.0)

    def test_its_spread_matches_a_naive_resample_the_match_list_bootstrap(self):
        a, b, score = simulate(2, np.array([900, 1000, 1100.0]), 600)
        fast = bradley_terry_bootstrap(a, b, score, n_resamples=300, seed=5)
        rng = np.random.default_rng(6)
        naive = []
        for _ in range(300):
            idx = rng.integers(0, a.size, a.size)
            naive.append(bradley_terry(a[idx], b[idx], score[idx], n_contestants=3).ratings)
        ratio = fast.samples.std(axis=0) / np.std(naive, axis=0)
        assert np.all((ratio > 0.8) & (ratio < 1.25))

    def test_more_matches_give_narrower_intervals(self):
        truth = np.array([900, 1000, 1100.0])
        small = bradley_terry_bootstrap(*simulate(3, truth, 300), n_resamples=100)
        large = bradley_terry_bootstrap(*simulate(3, truth, 30_000), n_resamples=100)
        assert np.all((large.ci_high - large.ci_low) < (small.ci_high - small.ci_low))

    def test_resamples_that_lose_connectivity_are_regularised_and_counted(self):
        # Contestant 2 won its only game: some resamples leave it undefeated.
        a = np.array([0, 1, 0, 1, 2, 0, 1])
        b = np.array([1, 0, 1, 0, 0, 2, 2])
        score = np.array([1, 1, 0, 1, 1, 0.5, 0.5])
        result = bradley_terry_bootstrap(a, b, score, n_resamples=200)
        assert result.n_regularized_resamples > 0
        assert np.all(np.isfinite(result.samples))
        assert any("needed regularisation" in w for w in result.warnings)
