"""Tournament leaderboards: the ratings app's one leaderboard, plus HumorRank's feature tallies.

The numbers (Bradley–Terry with intervals, Stable Elo, win rates, position
figures) come from ``ratings.leaderboards``, the same computation the protocol
report and the export use. Only the judging-specific part lives here: the
share of a contestant's wins carrying each mechanism or delivery feature of the
closed vocabulary, and of its losses carrying each failure feature.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from ratings.stats.bradley_terry import bradley_terry
from ratings.stats.features import feature_tallies
from ratings.stats.leaderboard import Leaderboard, MatchVerdict, Standing, printed_row

from .prompts.builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS


@dataclass(frozen=True)
class StandingRow:
    """A leaderboard row as the tournament page prints it."""

    standing: Standing
    printed: list
    win_features: dict[str, float]
    loss_features: dict[str, float]


def current_ratings(names: Sequence[str], verdicts: Sequence[MatchVerdict]) -> list[float]:
    """Bradley–Terry ratings in ``names`` order (1000 for everyone before any verdict); for scheduling."""
    if not verdicts:
        return [1000.0] * len(names)
    index = {n: i for i, n in enumerate(names)}
    a = [index[v.first] for v in verdicts]
    b = [index[v.second] for v in verdicts]
    fit = bradley_terry(a, b, [v.score for v in verdicts], n_contestants=len(names))
    return [float(r) for r in fit.ratings]


def standing_rows(board: Leaderboard, verdicts: Sequence[MatchVerdict]) -> list[StandingRow]:
    """The board's rows in rank order, each with its contestant's feature shares."""
    tallies = feature_tallies(verdicts)
    rows = []
    for s in board.standings:
        wins = (
            {f: tallies.win_share(s.name, f) for f in (*HUMOR_MECHANISMS, *DELIVERY_FEATURES)}
            if tallies.wins[s.name]
            else {}
        )
        losses = {f: tallies.loss_share(s.name, f) for f in FAILURE_FEATURES} if tallies.losses[s.name] else {}
        rows.append(StandingRow(standing=s, printed=printed_row(s), win_features=wins, loss_features=losses))
    return rows
