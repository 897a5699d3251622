"""SemEval-2020 Task 7: the templates, the importers in the published data's shape, and the report."""

import io
import json
import math

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from openpyxl import load_workbook

from annotation.models import Judgment, Rater
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.semeval import EDITING, GRADING, grading_items_from_edits
from annotation.services.imported_judgments import ImportedJudgment, judgments_import
from judging.services.judges import judge_find_or_create
from judging.services.runs import process_run, run_create
from ratings.protocols import protocol_report, report_json, write_report_workbook

pytestmark = pytest.mark.django_db

GOOD = """id,original,edit,grades,meanGrade
1,Mayor unveils plan to fix city <potholes/> by spring,pigeons,32100,1.2
2,Mayor unveils plan to fix city <potholes/> by spring,moods,22211,1.6
3,Scientists warn <coffee/> shortage could last years,patience,11000,0.4
4,Scientists warn <coffee/> shortage could last years,naps,01111,0.8
5,Storm delays launch of weather <satellite/>,apology,33322,2.6
6,Storm delays launch of weather <satellite/>,balloon,33322,2.6
"""


def grading_study(owner, name="Headlines graded"):
    return study_from_template(owner=owner, template=GRADING, name=name)


def imported(study, text, filename="semeval.csv"):
    return protocol_import(study=study, data=text.encode(), filename=filename)


class TestTemplates:
    def test_the_grading_template_asks_five_people_for_a_0_to_3_grade(self, researcher):
        study = grading_study(researcher)
        assert study.task_type == "ordinal"
        assert study.config["points"] == [0, 1, 2, 3]
        assert study.config["labels"] == ["Not funny", "Slightly funny", "Moderately funny", "Funny"]
        assert study.quota_per_item == 5
        assert study.consent_text and "0 Not funny" in study.instructions_text

    def test_the_editing_template_collects_one_word_edits(self, researcher):
        study = study_from_template(owner=researcher, template=EDITING, name="Edit headlines")
        assert study.task_type == "micro_edit"
        assert study.protocol == EDITING
        assert "one word" in study.instructions_text.lower()


