"""Exports show each judgment's trial as the researcher set it (0 … trials−1), in both orders."""

import csv
import io
import json

import pytest
from openpyxl import load_workbook

from annotation.models import Assignment, Judgment
from judging.services.runs import process_run, run_create
from ratings.exports.csv_jsonl import stream_csv, stream_jsonl
from ratings.exports.workbook import write_workbook

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(make_study, make_llm_judge):
    study = make_study(task_type="pairwise", n_items=2, n_candidates=2)
    judge = make_llm_judge("ok")
    run = run_create(study=study, judge=judge, trials=2, both_orders=True, enqueue=False)
    process_run(run_id=run.pk)
    assert Judgment.objects.filter(rater=judge.rater, status=Judgment.Status.OK).count() == 2 * 2 * 2
    # Storage keeps the B/A order apart with an offset; the exports must not show it.
    assert Assignment.objects.filter(rater=judge.rater, trial__gte=1000).count() == 4
    return study, judge


def test_csv_and_jsonl_show_trials_zero_and_one(judged):
    study, judge = judged
    rows = [r for r in csv.DictReader(io.StringIO("".join(stream_csv(study)))) if r["rater_id"] == str(judge.rater.pk)]
    assert sorted(int(r["trial"]) for r in rows) == [0, 0, 0, 0, 1, 1, 1, 1]
    records = [json.loads(line) for line in "".join(stream_jsonl(study)).splitlines() if line.strip()]
    mine = [r for r in records if r["rater_id"] == judge.rater.pk]
    assert sorted(r["trial"] for r in mine) == [0, 0, 0, 0, 1, 1, 1, 1]
    # The order each was shown in is still there to tell the two apart.
    assert {tuple(r["shown_order"]) for r in mine if r["trial"] == 0 and r["item"] == mine[0]["item"]} == {
        ("c0", "c1"),
        ("c1", "c0"),
    }


def test_the_workbooks_judgment_sheet_shows_trials_zero_and_one(judged, tmp_path):
    study, _ = judged
    path = tmp_path / "study.xlsx"
    write_workbook(study, str(path))
    sheet = load_workbook(path, read_only=True)["LLM judgments"]
    rows = list(sheet.iter_rows(values_only=True))
    header = next(r for r in rows if r and "Trial" in r)
    column = header.index("Trial")
    trials = [r[column] for r in rows[rows.index(header) + 1 :] if r and r[column] is not None]
    assert sorted(trials) == [0, 0, 0, 0, 1, 1, 1, 1]
