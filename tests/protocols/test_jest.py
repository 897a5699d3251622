"""JEST: the template, importing long and wide rating sheets, and the report laid out from the database."""

import io

import pytest
from openpyxl import Workbook, load_workbook

from annotation.models import Item, Judgment, Rater, Study
from annotation.protocols import get_template, protocol_import, study_from_template
from judging.services.judges import ensure_baseline_judges
from judging.services.runs import process_run, run_create
from ratings.protocols import protocol_report, report_json, write_report_workbook

pytestmark = pytest.mark.django_db

LONG = b"""id,setup,response,rater,rating
t1,The weather app said forty percent chance of rain.,So I took forty percent of an umbrella.,Ana,3
t1,The weather app said forty percent chance of rain.,So I took forty percent of an umbrella.,Ben,2
t2,I bought a book on being decisive.,I think I'll read it. Probably.,Ana,1
t2,I bought a book on being decisive.,I think I'll read it. Probably.,Ben,1
t3,The bakery sign said fresh bread daily.,It did not say which day.,,
"""

WIDE = b"""id,setup,response,Ana,Ben,Cleo
t1,Setup one.,Response one.,3,2,3
t2,Setup two.,Response two.,1,1,0
t3,Setup three.,Response three.,2,,2
t4,Setup four.,Response four.,,,
"""


@pytest.fixture
def jest_study(researcher):
    return study_from_template(owner=researcher, template="jest", name="Expert panel")


def imported(study, data: bytes, filename: str = "ratings.csv"):
    return protocol_import(study=study, data=data, filename=filename)


def ratings_of(study) -> dict[tuple[str, str], int]:
    rows = Judgment.objects.filter(study=study).values_list("rater__name", "item__external_id", "value")
    return {(rater, item): value["rating"] for rater, item, value in rows}


class TestTemplate:
    def test_it_sets_up_a_fully_crossed_0_to_3_panel_in_one_shared_order(self, jest_study):
        assert jest_study.protocol == "jest"
        assert jest_study.task_type == "ordinal"
        assert jest_study.config["points"] == [0, 1, 2, 3]
        assert jest_study.config["labels"] == ["Not funny", "Somewhat funny", "Funny", "Very funny"]
        assert (jest_study.quota_per_item, jest_study.item_order) == (7, Study.ItemOrder.SHARED_RANDOM)
        assert jest_study.attention_check_rate == 0
        assert "typical adult audience" in jest_study.instructions_text
        assert "anonymous" in jest_study.consent_text

    def test_its_analyses_preset_selects_three_raters(self):
        assert get_template("jest").analyses["subset_size"] == 3

    def test_settings_can_be_overridden_one_by_one(self, researcher):
        study = study_from_template(owner=researcher, template="jest", name="Bigger panel", quota_per_item=9)
        assert study.quota_per_item == 9
        assert study.item_order == Study.ItemOrder.SHARED_RANDOM


class TestLongImport:
    def test_a_long_sheet_creates_the_texts_and_every_rating(self, jest_study):
        result = imported(jest_study, LONG)
        assert result.ok, result.errors
        assert (result.items, result.judgments) == (3, 4)
        item = Item.objects.get(study=jest_study, external_id="t1")
        assert (item.prompt, item.text) == (
            "The weather app said forty percent chance of rain.",
            "So I took forty percent of an umbrella.",
        )
        assert ratings_of(jest_study) == {("Ana", "t1"): 3, ("Ben", "t1"): 2, ("Ana", "t2"): 1, ("Ben", "t2"): 1}
        assert set(Rater.objects.filter(judgments__study=jest_study).values_list("kind", flat=True)) == {"expert"}

    def test_a_sheet_of_texts_alone_only_adds_items(self, jest_study):
        result = imported(jest_study, b"id,setup,response\na,Setup a.,Response a.\nb,Setup b.,Response b.\n")
        assert (result.ok, result.items, result.judgments) == (True, 2, 0)

    def test_every_bad_row_is_named_and_nothing_is_written(self, jest_study):
        data = b"""id,setup,response,rater,rating
t1,Setup.,Response.,Ana,4
t1,Setup.,Response.,,2
t2,,Response two.,Ana,1
t3,Setup three.,Response three.,Ben,
t1,Another setup.,Response.,Ben,1
t4,Setup four.,Response four.,Ana,two
"""
        result = imported(jest_study, data)
        assert result.errors == [
            "Row 2: Ana's rating '4' is not one of 0, 1, 2, 3.",
            "Row 3: the rating '2' has no rater.",
            "Row 4: setup is empty.",
            "Row 5: Ben has no rating.",
            "Row 6: the id 't1' has a different setup or response than in Row 2.",
            "Row 7: Ana's rating 'two' is not one of 0, 1, 2, 3.",
        ]
        assert not Item.objects.filter(study=jest_study).exists()
        assert not Judgment.objects.filter(study=jest_study).exists()

    def test_a_rater_rating_the_same_text_twice_is_a_row_error(self, jest_study):
        data = b"id,setup,response,rater,rating\nt1,S.,R.,Ana,1\nt1,S.,R.,Ana,2\n"
        result = imported(jest_study, data)
        assert len(result.errors) == 1 and result.errors[0].startswith("Row 3: 'Ana' already judged 't1'")
        assert not Item.objects.filter(study=jest_study).exists()

    def test_a_rater_is_the_same_whether_named_in_a_long_or_a_wide_sheet(self, jest_study):
        assert imported(jest_study, b"id,setup,response,Rater 1\nt1,S.,R.,2\n").ok
        assert imported(jest_study, b"id,setup,response,rater,rating\nt2,S2.,R2.,Rater 1,3\n").ok
        assert ratings_of(jest_study) == {("Rater 1", "t1"): 2, ("Rater 1", "t2"): 3}

    def test_a_file_without_the_text_columns_is_refused_whole(self, jest_study):
        result = imported(jest_study, b"id,joke,rater,rating\nt1,Ha.,Ana,2\n")
        assert result.errors == [
            "The file needs the column(s) setup, response; its columns are: id, joke, rater, rating."
        ]

    def test_a_rating_column_without_a_rater_column_is_refused(self, jest_study):
        result = imported(jest_study, b"id,setup,response,rating\nt1,S.,R.,2\n")
        assert result.errors == ["The file needs the column(s) rater; its columns are: id, setup, response, rating."]


