"""Feature tallies: shares of a contestant's wins and losses whose verdicts name each feature."""

from dataclasses import dataclass, field

import pytest

from ratings.stats.features import feature_tallies


@dataclass
class V:
    first: str
    second: str
    score: float
    features: dict = field(default_factory=dict)


VERDICTS = [
    V("a", "b", 1.0, {"humor_mechanisms": ["wordplay", "wordplay"], "failure_features": ["cliché"]}),
    V("b", "a", 0.0, {"humor_mechanisms": ["irony"], "delivery_features": ["timing"]}),
    V("a", "b", 0.5, {"humor_mechanisms": ["absurdity"]}),
    V("b", "c", 1.0),
]


class TestFeatureTallies:
    def test_shares_count_each_feature_once_per_verdict_and_skip_ties(self):
        t = feature_tallies(VERDICTS)
        assert (t.wins["a"], t.losses["b"], t.wins["b"], t.losses["c"]) == (2, 2, 1, 1)
        assert t.win_share("a", "wordplay") == pytest.approx(0.5)
        assert t.win_share("a", "timing") == pytest.approx(0.5)
        assert t.win_share("a", "absurdity") == 0
        assert t.loss_share("b", "cliché") == pytest.approx(0.5)

    def test_a_contestant_without_wins_has_no_share(self):
        t = feature_tallies(VERDICTS)
        assert t.win_share("c", "wordplay") is None and t.loss_share("a", "cliché") is None

    def test_features_met_and_verdicts_with_features_are_reported(self):
        t = feature_tallies(VERDICTS)
        assert t.seen == {
            "humor_mechanisms": ["wordplay", "irony"],
            "delivery_features": ["timing"],
            "failure_features": ["cliché"],
        }
        assert t.with_features == 3  # the tie names a feature too; the last verdict names none