class TestGradingImport:
    def test_each_grade_becomes_one_judgment_of_a_crowdworker(self, researcher):
        study = grading_study(researcher)
        result = imported(study, GOOD)
        assert result.ok, result.errors
        assert (result.items, result.judgments) == (6, 30)
        item = study.items.get(external_id="1")
        assert item.prompt == "Mayor unveils plan to fix city potholes by spring"
        assert item.text == "Mayor unveils plan to fix city pigeons by spring"
        assert item.metadata["replacement"] == "pigeons" and item.metadata["original_word"] == "potholes"
        ratings = sorted(j.value["rating"] for j in Judgment.objects.filter(item=item))
        assert ratings == [0, 0, 1, 2, 3]
        assert set(Rater.objects.filter(judgments__study=study).values_list("kind", flat=True)) == {"crowd"}

    def test_separate_grade_columns_are_read_as_well(self, researcher):
        study = grading_study(researcher)
        text = "id,original,edit,grade1,grade2,grade3,grade4,grade5\n7,Local <bakery/> wins award,sock,3,2,2,1,0\n"
        result = imported(study, text)
        assert result.ok, result.errors
        assert sorted(j.value["rating"] for j in Judgment.objects.filter(study=study)) == [0, 1, 2, 2, 3]

    def test_rows_without_grades_are_headlines_waiting_to_be_graded(self, researcher):
        study = grading_study(researcher)
        result = imported(study, "id,original,edit\n1,Local <bakery/> wins award,sock\n")
        assert (result.items, result.judgments) == (1, 0)

    def test_grades_as_a_number_with_too_few_digits_are_refused_not_padded(self, researcher):
        # 3210 could be four graders' grades or "03210" with a zero lost: padding it invented a grade of 0.
        study = grading_study(researcher)
        lines = [
            json.dumps({"id": "1", "original": "Local <bakery/> wins award", "edit": "sock", "grades": "32100"}),
            json.dumps({"id": "2", "original": "Local <bakery/> wins award", "edit": "hat", "grades": 3210}),
        ]
        result = imported(study, "\n".join(lines) + "\n", filename="grades.jsonl")
        assert not result.ok
        assert len(result.errors) == 1
        assert result.errors[0].startswith("Line 2: grades is the number 3210, not text: 4 digit(s) where 5 graders")
        assert not Judgment.objects.filter(study=study).exists()

    def test_grades_as_text_or_a_number_with_one_digit_per_grader_are_read(self, researcher):
        study = grading_study(researcher)
        lines = [
            json.dumps({"id": "1", "original": "Local <bakery/> wins award", "edit": "sock", "grades": "01223"}),
            json.dumps({"id": "2", "original": "Local <bakery/> wins award", "edit": "hat", "grades": 32100}),
            json.dumps({"id": "3", "original": "Local <bakery/> wins award", "edit": "cat", "grades": "3210"}),
        ]
        result = imported(study, "\n".join(lines) + "\n", filename="grades.jsonl")
        assert result.ok, result.errors
        by_item = {}
        for j in Judgment.objects.filter(study=study).select_related("item"):
            by_item.setdefault(j.item.external_id, []).append(j.value["rating"])
        assert {k: sorted(v) for k, v in by_item.items()} == {
            "1": [0, 1, 2, 2, 3],
            "2": [0, 0, 1, 2, 3],
            "3": [0, 1, 2, 3],  # text keeps what it says: four grades, nothing padded
        }

    def test_a_spreadsheet_number_cell_with_a_lost_zero_is_refused_with_its_row(self, researcher):
        from openpyxl import Workbook

        study = grading_study(researcher)
        wb = Workbook()
        sheet = wb.active
        sheet.append(["id", "original", "edit", "grades"])
        sheet.append(["1", "Local <bakery/> wins award", "sock", 32100])
        sheet.append(["2", "Local <bakery/> wins award", "hat", 1223])
        buffer = io.BytesIO()
        wb.save(buffer)
        result = protocol_import(study=study, data=buffer.getvalue(), filename="grades.xlsx")
        assert not result.ok
        assert [e.split(":")[0] for e in result.errors] == ["Row 3"]
        assert "grades is the number 1223" in result.errors[0]

    def test_every_bad_row_is_named_and_nothing_is_written(self, researcher):
        study = grading_study(researcher)
        bad = (
            "id,original,edit,grades,meanGrade\n"
            "1,Mayor unveils plan to fix city potholes,pigeons,32100,1.2\n"  # no marked token
            "2,Mayor unveils <plan/> to fix <city/> potholes,moods,22211,1.6\n"  # two marked tokens
            "3,Scientists warn <coffee/> shortage,two words,11000,0.4\n"
            "4,Scientists warn <coffee/> shortage,Coffee,11000,0.4\n"
            "5,Storm delays <launch/>,apology,33942,\n"
            "6,Storm delays <launch/>,balloon,33322,1.0\n"
            "6,Storm delays <launch/>,kite,33322,2.6\n"
            ",Storm delays <launch/>,,333222,\n"
        )
        result = imported(study, bad)
        assert not result.ok
        joined = "\n".join(result.errors)
        for row in range(2, 10):
            assert f"Row {row}:" in joined, joined
        assert "exactly one token" in joined
        assert "outside the scale 0-3" in joined
        assert "does not match the grades" in joined
        assert "used twice" in joined
        assert "6 grades" in joined
        assert study.items.count() == 0 and Judgment.objects.filter(study=study).count() == 0

    def test_a_file_without_the_edit_column_is_refused_as_a_whole(self, researcher):
        study = grading_study(researcher)
        result = imported(study, "id,original\n1,Local <bakery/> wins award\n")
        assert result.errors == ["The file needs the column(s) edit; its columns are: id, original."]