class TestWideImport:
    def test_each_extra_column_is_a_rater_and_empty_cells_are_skipped(self, jest_study):
        result = imported(jest_study, WIDE)
        assert (result.ok, result.items, result.judgments) == (True, 4, 8)
        ratings = ratings_of(jest_study)
        assert ratings[("Cleo", "t2")] == 0
        assert ("Ben", "t3") not in ratings
        assert not any(item == "t4" for _, item in ratings)

    def test_an_excel_sheet_reads_the_same(self, jest_study):
        book = Workbook()
        sheet = book.active
        sheet.append(["id", "setup", "response", "R1", "R2"])
        sheet.append(["x1", "Setup.", "Response.", 3, 2.0])
        buffer = io.BytesIO()
        book.save(buffer)
        result = imported(jest_study, buffer.getvalue(), "panel.xlsx")
        assert (result.ok, result.judgments) == (True, 2)
        assert ratings_of(jest_study) == {("R1", "x1"): 3, ("R2", "x1"): 2}

    def test_every_bad_cell_and_repeated_id_is_named(self, jest_study):
        data = b"id,setup,response,Ana,Ben\nt1,S.,R.,3,9\nt1,S.,R.,1,1\nt2,S.,R.,1.5,x\n"
        result = imported(jest_study, data)
        assert result.errors == [
            "Row 2: Ben's rating '9' is not one of 0, 1, 2, 3.",
            "Row 3: the id 't1' is used again (Row 2).",
            "Row 4: Ana's rating '1.5' is not one of 0, 1, 2, 3.",
            "Row 4: Ben's rating 'x' is not one of 0, 1, 2, 3.",
        ]
        assert not Item.objects.filter(study=jest_study).exists()


PANEL = b"""id,setup,response,A,B,C,D,E
p1,S1.,R1.,0,0,1,0,1
p2,S2.,R2.,1,1,1,0,1
p3,S3.,R3.,2,3,2,1,1
p4,S4.,R4.,3,3,2,1,1
p5,S5.,R5.,3,2,3,1,2
p6,S6.,R6.,0,1,0,0,1
p7,S7.,R7.,2,2,3,1,1
p8,S8.,R8.,1,0,1,0,2
"""


