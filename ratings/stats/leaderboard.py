# SPDX-License-Identifier: GPL-3.0-or-later
"""The leaderboard of a set of pairwise verdicts: the one computation behind every page, report and export.

Each row carries the Bradley–Terry rating with its percentile bootstrap
interval, the share of points won, Stable Elo (mean and SD over random replays
of the match order) and the number of games. Beside the rows, the judge's
position behaviour: how often the candidate shown first won, and, for matches
judged in both orders, how often the verdict survived the swap.

Same verdicts, same numbers, wherever they are shown:

- contestants are indexed in sorted name order (only those that played);
- the verdicts are sorted (first, second, score, match, shown first) before
  anything random happens, so the order a database returned them in does not
  move Stable Elo;
- one seed, given by the caller (the seed of the study holding the matches);
- rows are ranked by rating; equal ratings (to the printed 0.1) share a rank, listed by name.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from ._validation import DEFAULT_SEED
from .bradley_terry import bradley_terry_bootstrap
from .elo import stable_elo
from .pairwise import intransitive_triads, win_matrix, win_rates

#: Resamples behind published intervals. With the 100 the HumorRank paper used, the
#: 95% interval covered the true strength noticeably less often (bench/bench_bt_coverage.py).
DEFAULT_RESAMPLES = 1000
#: Random replays of the match order behind Stable Elo.
DEFAULT_ORDERINGS = 5
#: A judge's first-position rate is flagged when a two-sided binomial test against 50%
#: gives p below this, ...
POSITION_P_VALUE = 0.01
#: ... or when, over at least POSITION_MIN_DECISIVE decisive verdicts, it lies outside this band.
POSITION_BAND = (0.40, 0.60)
POSITION_MIN_DECISIVE = 50


@dataclass(frozen=True)
class MatchVerdict:
    """One verdict: ``score`` is 1 when ``first`` won, 0.5 for a tie, 0 when ``second`` won.

    ``match`` names the comparison (the same for both orders of it); ``shown_first`` is
    the contestant the judge saw first, when known.
    """

    first: str
    second: str
    score: float
    match: str = ""
    shown_first: str | None = None
    features: dict[str, list[str]] = field(default_factory=dict, compare=False)

    @property
    def winner(self) -> str | None:
        return None if self.score == 0.5 else (self.first if self.score == 1.0 else self.second)


@dataclass(frozen=True)
class Standing:
    rank: int
    name: str
    rating: float
    ci_low: float
    ci_high: float
    win_rate: float
    games: float
    wins: float
    elo_mean: float
    elo_sd: float  # NaN with a single replay


@dataclass(frozen=True)
class PositionFigures:
    """How the order of presentation relates to the verdicts."""

    n_decisive: int  # verdicts with a winner and a known first-shown candidate
    first_wins: int
    first_rate: float | None
    p_value: float | None  # two-sided binomial test of first_rate = 0.5
    n_both_orders: int  # comparisons judged in both orders
    n_consistent: int  # ... whose verdict named the same winner (or tie) both times
    consistency: float | None
    warning: str | None


@dataclass
class Leaderboard:
    standings: list[Standing]
    n_matches: int
    n_resamples: int
    n_orderings: int
    seed: int | None
    position: PositionFigures
    names: list[str]  # sorted; the index order of ``wins``
    wins: np.ndarray
    intransitive_triads: int
    warnings: list[str] = field(default_factory=list)

    @property
    def ranking(self) -> list[str]:
        return [s.name for s in self.standings]

    def standing(self, name: str) -> Standing:
        return next(s for s in self.standings if s.name == name)


def _sort_key(v: MatchVerdict) -> tuple[Any, ...]:
    return (v.first, v.second, v.score, str(v.match), v.shown_first or "")


#: The outcome of a tie in :func:`order_consistency` groups (a tuple never equals a contestant's name).
TIED = ("tie",)


@dataclass(frozen=True)
class OrderConsistency:
    """How often one judge's verdict on a comparison survived swapping the order it was shown in."""

    n_pairs: int = 0  # comparisons answered usably in both orders
    consistent: int = 0  # ... whose answers all named the same candidate (or a tie every time)
    incomplete: int = 0  # comparisons shown in both orders with an unusable answer on a side: left out

    @property
    def value(self) -> float | None:
        return self.consistent / self.n_pairs if self.n_pairs else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "n_pairs": self.n_pairs,
            "consistent": self.consistent,
            "incomplete": self.incomplete,
        }