class TestEditsToGradingItems:
    def test_the_edits_of_an_editing_study_become_headlines_to_grade(self, researcher):
        editing = study_from_template(owner=researcher, template=EDITING, name="Edit headlines")
        result = imported(editing, "id,original\nh1,Local <bakery/> wins award\nh2,Storm delays <launch/>\n")
        assert result.items == 2
        answers = [("ed1", "h1", "zoo"), ("ed2", "h1", "Zoo"), ("ed3", "h1", "sock"), ("ed1", "h2", "nap")]
        judgments_import(
            study=editing,
            judgments=[
                ImportedJudgment(rater=r, item=i, value={"replacement": w}, kind="crowd") for r, i, w in answers
            ],
        )
        grading = grading_study(researcher)
        assert grading_items_from_edits(editing=editing, grading=grading) == 3
        texts = sorted(grading.items.values_list("text", flat=True))
        assert texts == ["Local sock wins award", "Local zoo wins award", "Storm delays nap"]
        assert set(grading.items.values_list("prompt", flat=True)) == {"Local bakery wins award", "Storm delays launch"}
        # Running it again as more edits arrive adds nothing twice.
        assert grading_items_from_edits(editing=editing, grading=grading) == 0

    def test_the_command_adds_the_edits_and_names_a_wrong_study(self, researcher):
        from io import StringIO

        from django.core.management import CommandError, call_command

        editing = study_from_template(owner=researcher, template=EDITING, name="Edit by command")
        imported(editing, "id,original\nh1,Local <bakery/> wins award\n")
        judgments_import(
            study=editing,
            judgments=[ImportedJudgment(rater="ed1", item="h1", value={"replacement": "zoo"}, kind="crowd")],
        )
        grading = grading_study(researcher)
        out = StringIO()
        call_command("semeval_grading_items", editing.slug, grading.slug, stdout=out)
        assert f"Added 1 edited headline(s) to {grading.slug}." in out.getvalue()
        with pytest.raises(CommandError, match="must come from a SemEval-2020 Task 7 editing study"):
            call_command("semeval_grading_items", grading.slug, grading.slug)
        with pytest.raises(CommandError, match="No study with the slug 'nope'"):
            call_command("semeval_grading_items", "nope", grading.slug)

    def test_it_refuses_a_study_that_is_not_an_editing_study(self, researcher):
        with pytest.raises(ValidationError):
            grading_items_from_edits(editing=grading_study(researcher), grading=grading_study(researcher, "other"))


def run_baseline(study, owner, kind):
    judge, _ = judge_find_or_create(owner=owner, baseline=kind)
    run = run_create(study=study, judge=judge, enqueue=False)
    process_run(run_id=run.pk)
    return judge


