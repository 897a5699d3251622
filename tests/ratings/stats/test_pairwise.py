# SPDX-License-Identifier: GPL-3.0-or-later
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ratings.stats import (
    as_matches,
    encode_matches,
    graph_warnings,
    intransitive_triads,
    ranking_kendall_tau,
    win_matrix,
    win_rate_matrix,
    win_rates,
)


class TestWinMatrix:
    def test_it_counts_wins_and_gives_half_a_win_to_each_side_of_a_tie(self):
        wins = win_matrix([0, 0, 1, 2], [1, 1, 2, 0], [1, 0.5, 0, 1], n_contestants=3)
        np.testing.assert_allclose(wins, [[0, 1.5, 0], [0.5, 0, 0], [1, 1, 0]])

    def test_win_rates_are_points_over_games(self):
        wins = win_matrix([0, 0, 1, 2], [1, 1, 2, 0], [1, 0.5, 0, 1], n_contestants=4)
        np.testing.assert_allclose(win_rates(wins), [1.5 / 3, 0.5 / 3, 2 / 2, np.nan])

    def test_the_win_rate_matrix_is_nan_where_two_contestants_never_met(self):
        wins = win_matrix([0, 0, 1], [1, 1, 0], [1, 1, 1], n_contestants=3)
        rates = win_rate_matrix(wins)
        assert rates[0, 1] == pytest.approx(2 / 3) and rates[1, 0] == pytest.approx(1 / 3)
        assert np.isnan(rates[0, 2])


class TestMatchValidation:
    def test_it_rejects_nonsense_match_lists(self):
        with pytest.raises(ValueError, match="empty"):
            as_matches([], [], [])
        with pytest.raises(ValueError, match="against itself"):
            as_matches([0, 1], [0, 2], [1, 1])
        with pytest.raises(ValueError, match="score must be"):
            as_matches([0], [1], [2])
        with pytest.raises(ValueError, match="same length"):
            as_matches([0, 1], [1], [1, 1])
        with pytest.raises(ValueError, match="integer contestant indices"):
            as_matches(["gpt", "kimi"], [1, 0], [1, 1])
        with pytest.raises(ValueError, match="n_contestants"):
            as_matches([0, 3], [1, 2], [1, 1], n_contestants=3)

    def test_it_encodes_a_b_tie_decisions_from_labels(self):
        m = encode_matches(
            ["gpt", "kimi", "qwen"],
            ["kimi", "qwen", "gpt"],
            ["A", "TIE", "B"],
            contestants=["qwen", "kimi", "gpt"],
        )
        assert m.names == ("qwen", "kimi", "gpt")
        np.testing.assert_array_equal(m.a, [2, 1, 0])
        np.testing.assert_array_equal(m.b, [1, 0, 2])
        np.testing.assert_array_equal(m.score, [1, 0.5, 0])
        with pytest.raises(ValueError, match="not one of"):
            encode_matches(["gpt"], ["kimi"], ["C"])
        with pytest.raises(ValueError, match="not in the contestant list"):
            encode_matches(["gpt"], ["llama"], ["A"], contestants=["gpt", "kimi"])


def brute_force_cycles(wins: np.ndarray) -> int:
    beats = wins > wins.T
    count = 0
    for i, j, k in itertools.combinations(range(wins.shape[0]), 3):
        if (beats[i, j] and beats[j, k] and beats[k, i]) or (beats[i, k] and beats[k, j] and beats[j, i]):
            count += 1
    return count


class TestIntransitiveTriads:
    def test_rock_paper_scissors_is_one_cycle(self):
        wins = np.array([[0, 3, 0], [0, 0, 3], [3, 0, 0]])
        result = intransitive_triads(wins)
        assert result.count == 1 and result.triads == [(0, 1, 2)]

    def test_a_transitive_order_has_no_cycles(self):
        wins = np.triu(np.full((5, 5), 4.0), k=1) + np.tril(np.ones((5, 5)), k=-1)
        assert intransitive_triads(wins).count == 0

    def test_a_tied_pair_makes_no_edge(self):
        wins = np.array([[0, 2, 0], [2, 0, 3], [3, 0, 0]])
        assert intransitive_triads(wins).count == 0

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000), k=st.integers(3, 8))
    def test_it_matches_a_brute_force_count_on_random_tournaments(self, seed, k):
        rng = np.random.default_rng(seed)
        wins = rng.integers(0, 4, size=(k, k)).astype(float)
        np.fill_diagonal(wins, 0)
        result = intransitive_triads(wins)
        assert result.count == brute_force_cycles(wins) == len(result.triads)


class TestRankingKendallTau:
    def test_it_matches_scipy(self):
        a, b = [1307, 1157, 1115, 1093, 1037], [1290, 1120, 1150, 1080, 1001]
        tau, p = ranking_kendall_tau(a, b)
        assert (tau, p) == pytest.approx(tuple(stats.kendalltau(a, b)))
        assert tau == pytest.approx(0.8)


class TestGraphWarnings:
    def test_it_names_undefeated_winless_and_absent_contestants(self):
        wins = np.array([[0, 2, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
        wins[1, 2] = 1
        notes, needs = graph_warnings(wins, ["gpt", "kimi", "qwen", "llama"])
        text = " ".join(notes)
        assert needs
        assert "gpt is undefeated" in text
        assert "qwen is winless" in text
        assert "llama has no matches" in text
        assert "disconnected" in text

    def test_it_is_quiet_for_a_strongly_connected_tournament(self):
        notes, needs = graph_warnings(np.array([[0, 2, 1], [1, 0, 1], [1, 1, 0]], dtype=float))
        assert notes == [] and not needs