def order_consistency(groups: Iterable[Mapping[Any, Sequence[Hashable | None]]]) -> OrderConsistency:
    """Position consistency: the one definition every page, report and export shows.

    A group is one comparison — one item in one trial — mapping each order it was
    shown in to the outcomes given in that order: the winning candidate, :data:`TIED`,
    or None for an unusable answer (unparseable, failed). A comparison shown in at
    least two orders is a pair; it is consistent when every outcome names the same
    candidate (or a tie every time). A pair with an unusable side is counted as
    incomplete and left out of the share. Every trial is its own comparison, so a
    judge asked three times in both orders contributes three pairs per item.
    """
    pairs = consistent = incomplete = 0
    for group in groups:
        if len(group) < 2:
            continue
        outcomes = [outcome for given in group.values() for outcome in given]
        if any(outcome is None for outcome in outcomes):
            incomplete += 1
            continue
        pairs += 1
        consistent += len(set(outcomes)) == 1
    return OrderConsistency(n_pairs=pairs, consistent=consistent, incomplete=incomplete)


def verdict_consistency(verdicts: Sequence[MatchVerdict]) -> OrderConsistency:
    """:func:`order_consistency` of verdicts whose ``match`` names the comparison (one per item and trial)."""
    groups: dict[str, dict[str, list[Hashable]]] = {}
    for v in verdicts:
        if v.match and v.shown_first in (v.first, v.second):
            groups.setdefault(str(v.match), {}).setdefault(v.shown_first, []).append(v.winner or TIED)
    return order_consistency(groups.values())


def _position_advice(n_both_orders: int, n_consistent: int) -> str:
    """What to do about a position bias, given whether the matches were already judged in both orders."""
    if not n_both_orders:
        return (
            "the ranking may reflect the order of presentation more than the jokes. "
            "Judge both orders (A/B and B/A) and check the consistency."
        )
    # Asking for both orders again would change nothing: the swap is already in the ratings.
    return (
        f"the matches were judged in both orders, so each order counts equally in the ratings, but only "
        f"{n_consistent} of {n_both_orders} pairs named the same winner both times: single verdicts follow "
        "the order, so read close ratings as ties."
    )


def competition_ranks(ratings: Sequence[float]) -> list[int]:
    """Each rating's rank, equal ratings (as printed, to 0.1) sharing one: 1, 2, 2, 4 (standard competition)."""
    shown = [round(r, 1) for r in ratings]
    return [1 + sum(other > mine for other in shown) for mine in shown]


def position_figures(verdicts: Sequence[MatchVerdict], consistency: OrderConsistency | None = None) -> PositionFigures:
    """First-position win rate (with its binomial test) and both-orders consistency.

    ``consistency`` is given by a caller that knows more comparisons than the verdicts
    ranked (every trial, where the ranking counts the earliest); otherwise it is read
    from the verdicts.
    """
    decisive = [v for v in verdicts if v.winner is not None and v.shown_first in (v.first, v.second)]
    first_wins = sum(v.winner == v.shown_first for v in decisive)
    n = len(decisive)
    rate = first_wins / n if n else None
    p_value = float(scipy_stats.binomtest(first_wins, n, 0.5).pvalue) if n else None
    both = consistency if consistency is not None else verdict_consistency(verdicts)
    warning = None
    if rate is not None:
        low, high = POSITION_BAND
        outside = n >= POSITION_MIN_DECISIVE and not low <= rate <= high
        if p_value < POSITION_P_VALUE or outside:
            warning = (
                f"Position bias: the candidate shown first won {first_wins} of {n} decisive verdicts "
                f"({100 * rate:.0f}%, binomial p = {p_value:.2g}); " + _position_advice(both.n_pairs, both.consistent)
            )
    return PositionFigures(
        n_decisive=n,
        first_wins=first_wins,
        first_rate=rate,
        p_value=p_value,
        n_both_orders=both.n_pairs,
        n_consistent=both.consistent,
        consistency=both.value,
        warning=warning,
    )


