"""HumorRank end to end against a known truth: six contestants of known strength.

Two scripted judges (an OpenAI-compatible server on loopback that answers from
the truth with Bradley–Terry noise, feature lists included) play a budgeted
adaptive Swiss tournament and a full round robin through the real Celery
worker; three simulated people vote on a sampled human check. The report must
recover the true order, compare the judges, and measure the people.
"""

import hashlib
import io
import json
import re

import numpy as np
import pytest
from openpyxl import load_workbook
from scipy import stats

from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.humorrank import CONTEST
from annotation.services.imported_judgments import ImportedJudgment, judgments_import
from judging.models import RunStatus, Tournament
from judging.services.judges import judge_create
from judging.services.tournaments import human_check_create, tournament_create
from judging.testing.scripted_server import prompt_text
from ratings.protocols import protocol_report, report_json, write_report_workbook

from .conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# The truth: Elo-scale strengths, 200 points apart (the better of two neighbours wins ~76% of the time).
TRUTH = {"aardvark": 1500, "bison": 1300, "cobra": 1100, "dingo": 900, "emu": 700, "ferret": 500}
NAMES = list(TRUTH)
PROMPTS = 12
SIGNATURE = dict(zip(NAMES, ["wordplay", "absurdity", "irony", "surprise", "sarcasm", "narrative"], strict=True))
FAILURE = dict(
    zip(NAMES, ["cliché", "confusing", "offensive", "overexplained", "buried_punchline", "weak_punchline"], strict=True)
)


def joke(prompt: int, name: str) -> str:
    return f"Joke number {prompt} told by the {name}."


AUTHOR = {joke(p, n): n for p in range(PROMPTS) for n in NAMES}


def p_first_wins(first: str, second: str) -> float:
    return 1 / (1 + 10 ** ((TRUTH[second] - TRUTH[first]) / 400))


def truthful_verdict(request: dict) -> str:
    """A scripted judge: the winner is drawn from the truth, with the winner's mechanism and the loser's failure."""
    text = prompt_text(request)
    a = AUTHOR[re.search(r"Joke A: (.*)", text).group(1).strip()]
    b = AUTHOR[re.search(r"Joke B: (.*)", text).group(1).strip()]
    # Seeded by the judge's model name and the two jokes in a fixed order, not by the prompt text:
    # the match study shows A and B in an order drawn per study, and the verdict must not depend
    # on it, so every run of this test plays the same tournament.
    x, y = sorted((a, b))
    jokes = "|".join(sorted(re.search(rf"Joke {side}: (.*)", text).group(1).strip() for side in "AB"))
    digest = hashlib.sha256((request.get("model", "") + jokes).encode()).digest()
    draw = np.random.default_rng(int.from_bytes(digest[:8], "big")).random()
    winner, loser = (x, y) if draw < p_first_wins(x, y) else (y, x)
    return json.dumps(
        {
            "reasoning": f"The {winner} lands it.",
            "decision": "A" if winner == a else "B",
            "humor_mechanisms": [SIGNATURE[winner]],
            "delivery_features": ["timing"],
            "failure_features": [FAILURE[loser]],
        }
    )


def contest_csv() -> bytes:
    lines = ["prompt_id,prompt,contestant,joke"]
    lines += [f"p{p},Headline number {p},{n},{joke(p, n)}" for p in range(PROMPTS) for n in NAMES]
    return "\n".join(lines).encode()


def kendall_with_truth(ranking: list[str]) -> float:
    return stats.kendalltau([TRUTH[n] for n in ranking], list(range(len(ranking), 0, -1))).statistic


def simulated_votes(check, rng) -> list[ImportedJudgment]:
    votes = []
    for item in check.items.prefetch_related("candidates"):
        first, second = (c.key for c in item.candidates.all())
        for person in ("ana", "ben", "chloé"):
            draw = rng.random()
            p = p_first_wins(first, second)
            choice = "tie" if abs(draw - p) < 0.05 else (first if draw < p else second)
            votes.append(ImportedJudgment(rater=person, item=item.external_id, value={"choice": choice}, kind="crowd"))
    return votes


