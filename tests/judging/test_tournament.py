"""HumorRank tournaments: round robin, adaptive Swiss under a budget, and the leaderboard."""

import math
import random

import pytest
from scipy import stats

from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from judging.models import Tournament
from judging.rankings import current_ratings, standing_rows
from judging.services.judges import judge_create, judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create, tournament_verdicts
from judging.testing.services import free_port
from judging.tournament import (
    SWISS_MIN_PROMPTS,
    Schedule,
    gap_doubt,
    round_robin,
    simulate,
    swiss_recommended,
    swiss_round,
)
from ratings.stats.leaderboard import MatchVerdict, leaderboard

TRUE_ELO = [1300, 1200, 1100, 1000, 900, 800, 700, 600]


def simulated_judge(rng, ratings=TRUE_ELO):
    """Picks the winner with the Bradley–Terry probability of the contestants' true ratings."""

    def judge(match):
        _prompt, i, j = match
        p_i = 1 / (1 + 10 ** ((ratings[j] - ratings[i]) / 400))
        return 1.0 if rng.random() < p_i else 0.0

    return judge


def fit(names):
    def _fit(outcomes):
        verdicts = [MatchVerdict(names[o.i], names[o.j], o.score) for o in outcomes]
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
        # Either contestant may be shown first; the pairs are the table's neighbours.
        assert {frozenset((i, j)) for _p, i, j in matches} == {
            frozenset(pair) for pair in ((0, 1), (2, 3), (4, 5), (6, 7))
        }

    def test_a_pair_never_meets_twice_on_one_prompt(self):
        schedule = Schedule.full(4, 3)
        rng = random.Random(3)
        while matches := swiss_round(schedule, [1000, 1000, 1000, 1000], rng=rng):
            schedule.record(matches)
        assert schedule.scheduled == math.comb(4, 2) * 3
        assert all(len(prompts) == 3 for prompts in schedule.played.values())


class TestSwissConcentrates:
    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_later_rounds_pair_neighbours_of_the_true_order_more_often(self, seed):
        rng = random.Random(seed)
        names = [f"model-{k}" for k in range(len(TRUE_ELO))]
        outcomes = simulate(
            schedule=Schedule.full(len(TRUE_ELO), 30),
            judge=simulated_judge(rng),
            fit=fit(names),
            mode="swiss",
            budget=210,  # a quarter of the 28 × 30 round robin
            rng=rng,
        )
        neighbours = [abs(o.i - o.j) == 1 for o in outcomes]
        quarter = len(neighbours) // 4
        first, last = sum(neighbours[:quarter]) / quarter, sum(neighbours[-quarter:]) / quarter
        # Uniform pairing gives 7 of 28 pairs, 25%, in every quarter.
        assert last > first
        assert last >= 0.75

    def test_the_round_starts_with_a_pair_that_has_not_met_when_ratings_are_equal(self):
        schedule = Schedule.full(4, 6)
        schedule.record([(p, 0, 1) for p in range(5)])
        (first, *_rest) = swiss_round(schedule, [1000.0] * 4, rng=random.Random(0))
        assert frozenset(first[1:]) != {0, 1}

    def test_the_most_doubtful_pair_is_the_closest_when_games_are_equal(self):
        schedule = Schedule.full(4, 6)
        schedule.record([(p, i, j) for p in range(2) for i in range(4) for j in range(i + 1, 4)])
        ratings = [1300.0, 1010.0, 1000.0, 700.0]
        doubt = gap_doubt(schedule, ratings)
        assert doubt[1, 2] == min(doubt[i, j] for i in range(4) for j in range(i + 1, 4))
        (first, *_rest) = swiss_round(schedule, ratings, rng=random.Random(0))
        assert frozenset(first[1:]) == {1, 2}


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
        verdicts = [
            MatchVerdict("a", "b", 1.0, features={"humor_mechanisms": ["wordplay"], "failure_features": ["cliché"]}),
            MatchVerdict("a", "c", 1.0, features={"humor_mechanisms": ["irony"], "failure_features": ["confusing"]}),
            MatchVerdict("b", "c", 1.0, features={"humor_mechanisms": ["wordplay"], "failure_features": ["cliché"]}),
            MatchVerdict("b", "a", 0.5),
            MatchVerdict(
                "c", "a", 1.0, features={"delivery_features": ["timing"], "failure_features": ["weak_punchline"]}
            ),
        ]
        standings = standing_rows(leaderboard(verdicts, n_resamples=50), verdicts)
        assert [s.standing.name for s in standings] == ["a", "b", "c"]
        top = standings[0]
        assert top.standing.ci_low <= top.standing.rating <= top.standing.ci_high
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
        board = leaderboard(verdicts, n_resamples=20)
        assert board.ranking == ["terse", "medium", "verbose"]

    def test_a_tournament_whose_endpoint_never_answers_stops_saying_so(self, researcher, settings):
        settings.FUNNYBONE_JUDGE_RETRY_SECONDS = 120  # production's budget: the address is not waited out anyway
        source = self.contest(researcher)
        port = free_port()
        judge = judge_create(
            owner=researcher, name="nobody home", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0
        )
        tournament = tournament_create(owner=researcher, name="cup", source_study=source, judge=judge, enqueue=False)
        process_tournament(tournament_id=tournament.pk)
        tournament.refresh_from_db()
        assert tournament.status == "failed"
        assert f"could not connect to http://127.0.0.1:{port}/v1: connection refused" in tournament.error
        assert tournament.runs.get().status == "paused"

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


class TestTheNewTournamentPage:
    def test_a_small_study_is_told_to_choose_the_round_robin(self, client, researcher):
        source = TestTournamentInTheDatabase().contest(researcher, n_prompts=20)
        client.force_login(researcher)
        page = client.get(f"/judging/studies/{source.pk}/tournaments/new/").content.decode()
        assert "This study has 20 prompts: choose the round robin." in page

    def test_a_study_of_a_hundred_prompts_gets_no_such_advice(self, client, researcher):
        source = TestTournamentInTheDatabase().contest(researcher, n_prompts=SWISS_MIN_PROMPTS)
        client.force_login(researcher)
        page = client.get(f"/judging/studies/{source.pk}/tournaments/new/").content.decode()
        assert "choose the round robin" not in page
        assert swiss_recommended(SWISS_MIN_PROMPTS) and not swiss_recommended(20)