class TestGradingReport:
    def test_a_study_without_headlines_still_renders_and_says_why_it_is_empty(self, researcher):
        report = protocol_report(study=grading_study(researcher))
        assert any("no edited headlines" in n for n in report.notes)
        assert report.figure("grade_histogram") is not None

    def test_mean_grades_the_mean_baseline_and_the_pairs(self, researcher):
        study = grading_study(researcher)
        imported(study, GOOD)
        report = report_json(protocol_report(study=study))
        means = {row["id"]: row["mean grade"] for row in _records(report, "mean_grades")}
        assert means == pytest.approx({"1": 1.2, "2": 1.6, "3": 0.4, "4": 0.8, "5": 2.6, "6": 2.6})
        baseline = _records(report, "task1_rmse")[0]
        assert baseline["judge"] == "Mean baseline"
        assert baseline["RMSE"] == pytest.approx(np.std([1.2, 1.6, 0.4, 0.8, 2.6, 2.6]))
        # satellite's two edits got equal grades: one pair of three is skipped.
        assert report["summary"]["Task 2 pairs scored"] == 2
        assert report["summary"]["Task 2 pairs skipped"] == 1
        assert any("equal mean grades" in note for note in report["notes"])
        first = _records(report, "task2_scores")[0]
        # edit 1 is funnier in neither scored pair (1.2 < 1.6, 0.4 < 0.8)
        assert (first["accuracy"], first["reward"]) == pytest.approx((0.0, -0.4))
        assert any("No LLM or baseline judge" in note for note in report["notes"])

    def test_a_baseline_judge_is_scored_on_both_tasks(self, researcher):
        study = grading_study(researcher)
        imported(study, GOOD)
        run_baseline(study, researcher, "constant")
        report = report_json(protocol_report(study=study))
        constant = next(r for r in _records(report, "task1_rmse") if r["judge"] == "baseline: constant")
        # It answers the scale point nearest the human mean rating, 1.533 → 2.
        gold = np.array([1.2, 1.6, 0.4, 0.8, 2.6, 2.6])
        assert constant["RMSE"] == pytest.approx(math.sqrt(np.mean((gold - 2) ** 2)))
        assert constant["beats the mean baseline"] == "no"
        pairs = next(r for r in _records(report, "task2_scores") if r["judge"] == "baseline: constant")
        assert (pairs["pairs"], pairs["pairs without a choice"], pairs["accuracy"]) == (2, 2, 0.0)
        tails = [r for r in _records(report, "task1_tails") if r["judge"] == "baseline: constant"]
        assert [r["X%"] for r in tails] == [10, 20, 30, 40]
        top10 = tails[0]
        assert top10["headlines in each tail"] == 1 and top10["RMSE top X%"] == pytest.approx(0.6)

    def test_a_judge_that_answered_some_headlines_is_compared_with_the_baseline_on_those(self, researcher):
        study = grading_study(researcher)
        imported(study, GOOD)
        judge, _ = judge_find_or_create(owner=researcher, baseline="constant")
        # The constant judge (it answers 2) is run on the two headlines graded 1.2 and 1.6 only.
        items = list(study.items.filter(external_id__in=["1", "2"]).order_by("pk"))
        process_run(run_id=run_create(study=study, judge=judge, items=items, enqueue=False).pk)
        report = report_json(protocol_report(study=study))
        row = next(r for r in _records(report, "task1_rmse") if r["judge"] == "baseline: constant")
        gold = np.array([1.2, 1.6, 0.4, 0.8, 2.6, 2.6])
        assert row["headlines"] == 2
        assert row["RMSE"] == pytest.approx(math.sqrt((0.8**2 + 0.4**2) / 2))  # 0.632
        # Over all six headlines the mean baseline scores 0.838, which the judge's 0.632 would "beat"; on the
        # same two headlines the baseline (1.533 for each) scores 0.240, and the judge does not beat it.
        on_these = math.sqrt(((1.2 - gold.mean()) ** 2 + (1.6 - gold.mean()) ** 2) / 2)
        assert row["mean baseline RMSE on these headlines"] == pytest.approx(on_these)
        assert row["beats the mean baseline"] == "no"
        baseline = _records(report, "task1_rmse")[0]
        assert baseline["RMSE"] == pytest.approx(gold.std()) and baseline["RMSE"] > row["RMSE"]
        assert baseline["mean baseline RMSE on these headlines"] == pytest.approx(baseline["RMSE"])

    def test_the_mae_bins_cover_the_scale_in_steps_of_0_2(self, researcher):
        study = grading_study(researcher)
        imported(study, GOOD)
        bins = _records(report_json(protocol_report(study=study)), "task1_mae_bins")
        assert len(bins) == 15 and bins[0]["mean grade bin"] == "0.0–0.2"
        assert sum(b["headlines"] for b in bins) == 6
        at_2_6 = next(b for b in bins if b["mean grade bin"] == "2.6–2.8")
        assert at_2_6["headlines"] == 2
        assert at_2_6["MAE Mean baseline"] == pytest.approx(2.6 - np.mean([1.2, 1.6, 0.4, 0.8, 2.6, 2.6]))

    def test_the_report_goes_to_a_workbook_with_one_sheet_per_table(self, researcher):
        study = grading_study(researcher)
        imported(study, GOOD)
        stream = io.BytesIO()
        write_report_workbook(protocol_report(study=study), stream)
        book = load_workbook(io.BytesIO(stream.getvalue()))
        assert book.sheetnames == [
            "Summary",
            "Mean grade per headline",
            "Task 1 RMSE",
            "Task 1 RMSE on the funniest and",
            "Task 1 MAE per grade bin",
            "Task 2 pairs",
            "Task 2 accuracy and reward",
        ]
        header, baseline = list(book["Task 1 RMSE"].iter_rows(values_only=True))[:2]
        assert baseline[header.index("RMSE")] == pytest.approx(np.std([1.2, 1.6, 0.4, 0.8, 2.6, 2.6]))


class TestEditingReport:
    def test_it_lists_the_edits_written_for_each_headline(self, researcher):
        editing = study_from_template(owner=researcher, template=EDITING, name="Edit headlines")
        imported(editing, "id,original\nh1,Local <bakery/> wins award\n")
        judgments_import(
            study=editing,
            judgments=[
                ImportedJudgment(rater=r, item="h1", value={"replacement": w}, kind="crowd")
                for r, w in (("a", "zoo"), ("b", "Zoo"), ("c", "sock"))
            ],
        )
        report = report_json(protocol_report(study=editing))
        (row,) = _records(report, "edits")
        assert (row["edits"], row["distinct words"], row["words"]) == (3, 2, "sock, zoo")
        assert report["summary"]["Editors"] == 3


def _records(report, key):
    table = report["tables"][key]
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]