def leaderboard(
    verdicts: Sequence[MatchVerdict],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    n_orderings: int = DEFAULT_ORDERINGS,
    confidence: float = 0.95,
    seed: int | None = DEFAULT_SEED,
    consistency: OrderConsistency | None = None,
) -> Leaderboard:
    """The leaderboard of the verdicts (see the module docstring for what makes it reproducible).

    ``consistency``: the judge's position consistency when the caller read it over more
    comparisons than the verdicts ranked (see :func:`position_figures`).
    """
    ordered = sorted(verdicts, key=_sort_key)
    if not ordered:
        raise ValueError("there are no verdicts to rank")
    names = sorted({v.first for v in ordered} | {v.second for v in ordered})
    if len(names) < 2:
        raise ValueError("a leaderboard needs at least two contestants")
    index = {n: i for i, n in enumerate(names)}
    a = np.array([index[v.first] for v in ordered])
    b = np.array([index[v.second] for v in ordered])
    s = np.array([v.score for v in ordered], dtype=float)
    k = len(names)
    bt = bradley_terry_bootstrap(
        a, b, s, n_contestants=k, names=names, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    elo = stable_elo(a, b, s, n_contestants=k, names=names, n_orderings=n_orderings, seed=seed)
    wins = win_matrix(a, b, s, n_contestants=k)
    rates = win_rates(wins)
    games = (wins + wins.T).sum(axis=1)
    order = sorted(range(k), key=lambda i: (-bt.ratings[i], names[i]))
    # Equal ratings rank as ties; the name only orders the tied rows on the page.
    ranks = competition_ranks([float(bt.ratings[i]) for i in order])
    standings = [
        Standing(
            rank=rank,
            name=names[i],
            rating=float(bt.ratings[i]),
            ci_low=float(bt.ci_low[i]),
            ci_high=float(bt.ci_high[i]),
            win_rate=float(rates[i]),
            games=float(games[i]),
            wins=float(wins[i].sum()),
            elo_mean=float(elo.mean[i]),
            elo_sd=float(elo.sd[i]) if math.isfinite(elo.sd[i]) else math.nan,
        )
        for rank, i in zip(ranks, order, strict=True)
    ]
    triads = intransitive_triads(wins)
    warnings = list(bt.warnings)
    if triads.count:
        warnings.append(f"{triads.count} intransitive triad(s) (A beats B beats C beats A) in the majority results")
    position = position_figures(ordered, consistency)
    if position.warning:
        warnings.insert(0, position.warning)
    return Leaderboard(
        standings=standings,
        n_matches=len(ordered),
        n_resamples=n_resamples,
        n_orderings=n_orderings,
        seed=seed,
        position=position,
        names=names,
        wins=wins,
        intransitive_triads=triads.count,
        warnings=warnings,
    )


#: The columns every surface prints, in this order, with the rounding of :func:`printed_row`.
PRINTED_COLUMNS = (
    "rank",
    "contestant",
    "BT rating",
    "95% CI low",
    "95% CI high",
    "win rate %",
    "games",
    "Stable Elo mean",
    "Stable Elo SD",
)


def printed_row(s: Standing) -> list[Any]:
    """A standing as every page, report and export prints it (same digits everywhere)."""

    def one(x: float) -> float | None:
        return round(x, 1) if math.isfinite(x) else None

    return [
        s.rank,
        s.name,
        one(s.rating),
        one(s.ci_low),
        one(s.ci_high),
        one(100 * s.win_rate) if math.isfinite(s.win_rate) else None,
        s.games,
        one(s.elo_mean),
        one(s.elo_sd),
    ]


def position_summary(p: PositionFigures) -> str:
    """One line on position behaviour, printed under every leaderboard."""
    if p.first_rate is None:
        first = "first-shown win rate: unknown (no decisive verdict with a recorded order)"
    else:
        first = (
            f"first-shown candidate won {p.first_wins} of {p.n_decisive} decisive verdicts ({100 * p.first_rate:.1f}%)"
        )
    if p.consistency is None:
        both = "position consistency: not measured (no comparison judged in both orders)"
    else:
        both = (
            f"position consistency {100 * p.consistency:.1f}% "
            f"({p.n_consistent} of {p.n_both_orders} comparisons judged in both orders kept their verdict)"
        )
    return f"{first}; {both}."