def test_the_report_recovers_the_true_ranking_and_compares_judges_and_people(celery_worker, researcher, scripted_model):
    truth_judge = scripted_model(truthful_verdict)
    source = study_from_template(owner=researcher, template=CONTEST, name="Six contestants")
    imported = protocol_import(study=source, data=contest_csv(), filename="contest.csv")
    assert imported.ok, imported.errors
    assert imported.items == PROMPTS

    settings = {"base_url": truth_judge.url, "timeout_seconds": 5.0, "backoff_seconds": 0.05, "concurrency": 4}
    critic = judge_create(owner=researcher, name="truth critic", model="truth-1", **settings)
    second = judge_create(owner=researcher, name="second critic", model="truth-2", **settings)
    full = len(NAMES) * (len(NAMES) - 1) // 2 * PROMPTS
    swiss = tournament_create(
        owner=researcher, name="swiss", source_study=source, judge=critic, schedule="swiss", budget=full // 2, seed=3
    )
    robin = tournament_create(owner=researcher, name="round robin", source_study=source, judge=second)

    def finished():
        return set(Tournament.objects.filter(pk__in=[swiss.pk, robin.pk]).values_list("status", flat=True)) <= {
            RunStatus.DONE,
            RunStatus.FAILED,
        }

    assert wait_until(finished, timeout=300)
    swiss.refresh_from_db()
    robin.refresh_from_db()
    assert (swiss.status, robin.status) == (RunStatus.DONE, RunStatus.DONE), (swiss.error, robin.error)

    check = human_check_create(owner=researcher, tournament=robin, n_pairs=40, seed=5)
    assert check.items.count() == 40
    judgments_import(study=check, judgments=simulated_votes(check, np.random.default_rng(7)))

    report = protocol_report(study=source)
    data = report_json(report)
    board = data["tables"]["leaderboard"]["rows"]
    by_ranking = {}
    for label, _rank, name, *_rest in board:
        by_ranking.setdefault(label, []).append(name)
    assert len(by_ranking) == 3  # two judges, and the people of the human check
    swiss_label = next(label for label in by_ranking if "swiss" in label)
    robin_label = next(label for label in by_ranking if "round robin" in label)
    assert kendall_with_truth(by_ranking[swiss_label]) >= 0.9
    assert kendall_with_truth(by_ranking[robin_label]) >= 0.9
    swiss_games = data["summary"][f"Matches judged — {swiss_label}"]
    assert swiss_games == full // 2
    assert data["summary"][f"Matches judged — {robin_label}"] == full

    for row in board:
        rating, low, high, win_rate, elo_sd = row[3], row[4], row[5], row[6], row[9]
        assert low <= rating <= high and 0 <= win_rate <= 100 and elo_sd >= 0

    taus = data["tables"]["cross_judge_tau"]["rows"]
    assert len(taus) == 3
    tau_row = next(row for row in taus if {row[0], row[1]} == {swiss_label, robin_label})
    assert tau_row[3] >= 0.8
    assert data["summary"]["Cross-judge Kendall τ (first two rankings)"] == tau_row[3]
    triads = {row[0]: row[1] for row in data["tables"]["intransitive_triads"]["rows"]}
    assert triads[swiss_label] == triads[robin_label] == 0

    # Every win of a contestant names its signature mechanism; every loss its own failure.
    features = data["tables"]["features_2"]
    for name, *shares in features["rows"]:
        cells = dict(zip(features["columns"][1:], shares, strict=True))
        assert cells[f"win: {SIGNATURE[name]}"] in (1.0, None)
        assert cells[f"loss: {FAILURE[name]}"] in (1.0, None)
        assert all(
            v in (0.0, None)
            for k, v in cells.items()
            if k.startswith("win: ") and k not in (f"win: {SIGNATURE[name]}", "win: timing")
        )

    (agreement,) = data["tables"]["human_agreement"]["rows"]
    _study, pairs, raters, votes, alpha, raw = agreement
    assert (pairs, raters, votes) == (40, 3, 120)
    assert -1 <= alpha <= 1 and 0 <= raw <= 1
    alignment = {row[1]: row for row in data["tables"]["human_judge_alignment"]["rows"]}
    # The round robin judged every sampled pair, so every pair is compared; both sides follow the truth.
    assert alignment[robin_label][2] == 40
    assert alignment[robin_label][5] > 0.5
    assert len(data["tables"]["human_rater_pairs"]["rows"]) == 3

    assert {"leaderboard", "win_rates_1", "win_rates_2", "features_1", "features_2"} <= set(data["figures"])
    assert all(f.plot.png.startswith(b"\x89PNG") for f in report.figures())

    stream = io.BytesIO()
    write_report_workbook(report, stream)
    sheets = load_workbook(io.BytesIO(stream.getvalue()), read_only=True).sheetnames
    assert {"Leaderboard per judge", "Kendall τ between rankings", "Human majority vs each judge"} <= set(sheets)

    _keep_figures(report)


def _keep_figures(report) -> None:
    """Leave the figures where a person can look at them after a run (FUNNYBONE_KEEP_FIGURES=dir)."""
    import os
    from pathlib import Path

    folder = os.environ.get("FUNNYBONE_KEEP_FIGURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for figure in report.figures():
            (Path(folder) / f"{figure.key}.png").write_bytes(figure.plot.png)
        (Path(folder) / "report.json").write_text(json.dumps(report_json(report), indent=1, ensure_ascii=False))
