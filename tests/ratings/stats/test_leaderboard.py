"""The one leaderboard: reproducible numbers, one tie order, position figures."""

import random

import pytest

from ratings.stats.leaderboard import MatchVerdict, competition_ranks, leaderboard, position_figures, printed_row


def verdicts(n_rounds=6, seed=3):
    rng = random.Random(seed)
    names = ["ada", "bo", "cy", "di"]
    out = []
    for r in range(n_rounds):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                out.append(MatchVerdict(a, b, rng.choice([1.0, 0.5, 0.0]), match=f"{r}{a}{b}", shown_first=a))
    return out


class TestReproducible:
    def test_the_order_the_verdicts_come_in_changes_no_digit(self):
        given = verdicts()
        shuffled = given[:]
        random.Random(1).shuffle(shuffled)
        first, second = leaderboard(given, seed=5), leaderboard(shuffled, seed=5)
        assert [printed_row(s) for s in first.standings] == [printed_row(s) for s in second.standings]
        assert first.standings == second.standings

    def test_equal_ratings_share_a_rank_and_are_listed_by_name(self):
        board = leaderboard([MatchVerdict("zed", "amy", 1.0), MatchVerdict("amy", "zed", 1.0)], n_resamples=20)
        assert board.ranking == ["amy", "zed"]
        assert [s.rank for s in board.standings] == [1, 1]

    def test_nine_contestants_that_all_tie_are_all_ranked_first(self):
        names = [f"c{n}" for n in range(9, 0, -1)]
        ties = [MatchVerdict(a, b, 0.5) for i, a in enumerate(names) for b in names[i + 1 :]]
        board = leaderboard(ties, n_resamples=20)
        assert {printed_row(s)[2] for s in board.standings} == {1000.0}
        assert [printed_row(s)[:2] for s in board.standings] == [[1, f"c{n}"] for n in range(1, 10)]

    def test_a_tie_below_the_leader_skips_the_next_rank(self):
        assert competition_ranks([1100.0, 1000.04, 999.96, 900.0]) == [1, 2, 2, 4]

    def test_it_defaults_to_a_thousand_resamples(self):
        assert leaderboard(verdicts()).n_resamples == 1000


class TestPosition:
    def test_a_judge_that_always_picks_the_first_shown_is_flagged(self):
        biased = [MatchVerdict(a, b, 1.0, match=f"m{n}", shown_first=a) for n, (a, b) in enumerate([("x", "y")] * 12)]
        figures = position_figures(biased)
        assert (figures.first_wins, figures.n_decisive, figures.first_rate) == (12, 12, 1.0)
        assert figures.p_value < 0.01
        assert figures.warning.startswith("Position bias: the candidate shown first won 12 of 12")
        assert leaderboard(biased, n_resamples=20).warnings[0] == figures.warning

    def test_a_judge_asked_in_one_order_is_told_to_judge_both(self):
        biased = [MatchVerdict("x", "y", 1.0, match=f"m{n}", shown_first="x") for n in range(12)]
        assert "Judge both orders (A/B and B/A)" in position_figures(biased).warning

    def test_a_judge_already_asked_in_both_orders_is_not_told_to_judge_both(self):
        # Each match judged twice, and each time the candidate shown first won.
        both = [
            MatchVerdict("x", "y", 1.0 if first == "x" else 0.0, match=f"m{n}", shown_first=first)
            for n in range(12)
            for first in ("x", "y")
        ]
        warning = position_figures(both).warning
        assert warning.startswith("Position bias: the candidate shown first won 24 of 24")
        assert "Judge both orders" not in warning
        assert "judged in both orders" in warning
        assert "only 0 of 12 pairs named the same winner both times" in warning

    def test_a_balanced_judge_is_not_flagged(self):
        balanced = [MatchVerdict("x", "y", 1.0 if n % 2 else 0.0, match=f"m{n}", shown_first="x") for n in range(40)]
        assert position_figures(balanced).warning is None

    def test_consistency_counts_comparisons_judged_in_both_orders(self):
        both = [
            MatchVerdict("x", "y", 1.0, match="m1", shown_first="x"),
            MatchVerdict("x", "y", 1.0, match="m1", shown_first="y"),  # same winner after the swap
            MatchVerdict("x", "y", 1.0, match="m2", shown_first="x"),
            MatchVerdict("x", "y", 0.0, match="m2", shown_first="y"),  # followed the position
            MatchVerdict("x", "y", 0.5, match="m3", shown_first="x"),  # one order only
        ]
        figures = position_figures(both)
        assert (figures.n_both_orders, figures.n_consistent) == (2, 1)
        assert figures.consistency == pytest.approx(0.5)
