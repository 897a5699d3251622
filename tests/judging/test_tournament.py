"""HumorRank tournaments: round robin, adaptive Swiss under a budget, and the leaderboard."""

import math
import random

import pytest
from scipy import stats

from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from judging.models import Tournament
from judging.rankings import current_ratings, leaderboard
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create, tournament_verdicts
from judging.tournament import Schedule, round_robin, simulate, swiss_round

TRUE_ELO = [1300, 1200, 1100, 1000, 900, 800, 700, 600]


def simulated_judge(rng, ratings=TRUE_ELO):
    """Picks the winner with the Bradley–Terry probability of the contestants' true ratings."""

    def judge(match):
        _prompt, i, j = match
        p_i = 1 / (1 + 10 ** ((ratings[j] - ratings[i]) / 400))
        return 1.0 if rng.random() < p_i else 0.0

    return judge


def fit(names):
    from judging.rankings import Verdict

    def _fit(outcomes):
        verdicts = [Verdict(names[o.i], names[o.j], o.score) for o in outcomes]
        return current_ratings(names, verdicts)

    return _fit


class TestSchedules:
    def test_round_robin_is_every_pair_on_every_prompt(self):
        schedule = Schedule.full(9, 5)
        matches = round_robin(schedule)
        assert len(matches) == math.comb(9, 2) * 5
        assert len(set(matches)) == len(matches)

    def test_round_robin_stops_at_the_budget(self):
        assert len(round_robin(Schedule.full(4, 10), budget=7)) == 7

    def test_a_swiss_round_pairs_each_contestant_at_most_once(self):
        schedule = Schedule.full(8, 10)
        matches = swiss_round(schedule, TRUE_ELO, rng=random.Random(1))
        players = [c for _p, i, j in matches for c in (i, j)]
        assert len(players) == len(set(players)) == 8

    def test_the_first_swiss_round_pairs_neighbours_in_the_table(self):
        matches = swiss_round(Schedule.full(8, 10), TRUE_ELO, rng=random.Random(1))
        assert {(i, j) for _p, i, j in matches} == {(0, 1), (2, 3), (4, 5), (6, 7)}

    def test_a_pair_never_meets_twice_on_one_prompt(self):
        schedule = Schedule.full(4, 3)
        rng = random.Random(3)
        while matches := swiss_round(schedule, [1000, 1000, 1000, 1000], rng=rng):
            schedule.record(matches)
        assert schedule.scheduled == math.comb(4, 2) * 3
        assert all(len(prompts) == 3 for prompts in schedule.played.values())


class TestRankingRecovery:
    @pytest.mark.parametrize("seed", [11, 12, 13])
    def test_swiss_under_a_budget_recovers_the_true_order(self, seed):
        rng = random.Random(seed)
        names = [f"model-{k}" for k in range(len(TRUE_ELO))]
        schedule = Schedule.full(len(TRUE_ELO), 40)
        budget = 400  # of 28 × 40 = 1120 for the full round robin
        outcomes = simulate(
            schedule=schedule, judge=simulated_judge(rng), fit=fit(names), mode="swiss", budget=budget, rng=rng
        )
        assert schedule.scheduled == budget
        ratings = fit(names)(outcomes)
        tau = stats.kendalltau(ratings, TRUE_ELO).statistic
        assert tau >= 0.9

    def test_the_leaderboard_has_intervals_elo_and_feature_shares(self):
        from judging.rankings import Verdict

        names = ["a", "b", "c"]
        verdicts = [
            Verdict("a", "b", 1.0, {"humor_mechanisms": ["wordplay"], "failure_features": ["cliché"]}),
            Verdict("a", "c", 1.0, {"humor_mechanisms": ["irony"], "failure_features": ["confusing"]}),
            Verdict("b", "c", 1.0, {"humor_mechanisms": ["wordplay"], "failure_features": ["cliché"]}),
            Verdict("b", "a", 0.5),
            Verdict("c", "a", 1.0, {"delivery_features": ["timing"], "failure_features": ["weak_punchline"]}),
        ]
        standings, _warnings = leaderboard(names, verdicts, n_resamples=50)
        assert [s.name for s in standings] == ["a", "b", "c"]
        top = standings[0]
        assert top.ci_low <= top.rating <= top.ci_high
        assert top.win_features["wordplay"] == 0.5
        assert top.loss_features["weak_punchline"] == 1.0
        assert standings[2].loss_features["confusing"] == 0.5


@pytest.mark.django_db
class TestTournamentInTheDatabase:
    def contest(self, owner, n_prompts=3):
        source = study_create(owner=owner, name="prompts and entries", task_type="pick_one")
        lengths = {"terse": 10, "medium": 30, "verbose": 60}
        items_create(
            study=source,
            items=[
                ItemSpec(
                    external_id=f"p{n}",
                    prompt=f"Headline {n}",
                    candidates=[CandidateSpec(key=name, text="x" * size) for name, size in lengths.items()],
                )
                for n in range(n_prompts)
            ],
        )
        return source

    def test_a_round_robin_with_the_length_baseline_ranks_the_terse_contestant_first(self, researcher):
        source = self.contest(researcher)
        judge, _ = judge_find_or_create(owner=researcher, baseline="length")
        tournament = tournament_create(
            owner=researcher, name="length cup", source_study=source, judge=judge, enqueue=False
        )
        process_tournament(tournament_id=tournament.pk)
        tournament.refresh_from_db()
        assert tournament.status == "done"
        assert tournament.match_study.items.count() == 3 * 3
        verdicts = tournament_verdicts(tournament)
        assert len(verdicts) == 9
        standings, _ = leaderboard(["medium", "terse", "verbose"], verdicts, n_resamples=20)
        assert [s.name for s in standings] == ["terse", "medium", "verbose"]

    def test_a_swiss_tournament_stops_at_its_budget_and_feeds_features(self, researcher, make_llm_judge):
        source = self.contest(researcher, n_prompts=4)
        judge = make_llm_judge("ok")
        tournament = tournament_create(
            owner=researcher,
            name="swiss",
            source_study=source,
            judge=judge,
            schedule=Tournament.Schedule.SWISS,
            budget=5,
            enqueue=False,
        )
        process_tournament(tournament_id=tournament.pk)
        tournament.refresh_from_db()
        assert tournament.status == "done"
        assert tournament.match_study.items.count() == 5
        assert tournament.runs.count() >= 2
        verdicts = tournament_verdicts(tournament)
        assert len(verdicts) == 5
        assert all(v.features["humor_mechanisms"] == ["wordplay"] for v in verdicts)