class TestReport:
    def test_a_study_without_ratings_still_renders_and_says_what_is_missing(self, jest_study):
        report = protocol_report(study=jest_study)
        assert any("at least two human raters" in note for note in report.notes)
        assert any("no consensus to compare judges with" in note for note in report.notes)
        assert report_json(report)["tables"]["judges"]["rows"] == []

    def test_it_selects_the_most_balanced_raters_and_shows_before_and_after(self, jest_study):
        assert imported(jest_study, PANEL).ok
        report = protocol_report(study=jest_study)
        data = report_json(report)
        agreement = {row[0]: row[1:] for row in data["tables"]["agreement"]["rows"]}
        assert data["tables"]["agreement"]["columns"] == ["Metric", "All 5 raters", "Selected 3"]
        assert set(agreement) >= {"ICC(2,k)", "Krippendorff's α (ordinal)", "Mean pairwise Spearman ρ"}
        selected = [row[0] for row in data["tables"]["balance"]["rows"] if row[-1] == "yes"]
        # D and E squeeze the scale into 0-2; A, B and C use all four points.
        assert selected == ["A", "B", "C"]
        assert data["summary"]["Selected raters"] == "A, B, C"

    def test_dataset_a_lists_texts_by_descending_consensus(self, jest_study):
        assert imported(jest_study, PANEL).ok
        data = report_json(protocol_report(study=jest_study))
        rows = data["tables"]["dataset-a"]["rows"]
        medians = [row[4] for row in rows]
        assert medians == sorted(medians, reverse=True)
        first = rows[0]  # p4: a, b, c rated 3, 3, 2 -> median 3, 2 of 3 at the median, all within one
        assert (first[1], first[4], first[5], first[6]) == ("p4", 3.0, 66.7, 100.0)
        assert first[7] == pytest.approx(1 / 3, abs=1e-3)

    def test_the_majority_distribution_breaks_ties_toward_the_higher_rating(self, jest_study):
        # Three raters: nothing to select, every rater is a consensus rater.
        data = b"id,setup,response,A,B,C\nq1,S.,R.,0,1,2\nq2,S.,R.,0,0,3\nq3,S.,R.,1,3,3\nq4,S.,R.,0,1,3\n"
        assert imported(jest_study, data).ok
        report = report_json(protocol_report(study=jest_study))
        rows = report["tables"]["majority"]["rows"]
        assert [row[1] for row in rows] == ["Not funny", "Somewhat funny", "Funny", "Very funny"]
        # q1 and q4 are three-way ties: they go to 2 and 3, not to 0.
        assert [row[2] for row in rows] == [1, 0, 1, 2]
        assert any("nothing to choose" in note for note in report["notes"])

    def test_dataset_b_holds_every_raw_rating_and_per_rater_statistics(self, jest_study):
        assert imported(jest_study, PANEL).ok
        data = report_json(protocol_report(study=jest_study))
        raw = data["tables"]["dataset-b"]
        assert raw["columns"] == ["Id", "Setup", "Response", "A", "B", "C", "D", "E"]
        assert raw["rows"][0] == ["p1", "S1.", "R1.", 0, 0, 1, 0, 1]
        stats = {row[0]: row for row in data["tables"]["dataset-b-stats"]["rows"]}
        assert stats["D"][1:3] == [8, 0.5]
        assert stats["D"][5:] == [4, 4, 0, 0]

    def test_it_draws_the_heatmap_and_the_distributions(self, jest_study):
        assert imported(jest_study, PANEL).ok
        report = protocol_report(study=jest_study)
        for key in ("spearman-heatmap", "rater-distributions"):
            figure = report.figure(key)
            assert figure.plot.png.startswith(b"\x89PNG") and "<svg" in figure.plot.svg

    def test_baseline_judges_get_a_row_with_kappa_and_rho_intervals(self, jest_study, researcher):
        assert imported(jest_study, PANEL).ok
        for judge in ensure_baseline_judges(owner=researcher):
            run = run_create(study=jest_study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        data = report_json(protocol_report(study=jest_study))
        rows = {
            row[0]: dict(zip(data["tables"]["judges"]["columns"], row, strict=True))
            for row in data["tables"]["judges"]["rows"]
        }
        assert len(rows) == 3
        for row in rows.values():
            assert row["Texts"] == 8 and row["Missing"] == 0
            if row["κ (quadratic)"] is not None:
                assert row["κ CI low"] <= row["κ (quadratic)"] <= row["κ CI high"]

    def test_the_workbook_has_a_sheet_per_table(self, jest_study):
        assert imported(jest_study, PANEL).ok
        buffer = io.BytesIO()
        write_report_workbook(protocol_report(study=jest_study), buffer)
        book = load_workbook(io.BytesIO(buffer.getvalue()))
        assert {"Summary", "Dataset A — texts by consensus", "Dataset B — raw ratings"} <= set(book.sheetnames)
        sheet = book["Dataset B — raw ratings"]
        assert [c.value for c in sheet[1]][:4] == ["Id", "Setup", "Response", "A"]


class TestReportPage:
    def test_the_owner_sees_the_tables_and_can_download_the_figures_and_workbook(self, client, jest_study, researcher):
        assert imported(jest_study, PANEL).ok
        client.force_login(researcher)
        page = client.get(f"/analysis/{jest_study.slug}/protocol/")
        assert page.status_code == 200
        html = page.content.decode()
        for title in ("Agreement: all raters → selected subset", "Dataset A — texts by consensus", "Majority-vote"):
            assert title in html
        figure = client.get(f"/analysis/{jest_study.slug}/protocol/figures/spearman-heatmap.png")
        assert figure.status_code == 200 and figure["Content-Type"] == "image/png"
        workbook = client.get(f"/analysis/{jest_study.slug}/protocol/workbook.xlsx")
        assert workbook.status_code == 200
        assert "Dataset A — texts by consensus" in load_workbook(io.BytesIO(b"".join(workbook))).sheetnames

    def test_another_researcher_cannot_see_it(self, client, jest_study, other_researcher):
        client.force_login(other_researcher)
        assert client.get(f"/analysis/{jest_study.slug}/protocol/").status_code in (403, 404)
