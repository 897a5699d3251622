"""Leaderboards from pairwise verdicts, computed by ``ratings.stats`` (Bradley–Terry, Stable Elo, win rates).

Only the translation lives here: contestant names to indices, verdicts to
scores, and the HumorRank feature tallies (share of a contestant's wins
carrying each mechanism or delivery feature, share of its losses carrying
each failure feature).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ratings.stats.bradley_terry import bradley_terry, bradley_terry_bootstrap
from ratings.stats.elo import stable_elo
from ratings.stats.features import feature_tallies
from ratings.stats.pairwise import win_matrix, win_rates

from .prompts.builtin import DELIVERY_FEATURES, FAILURE_FEATURES, HUMOR_MECHANISMS


@dataclass(frozen=True)
class Verdict:
    first: str
    second: str
    score: float  # 1: first won, 0.5: tie, 0: second won
    features: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Standing:
    name: str
    rating: float
    ci_low: float
    ci_high: float
    elo_mean: float
    elo_sd: float
    win_rate: float
    games: int
    wins: float
    win_features: dict[str, float]
    loss_features: dict[str, float]


def current_ratings(names: Sequence[str], verdicts: Sequence[Verdict]) -> list[float]:
    """Bradley–Terry ratings in ``names`` order (1000 for everyone before any verdict)."""
    if not verdicts:
        return [1000.0] * len(names)
    index = {n: i for i, n in enumerate(names)}
    a = [index[v.first] for v in verdicts]
    b = [index[v.second] for v in verdicts]
    fit = bradley_terry(a, b, [v.score for v in verdicts], n_contestants=len(names))
    return [float(r) for r in fit.ratings]


def leaderboard(
    names: Sequence[str], verdicts: Sequence[Verdict], *, n_resamples: int = 100, n_orderings: int = 5, seed: int = 0
) -> tuple[list[Standing], list[str]]:
    """Standings sorted by BT rating, and the fit's warnings."""
    if not verdicts:
        return [], []
    index = {n: i for i, n in enumerate(names)}
    a = np.array([index[v.first] for v in verdicts])
    b = np.array([index[v.second] for v in verdicts])
    s = np.array([v.score for v in verdicts])
    k = len(names)
    bt = bradley_terry_bootstrap(a, b, s, n_contestants=k, n_resamples=n_resamples, seed=seed)
    elo = stable_elo(a, b, s, n_contestants=k, n_orderings=n_orderings, seed=seed)
    wins = win_matrix(a, b, s, n_contestants=k)
    rates = win_rates(wins)
    games = (wins + wins.T).sum(axis=1)
    tallies = _feature_tallies(names, verdicts)
    standings = [
        Standing(
            name=name,
            rating=float(bt.ratings[i]),
            ci_low=float(bt.ci_low[i]),
            ci_high=float(bt.ci_high[i]),
            elo_mean=float(elo.mean[i]),
            elo_sd=float(elo.sd[i]) if np.isfinite(elo.sd[i]) else float("nan"),
            win_rate=float(rates[i]),
            games=int(games[i]),
            wins=float(wins[i].sum()),
            win_features=tallies[name]["win"],
            loss_features=tallies[name]["loss"],
        )
        for i, name in enumerate(names)
    ]
    standings.sort(key=lambda row: -row.rating)
    return standings, list(bt.warnings)


def _feature_tallies(names: Sequence[str], verdicts: Sequence[Verdict]) -> dict[str, dict[str, dict[str, float]]]:
    """Per contestant, the share of its wins (losses) whose verdict names each feature of the closed vocabulary."""
    tallies = feature_tallies(verdicts)
    return {
        n: {
            "win": {f: tallies.win_share(n, f) for f in (*HUMOR_MECHANISMS, *DELIVERY_FEATURES)}
            if tallies.wins[n]
            else {},
            "loss": {f: tallies.loss_share(n, f) for f in FAILURE_FEATURES} if tallies.losses[n] else {},
        }
        for n in names
    }
