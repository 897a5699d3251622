"""The HumorRank report's judge sections: leaderboards, agreement between rankings, and features."""

from __future__ import annotations

import itertools
import math
from typing import Any

from .. import plots
from ..stats import intransitive_triads, ranking_kendall_tau, win_rate_matrix
from ..stats.features import LOSS_GROUPS, WIN_GROUPS, feature_tallies
from ..stats.leaderboard import PRINTED_COLUMNS, printed_row
from .base import Figure, Section, Table, rounded
from .humorrank_rankings import Ranking

(LOSS_GROUP,) = LOSS_GROUPS


def leaderboard_section(rankings: list[Ranking]) -> Section:
    # The same printed row as the tournament page and the export (ratings.stats.leaderboard.printed_row).
    rows = [[r.label, *printed_row(s)] for r in rankings for s in r.board.standings]
    position_rows = []
    for r in rankings:
        p = r.board.position
        position_rows.append(
            [
                r.label,
                p.n_decisive,
                p.first_wins,
                rounded(100 * p.first_rate, 1) if p.first_rate is not None else None,
                rounded(p.p_value, 4),
                p.n_both_orders,
                rounded(100 * p.consistency, 1) if p.consistency is not None else None,
                "position bias" if p.warning else "",
            ]
        )
    series = [
        {
            "label": r.label,
            "names": r.result["ranking"],
            "ratings": [r.result["bradley_terry"][n]["rating"] for n in r.result["ranking"]],
            "ci_low": [r.result["bradley_terry"][n]["ci_low"] for n in r.result["ranking"]],
            "ci_high": [r.result["bradley_terry"][n]["ci_high"] for n in r.result["ranking"]],
        }
        for r in rankings
    ]
    figures = [Figure("leaderboard", "Bradley–Terry ratings with 95% bootstrap intervals", plots.leaderboard(series))]
    for n, r in enumerate(rankings, start=1):
        rates = win_rate_matrix(r.wins)
        order = [r.names.index(name) for name in r.result["ranking"]]
        matrix = [[None if math.isnan(rates[i, j]) else float(rates[i, j]) for j in order] for i in order]
        figures.append(
            Figure(
                f"win_rates_{n}",
                f"Win-rate matrix — {r.label}",
                plots.win_rate_heatmap(r.result["ranking"], matrix, title=f"Win rates — {r.label}"),
            )
        )
    return Section(
        title="Leaderboard",
        text=(
            "One leaderboard per judge and tournament, and one from the people's votes in each human check. Bradley–Terry ratings on the Elo scale (centred on 1000; "
            "ties count half a win each), 95% percentile intervals from resampling the matches, the share of "
            "points won (in %), and Stable Elo (K = 32) as the mean and spread over random replays of the match "
            "order. The tournament page and the export print the same numbers; each ranking is seeded by the "
            "study holding its verdicts."
        ),
        tables=[
            Table(
                key="leaderboard",
                title="Leaderboard per judge",
                columns=["judge · tournament", *PRINTED_COLUMNS],
                rows=rows,
            ),
            Table(
                key="position",
                title="Order of presentation",
                columns=[
                    "judge · tournament",
                    "decisive verdicts",
                    "first-shown wins",
                    "first-shown win rate %",
                    "binomial p (vs 50%)",
                    "comparisons judged in both orders",
                    "position consistency %",
                    "warning",
                ],
                rows=position_rows,
                note=(
                    "How often the candidate shown first won, and, where a comparison was judged in both orders, "
                    "how often the verdict named the same winner (or a tie) both times. A rate far from 50% "
                    "(binomial p < 0.01) is flagged: the ranking may follow the order of presentation."
                ),
            ),
        ],
        figures=figures,
    )


def agreement_section(rankings: list[Ranking]) -> tuple[Section, list[tuple[str, Any]]]:
    tau_rows = []
    for x, y in itertools.combinations(rankings, 2):
        common = sorted(set(x.names) & set(y.names))
        if len(common) < 2:
            continue
        bx = [x.result["bradley_terry"][n]["rating"] for n in common]
        by = [y.result["bradley_terry"][n]["rating"] for n in common]
        tau, p = ranking_kendall_tau(bx, by)
        tau_rows.append([x.label, y.label, len(common), round(tau, 4), round(p, 4) if math.isfinite(p) else None])
    triad_rows = []
    for r in rankings:
        triads = intransitive_triads(r.wins)
        listed = "; ".join(" > ".join(r.names[i] for i in (a, b, c, a)) for a, b, c in triads.triads[:20])
        triad_rows.append([r.label, triads.count, listed])
    summary = [("Cross-judge Kendall τ (first two rankings)", tau_rows[0][3])] if tau_rows else []
    section = Section(
        title="Agreement between judges and transitivity",
        text=(
            "Kendall's τ-b between two rankings' Bradley–Terry ratings over the contestants both ranked. "
            "A triad is intransitive when, by majority of their matches, A beats B, B beats C and C beats A."
        ),
        tables=[
            Table(
                key="cross_judge_tau",
                title="Kendall τ between rankings",
                columns=["ranking 1", "ranking 2", "contestants", "Kendall τ", "p-value"],
                rows=tau_rows,
                note="" if tau_rows else "Needs two rankings (two judges, or two tournaments).",
            ),
            Table(
                key="intransitive_triads",
                title="Intransitive triads per ranking",
                columns=["judge · tournament", "intransitive triads", "cycles (first 20)"],
                rows=triad_rows,
            ),
        ],
    )
    return section, summary


def _feature_shares(r: Ranking) -> tuple[list[str], list[list[float | None]], int]:
    """Columns for every feature the verdicts name (not only the closed vocabulary), a row per contestant."""
    tallies = feature_tallies(r.verdicts, win_groups=WIN_GROUPS, loss_groups=(LOSS_GROUP,))
    win_columns = [f for g in WIN_GROUPS for f in sorted(tallies.seen[g])]
    loss_columns = sorted(tallies.seen[LOSS_GROUP])
    rows = [
        [rounded(tallies.win_share(name, f), 4) for f in win_columns]
        + [rounded(tallies.loss_share(name, f), 4) for f in loss_columns]
        for name in r.result["ranking"]
    ]
    columns = [f"win: {f}" for f in win_columns] + [f"loss: {f}" for f in loss_columns]
    return columns, rows, tallies.with_features


def feature_section(rankings: list[Ranking], notes: list[str]) -> Section:
    tables, figures = [], []
    for n, r in enumerate(rankings, start=1):
        columns, rows, with_features = _feature_shares(r)
        if not with_features:
            notes.append(f"{r.label}: the verdicts carry no feature lists, so there is no feature table for it.")
            continue
        names = r.result["ranking"]
        tables.append(
            Table(
                key=f"features_{n}",
                title=f"Features — {r.label}",
                columns=["contestant", *columns],
                rows=[[name, *row] for name, row in zip(names, rows, strict=True)],
                note="win: share of the contestant's wins citing the feature; loss: share of its losses.",
            )
        )
        figures.append(
            Figure(
                f"features_{n}",
                f"Feature heatmap — {r.label}",
                plots.feature_heatmap(names, columns, rows, judge=r.judge),
            )
        )
    return Section(
        title="What wins and what loses",
        text=(
            "From the judges' feature lists: for each contestant, the share of its wins whose verdict names "
            "each humour mechanism or delivery feature, and the share of its losses naming each failure."
        ),
        tables=tables,
        figures=figures,
    )
