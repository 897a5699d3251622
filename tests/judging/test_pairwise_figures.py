"""One reading of pairwise judgments on every surface: contestant names and position consistency.

A study whose items were imported with candidate provenance ``{"system": ...}``,
voted on by people and judged by a scripted model endpoint in both orders over
two trials, shows the same contestants and the same position-consistency figure
on the analysis page, the alignment page, the run page, the leaderboard and the
workbook. Before ``ratings.pairwise`` the analysis page called the contestants
"a"/"b" while the workbook said "gpt-4", and the leaderboard counted the
earliest trial where the alignment and run pages counted every trial.
"""

import io
import json

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from annotation.importers import import_item_file
from annotation.models import Judgment
from annotation.services.studies import study_create, study_set_state
from judging.services.runs import process_run, run_create
from ratings.exports.workbook import write_workbook
from ratings.leaderboards import judge_leaderboard
from ratings.models import AlignmentReport
from tests.ratings.test_selectors import add_rater, judge

pytestmark = pytest.mark.django_db

SYSTEMS = {"a": "gpt-4", "b": "claude-3"}
HUMAN_VOTES = {"ann": ["a", "a", "b"], "bob": ["a", "b", "b"], "cat": ["a", "a", "a"]}


@pytest.fixture
def imported(researcher):
    """Three pairs imported from a JSONL file, each candidate naming the system that wrote it; three voters."""
    study = study_create(owner=researcher, name="Systems head to head", task_type="pairwise", quota_per_item=20)
    lines = [
        {
            "id": f"pair-{n}",
            "prompt": f"Headline {n}",
            "candidates": [
                {"key": key, "text": f"Joke {n} by {system}", "provenance": {"system": system}}
                for key, system in SYSTEMS.items()
            ],
        }
        for n in range(3)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    result = import_item_file(study=study, stream=io.BytesIO(data), fmt="jsonl", size=len(data))
    assert result.ok, result.errors
    study_set_state(study=study, state="open")
    items = list(study.items.order_by("position"))
    for name, votes in HUMAN_VOTES.items():
        rater = add_rater(study, name)
        for item, choice in zip(items, votes, strict=True):
            judge(study, rater, item, {"choice": choice})
    return study


@pytest.fixture
def judged_twice_in_both_orders(imported, make_llm_judge):
    """A judge asked each pair twice in both orders, one unit at a time.

    The scripted endpoint answers a request it has not seen with "A" (the joke shown
    first) and the same request again with a tie: the first trial's two orders name
    different jokes, the second trial's are both ties. Every trial counted: 3 of 6
    comparisons kept their verdict; the earliest trial alone: 0 of 3.
    """
    model = make_llm_judge("ok", "tie", concurrency=1, trials=2, both_orders=True)
    run = run_create(study=imported, judge=model, enqueue=False)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    assert Judgment.objects.filter(rater=run.judge.rater, status=Judgment.Status.OK).count() == 12
    return run


class TestContestantNames:
    def test_the_system_names_the_contestant_on_the_analysis_page(self, client, researcher, imported):
        client.force_login(researcher)
        html = client.get(reverse("ratings:study_analysis", args=[imported.slug])).content.decode()
        board = html.split('id="leaderboard-heading"')[1].split("</table>")[0]
        assert "gpt-4" in board and "claude-3" in board
        assert '<th scope="row">a</th>' not in board

    def test_the_system_names_the_contestant_in_the_workbook(self, imported, tmp_path):
        path = tmp_path / "study.xlsx"
        write_workbook(imported, str(path))
        cells = {c for row in load_workbook(path)["Rankings"].iter_rows(values_only=True) for c in row}
        assert {"gpt-4", "claude-3"} <= cells and "a" not in cells

    def test_the_system_names_the_contestant_in_the_leaderboard_and_the_alignment_rankings(
        self, client, researcher, judged_twice_in_both_orders
    ):
        run = judged_twice_in_both_orders
        board, _verdicts = judge_leaderboard(study=run.study, rater_id=run.judge.rater_id)
        assert sorted(board.ranking) == ["claude-3", "gpt-4"]
        client.force_login(researcher)
        assert client.get(reverse("alignment:report", args=[run.study.slug])).status_code == 200
        rankings = AlignmentReport.objects.get(study=run.study).result["plots"]["rankings"]
        assert sorted(rankings["reference"]["names"]) == ["claude-3", "gpt-4"]
        assert sorted(rankings[str(run.judge.rater_id)]["names"]) == ["claude-3", "gpt-4"]


class TestPositionConsistency:
    def test_a_judge_with_two_trials_shows_one_figure_on_every_surface(
        self, client, researcher, judged_twice_in_both_orders, tmp_path
    ):
        run = judged_twice_in_both_orders
        rater_id = run.judge.rater_id
        client.force_login(researcher)

        run_page = client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
        assert "0.5 over 6 pairs" in run_page

        alignment_page = client.get(reverse("alignment:report", args=[run.study.slug])).content.decode()
        assert '0.500 <span class="muted">(3/6 pairs' in alignment_page
        row = next(
            r for r in AlignmentReport.objects.get(study=run.study).result["overall"]["judges"] if r["id"] == rater_id
        )
        assert row["position_consistency"] == {"value": 0.5, "n_pairs": 6, "consistent": 3, "incomplete": 0}

        board, _verdicts = judge_leaderboard(study=run.study, rater_id=rater_id)
        assert (board.position.consistency, board.position.n_both_orders, board.position.n_consistent) == (0.5, 6, 3)

        path = tmp_path / "study.xlsx"
        write_workbook(run.study, str(path))
        notes = [str(c) for row in load_workbook(path)["Rankings"].iter_rows(values_only=True) for c in row if c]
        start = next(n for n, text in enumerate(notes) if text.startswith("LLM judge"))
        assert any(
            "position consistency 50.0% (3 of 6 comparisons judged in both orders kept their verdict)" in text
            for text in notes[start:]
        )
