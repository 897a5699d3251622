"""What a pairwise judge says about winners and losers: shares of wins and losses citing each feature.

A verdict is anything with ``first``, ``second``, ``score`` (1 first won, 0.5 tie,
0 second won) and ``features`` (feature group → list of features). Ties carry no
winner and are left out; a feature named twice in one verdict counts once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

WIN_GROUPS = ("humor_mechanisms", "delivery_features")
LOSS_GROUPS = ("failure_features",)


@dataclass
class FeatureTallies:
    wins: Counter = field(default_factory=Counter)
    losses: Counter = field(default_factory=Counter)
    win_features: dict[str, Counter] = field(default_factory=dict)
    loss_features: dict[str, Counter] = field(default_factory=dict)
    # Every feature met, per group, in order of first appearance.
    seen: dict[str, list[str]] = field(default_factory=dict)
    # Verdicts (ties included) naming at least one feature.
    with_features: int = 0

    def win_share(self, name: str, feature: str) -> float | None:
        """Share of the contestant's wins whose verdict names the feature; None without wins."""
        total = self.wins[name]
        return self.win_features.get(name, Counter())[feature] / total if total else None

    def loss_share(self, name: str, feature: str) -> float | None:
        total = self.losses[name]
        return self.loss_features.get(name, Counter())[feature] / total if total else None


def feature_tallies(
    verdicts: Iterable[Any], *, win_groups: Sequence[str] = WIN_GROUPS, loss_groups: Sequence[str] = LOSS_GROUPS
) -> FeatureTallies:
    tallies = FeatureTallies(seen={g: [] for g in (*win_groups, *loss_groups)})
    for v in verdicts:
        named = {g: list(dict.fromkeys(v.features.get(g) or [])) for g in tallies.seen}
        if any(named.values()):
            tallies.with_features += 1
        if v.score == 0.5:
            continue
        winner, loser = (v.first, v.second) if v.score == 1.0 else (v.second, v.first)
        tallies.wins[winner] += 1
        tallies.losses[loser] += 1
        for group, features in named.items():
            tallies.seen[group].extend(f for f in features if f not in tallies.seen[group])
        tallies.win_features.setdefault(winner, Counter()).update({f for g in win_groups for f in named[g]})
        tallies.loss_features.setdefault(loser, Counter()).update({f for g in loss_groups for f in named[g]})
    return tallies
