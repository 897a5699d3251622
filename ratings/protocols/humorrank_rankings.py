"""HumorRank rankings: one judge's verdicts in one tournament, and the leaderboard they give.

The contest study's tournaments are match studies (template key
``humorrank-matches``) that name it in ``config["source_study"]``; verdicts are
read from the annotation models only (the ratings app never imports the judging
app). A judge's verdicts in two tournaments (round robin and Swiss) are two rankings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.models import Judgment, Study
from annotation.protocols.humorrank import MATCHES, SOURCE_LINK
from annotation.task_types import TIE

from ..selectors import JUDGE_KINDS
from ..services import pairwise_report
from ..stats import win_matrix


@dataclass
class Verdict:
    prompt_id: str
    first: str
    second: str
    score: float  # 1 first won, 0.5 tie, 0 second won
    features: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pair(self) -> tuple[str, frozenset[str]]:
        return self.prompt_id, frozenset((self.first, self.second))

    @property
    def winner(self) -> str:
        return TIE if self.score == 0.5 else (self.first if self.score == 1.0 else self.second)


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


def score_of(choice: str, first: str) -> float:
    return 0.5 if choice == TIE else (1.0 if choice == first else 0.0)


def first_per_item(rows) -> list:
    """The earliest judgment per (rater, item): repeated trials do not count twice."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for row in rows:
        if (row[0], row[1]) not in seen:
            seen.add((row[0], row[1]))
            kept.append(row)
    return kept


def match_rankings(source: Study) -> list[Ranking]:
    prompt_ids = dict(source.items.values_list("pk", "external_id"))
    rankings = []
    for match_study in Study.objects.filter(protocol=MATCHES, **{f"config__{SOURCE_LINK}": source.slug}).order_by("pk"):
        rows = first_per_item(
            Judgment.objects.filter(
                study=match_study,
                status=Judgment.Status.OK,
                rater__kind__in=JUDGE_KINDS,
                item__is_attention_check=False,
            )
            .order_by("rater_id", "item_id", "pk")
            .values_list("rater_id", "item_id", "rater__name", "item__metadata", "value", "provenance")
        )
        by_judge: dict[str, list[Verdict]] = {}
        for _rater, _item, judge, metadata, value, provenance in rows:
            first, second = metadata["contestants"]
            prompt_id = prompt_ids.get(metadata.get("prompt_item"), str(metadata.get("prompt_item")))
            features = (provenance or {}).get("features") or {}
            by_judge.setdefault(judge, []).append(
                Verdict(prompt_id, first, second, score_of(value["choice"], first), features)
            )
        schedule = match_study.config.get("schedule", "")
        tournament = match_study.config.get("tournament") or match_study.name
        for judge, verdicts in by_judge.items():
            label = f"{judge} · {tournament}" + (f" ({schedule.replace('_', ' ')})" if schedule else "")
            rankings.append(Ranking(label=label, judge=judge, tournament=tournament, verdicts=verdicts))
    return rankings


def fit(ranking: Ranking, analyses: dict[str, Any], seed: int) -> None:
    v = ranking.verdicts
    ranking.result = pairwise_report(
        [x.first for x in v],
        [x.second for x in v],
        [x.score for x in v],
        n_resamples=analyses["bootstrap_resamples"],
        n_orderings=analyses["elo_orderings"],
        seed=seed,
    )
    ranking.names = sorted({x.first for x in v} | {x.second for x in v})
    index = {n: i for i, n in enumerate(ranking.names)}
    ranking.wins = win_matrix(
        [index[x.first] for x in v], [index[x.second] for x in v], [x.score for x in v], n_contestants=len(index)
    )
