"""HumorRank rankings: one judge's verdicts in one tournament, and the leaderboard they give.

The contest study's tournaments are match studies (template key
``humorrank-matches``) that name it in ``config["source_study"]``; verdicts are
read from the annotation models only (the ratings app never imports the judging
app). A judge's verdicts in two tournaments (round robin and Swiss) are two rankings.
Which verdicts count and the numbers they give are ``ratings.leaderboards``' — the
tournament page and the export show the same leaderboard to the digit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.models import Rater, Study
from annotation.protocols.humorrank import MATCHES, SOURCE_LINK

from ..leaderboards import judge_verdicts
from ..pairwise import consistency_over, study_judge_comparisons, winner_of
from ..reports import leaderboard_dict
from ..stats import Leaderboard, MatchVerdict, OrderConsistency, leaderboard


@dataclass
class Verdict:
    prompt_id: str
    first: str
    second: str
    score: float  # 1 first won, 0.5 tie, 0 second won
    features: dict[str, list[str]] = field(default_factory=dict)
    match: str = ""  # the same for both orders of one comparison
    shown_first: str | None = None

    @property
    def pair(self) -> tuple[str, frozenset[str]]:
        return self.prompt_id, frozenset((self.first, self.second))

    @property
    def winner(self) -> str:
        return winner_of(self.score, self.first, self.second)


@dataclass
class Ranking:
    """One judge's verdicts in one tournament, and the leaderboard they give."""

    label: str
    judge: str
    tournament: str
    verdicts: list[Verdict]
    result: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    wins: np.ndarray | None = None
    seed: int | None = None  # the seed of the study holding the verdicts
    board: Leaderboard | None = None
    # The judge's position consistency over every trial (``ratings.pairwise``); None: read from the verdicts.
    consistency: OrderConsistency | None = None


def prompt_verdicts(found: list[MatchVerdict], prompt_of_item: dict[int, str]) -> list[Verdict]:
    """A judge's verdicts (``ratings.leaderboards.judge_verdicts``) named by the prompt each match was about."""
    return [
        Verdict(
            prompt_of_item.get(int(v.match), v.match),
            v.first,
            v.second,
            v.score,
            v.features,
            match=v.match,
            shown_first=v.shown_first,
        )
        for v in found
    ]


def match_rankings(source: Study) -> list[Ranking]:
    prompt_ids = dict(source.items.values_list("pk", "external_id"))
    rankings = []
    for match_study in Study.objects.filter(protocol=MATCHES, **{f"config__{SOURCE_LINK}": source.slug}).order_by("pk"):
        prompt_of = dict(match_study.items.values_list("pk", "metadata__prompt_item"))
        by_rater = judge_verdicts(study=match_study)
        rater_names = dict(Rater.objects.filter(pk__in=list(by_rater)).values_list("pk", "name"))
        schedule = match_study.config.get("schedule", "")
        tournament = match_study.config.get("tournament") or match_study.name
        prompt_id_of = {pk: prompt_ids.get(item, str(item)) for pk, item in prompt_of.items()}
        comparisons = study_judge_comparisons(study=match_study, rater_ids=list(by_rater))
        for rater_id, found in sorted(by_rater.items()):
            judge = rater_names[rater_id]
            label = f"{judge} · {tournament}" + (f" ({schedule.replace('_', ' ')})" if schedule else "")
            rankings.append(
                Ranking(
                    label=label,
                    judge=judge,
                    tournament=tournament,
                    verdicts=prompt_verdicts(found, prompt_id_of),
                    seed=match_study.seed,
                    consistency=consistency_over(comparisons.get(rater_id, {})),
                )
            )
    return rankings


def fit(ranking: Ranking, analyses: dict[str, Any], seed: int) -> None:
    """Fill in the ranking's leaderboard; seeded by the study holding its matches when known, else ``seed``."""
    board = leaderboard(
        [MatchVerdict(v.first, v.second, v.score, match=v.match, shown_first=v.shown_first) for v in ranking.verdicts],
        n_resamples=analyses["bootstrap_resamples"],
        n_orderings=analyses["elo_orderings"],
        seed=ranking.seed if ranking.seed is not None else seed,
        consistency=ranking.consistency,
    )
    ranking.board = board
    ranking.result = leaderboard_dict(board)
    ranking.names = board.names
    ranking.wins = board.wins
