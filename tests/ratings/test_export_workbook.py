"""The study workbook, checked sheet by sheet against the database with openpyxl and pandas."""

import statistics
from collections import Counter

import pandas as pd
import pytest
from openpyxl import load_workbook

from annotation.models import Enrollment, Item, Judgment, Rater
from annotation.privacy import pseudonym
from annotation.services.studies import ItemSpec, items_create
from ratings.exports import item_figures
from ratings.exports.item_figures import ScaleFigures
from ratings.exports.judge_sheets import judge_provenance
from ratings.exports.workbook import SHEETS, write_workbook
from tests.conftest import build_study
from tests.ratings.export_helpers import judge_directly, rate_as_crowd

pytestmark = pytest.mark.django_db

# Included raters p1–p3; p4 is excluded after failing an attention check.
RATINGS = {
    "item-0": (3, 3, 2, 0),
    "item-1": (0, 1, 1, 3),
    "item-2": (1, 2, 1, 0),
    "item-3": (2, 2, 2, 3),
    "item-4": (1, 1, 1, 3),
}
# Descending median, then descending mean, then listed position.
CONSENSUS_ORDER = ["item-0", "item-3", "item-2", "item-4", "item-1"]
API_KEY = "sk-live-abcdefghijklmnopqrstuvwxyz"


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def jest_study(researcher):
    study = build_study(researcher, n_items=5, quota_per_item=4)
    answers = {f"p{r + 1}": {item: {"rating": values[r]} for item, values in RATINGS.items()} for r in range(4)}
    raters = rate_as_crowd(study, answers)
    items_create(
        study=study,
        items=[ItemSpec(external_id="check-1", text="Pick 0 here.", gold={"rating": 0}, is_attention_check=True)],
    )
    check = Item.objects.get(study=study, external_id="check-1")
    judge_directly(study, raters["p4"], check, value={"rating": 3}, attention_passed=False)
    judge_directly(study, raters["p1"], check, value={"rating": 0}, attention_passed=True)
    Enrollment.objects.filter(study=study, rater=raters["p4"]).update(
        excluded=True, excluded_reason="failed 1 attention check(s)"
    )
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name="gpt-test")
    item0 = Item.objects.get(study=study, external_id="item-0")
    item1 = Item.objects.get(study=study, external_id="item-1")
    judge_directly(
        study,
        judge,
        item0,
        value={"rating": 2},
        provenance={
            "raw_response": "2",
            "api_key": API_KEY,
            "request": {"headers": {"Authorization": f"Bearer {API_KEY}"}, "model": "gpt-test"},
            "usage": {"prompt_tokens": 120, "completion_tokens": 1},
            "latency_ms": 321,
        },
    )
    judge_directly(
        study,
        judge,
        item1,
        value=None,
        status=Judgment.Status.UNPARSEABLE,
        provenance={"raw_response": "It is quite funny, I would say.", "secret": "hunter2"},
    )
    study.raters = raters
    study.judge = judge
    return study


@pytest.fixture
def exported(jest_study, tmp_path):
    path = tmp_path / "study.xlsx"
    write_workbook(jest_study, str(path))
    return jest_study, path


def rows(sheet):
    return [list(r) for r in sheet.iter_rows(values_only=True)]


def included_values(item_external_id):
    return list(RATINGS[item_external_id][:3])


class TestWorkbookShape:
    def test_every_sheet_is_there_in_order(self, exported):
        _, path = exported
        assert load_workbook(path).sheetnames == list(SHEETS)

    def test_pandas_reads_every_sheet(self, exported):
        _, path = exported
        frames = pd.read_excel(path, sheet_name=None)
        assert list(frames) == list(SHEETS)
        assert len(frames["Items"]) == 5
        assert len(frames["Ratings"]) == 5

    def test_sheets_without_data_say_so(self, exported):
        _, path = exported
        wb = load_workbook(path)
        assert rows(wb["Rankings"]) == [["Rankings apply to pairwise studies; this study collects rating scale."]]


def width(sheet, column: int) -> float | None:
    """The width set for a column (1-based); a <col> element may cover a range of columns."""
    for dimension in sheet.column_dimensions.values():
        if dimension.customWidth and dimension.min <= column <= dimension.max:
            return dimension.width
    return None


class TestColumnWidths:
    def test_every_sheet_sets_the_width_of_every_column_it_uses(self, exported):
        _, path = exported
        for sheet in load_workbook(path):
            used = {cell.column for row in sheet.iter_rows() for cell in row if cell.value is not None}
            unset = [c for c in used if not width(sheet, c)]
            assert not unset, (sheet.title, unset)

    @pytest.mark.parametrize("name", ["Raters", "LLM judgments"])
    def test_times_are_date_cells_in_columns_wide_enough_to_show_them(self, exported, name):
        # LibreOffice shows ### for a date in a column narrower than its text (issue 15).
        _, path = exported
        sheet = load_workbook(path)[name]
        dates = [cell for row in sheet.iter_rows(min_row=2) for cell in row if cell.is_date]
        assert dates
        for cell in dates:
            assert cell.number_format == "yyyy-mm-dd hh:mm:ss"
            assert width(sheet, cell.column) >= len("2026-01-01 00:00:00")


class TestReadableLayout:
    """Frozen headers, filters, number formats and print set-up, as openpyxl reads them back."""

    def test_each_table_freezes_and_filters_under_its_header(self, exported):
        _, path = exported
        book = load_workbook(path)
        for name in ("Items", "Ratings", "Rater stats"):
            sheet = book[name]
            header = [c for c in next(sheet.iter_rows(min_row=1, max_row=1, values_only=True)) if c is not None]
            frozen = sheet.freeze_panes
            assert frozen is not None and frozen.endswith("2"), (name, frozen)
            assert sheet.auto_filter.ref and sheet.auto_filter.ref.startswith("A1:"), name
            last_row = int("".join(ch for ch in sheet.auto_filter.ref.split(":")[1] if ch.isdigit()))
            assert last_row == sheet.max_row or name == "Rater stats", (name, sheet.auto_filter.ref)
            assert sheet.print_title_rows == "$1:$1", name
            assert len(header) > 1

    def test_every_sheet_prints_landscape_one_page_wide(self, exported):
        _, path = exported
        for sheet in load_workbook(path):
            assert sheet.page_setup.orientation == "landscape", sheet.title
            assert sheet.sheet_properties.pageSetUpPr.fitToPage, sheet.title
            # One page wide (1 is the file format's default, left unwritten), as many pages tall as needed.
            assert sheet.page_setup.fitToWidth in (None, 1), sheet.title
            assert sheet.page_setup.fitToHeight == 0, sheet.title

    def test_sds_show_three_decimals_at_most_and_keep_every_digit(self, exported):
        _, path = exported
        sheet = load_workbook(path)["Rater stats"]
        header = [c.value for c in sheet[1]]
        sd = sheet.cell(row=2, column=header.index("SD") + 1)
        assert isinstance(sd.value, float) and not sd.value.is_integer()
        assert sd.number_format == "0.0##"
        assert len(repr(sd.value)) > 6  # the cell keeps the full value; only the display rounds
        counts = sheet.cell(row=2, column=header.index("Judgments (n)") + 1)
        assert counts.number_format == "General"

    def test_a_tiny_number_is_not_shown_as_zero(self, tmp_path):
        from ratings.exports.xlsx_book import Book

        path = tmp_path / "tiny.xlsx"
        book = Book(str(path))
        sheet = book.sheet("Figures")
        sheet.append(["p", "mean"], bold=True)
        sheet.append([2e-9, 2.5])
        book.close()
        cells = load_workbook(path)["Figures"][2]
        assert (cells[0].number_format, cells[1].number_format) == ("0.00E+00", "0.0##")


class TestItemsSheet:
    def test_items_are_sorted_by_descending_consensus(self, exported):
        _, path = exported
        frame = pd.read_excel(path, sheet_name="Items")
        assert frame["Item"].tolist() == CONSENSUS_ORDER
        assert frame["Rank"].tolist() == [1, 2, 3, 4, 5]

    def test_scale_figures_are_the_same_whether_items_come_in_one_batch_or_many(self, monkeypatch):
        class Scale:  # the two things ScaleFigures asks of a study: its points and each value's number
            def scale_points(self):
                return [0.0, 1.0, 2.0, 3.0]

            def number(self, item_id, value):
                return float(value)

        ratings = {10: [3, 3, 2], 11: [], 12: [1], 13: [3, 2, 3], 14: [0, 3]}

        def rows(batch):
            monkeypatch.setattr(item_figures, "BATCH", batch)
            figures = ScaleFigures(Scale())
            for item_id, values in ratings.items():
                figures.add(item_id, values)
            return list(figures.sorted_rows())

        many = rows(2)
        assert many == rows(4096)
        # Descending median, then mean, then listed position; the unrated item last.
        assert [item_id for item_id, _ in many] == [10, 13, 14, 12, 11]
        by_item = dict(many)
        n, median, mean, sd, exact, adjacent, mad, equal, within_one, majority = by_item[10]
        assert (n, median, majority, exact, adjacent, equal, within_one) == (3, 3.0, 3.0, 66.67, 100.0, "no", "yes")
        assert mean == pytest.approx(8 / 3) and sd == pytest.approx(statistics.stdev([3, 3, 2]))
        assert mad == pytest.approx(statistics.mean(abs(x - 8 / 3) for x in [3, 3, 2]))
        assert by_item[14][7:9] == ["no", "no"]
        assert by_item[12] == [1, 1.0, 1.0, None, None, None, None, None, None, 1.0]
        assert by_item[11] == [0, *([None] * 9)]

    def test_per_item_figures_come_from_the_included_raters_only(self, exported):
        _, path = exported
        frame = pd.read_excel(path, sheet_name="Items").set_index("Item")
        for item in RATINGS:
            values = included_values(item)
            mean = statistics.mean(values)
            row = frame.loc[item]
            assert row["Ratings (n)"] == 3
            assert row["Median (consensus)"] == statistics.median(values)
            assert row["Mean"] == pytest.approx(mean)
            assert row["SD"] == pytest.approx(statistics.stdev(values))
            assert row["Exact agreement %"] == pytest.approx(100 * max(Counter(values).values()) / 3, abs=0.01)
            window = max(sum(1 for x in values if v <= x <= v + 1) for v in values)
            assert row["Adjacent agreement %"] == pytest.approx(100 * window / 3, abs=0.01)
            assert row["Mean absolute deviation"] == pytest.approx(statistics.mean(abs(x - mean) for x in values))
            assert row["All raters equal"] == ("yes" if len(set(values)) == 1 else "no")
            assert row["All within one point"] == ("yes" if max(values) - min(values) <= 1 else "no")

    def test_a_two_way_tie_goes_to_the_higher_rating(self, exported):
        _, path = exported
        frame = pd.read_excel(path, sheet_name="Items").set_index("Item")
        assert frame.loc["item-0", "Majority rating (ties to higher)"] == 3
        assert frame.loc["item-1", "Majority rating (ties to higher)"] == 1

    def test_item_texts_come_with_the_figures(self, exported):
        study, path = exported
        frame = pd.read_excel(path, sheet_name="Items").set_index("Item")
        for item in Item.objects.filter(study=study, is_attention_check=False):
            assert frame.loc[item.external_id, "Text"] == item.text
            assert frame.loc[item.external_id, "Prompt"] == item.prompt

    def test_attention_checks_are_not_items_to_rank(self, exported):
        _, path = exported
        frame = pd.read_excel(path, sheet_name="Items")
        assert "check-1" not in frame["Item"].tolist()

    def test_a_rater_subset_makes_the_consensus(self, jest_study, tmp_path):
        p1, p3 = jest_study.raters["p1"], jest_study.raters["p3"]
        path = tmp_path / "subset.xlsx"
        write_workbook(jest_study, str(path), rater_subset=[p1.pk, p3.pk])
        frame = pd.read_excel(path, sheet_name="Items").set_index("Item")
        for item, values in RATINGS.items():
            assert frame.loc[item, "Ratings (n)"] == 2
            assert frame.loc[item, "Median (consensus)"] == statistics.median([values[0], values[2]])


def alias(study, rater):
    """The rater's pseudonym in the study (annotation.privacy)."""
    return pseudonym(study_id=study.pk, key=study.pseudonym_key, rater_id=rater.pk)


class TestRatingsSheet:
    def test_every_human_rating_sits_in_its_rater_column(self, exported):
        study, path = exported
        frame = pd.read_excel(path, sheet_name="Ratings").set_index("Item")
        humans = list(study.raters.values())
        # Each person's column is headed by their pseudonym in the study, never their platform id.
        assert list(frame.columns) == ["Prompt", "Text", *[alias(study, r) for r in humans]]
        judged = Judgment.objects.filter(study=study, item__is_attention_check=False, rater__in=humans)
        assert judged.count() == 20
        for j in judged.select_related("item", "rater"):
            assert frame.loc[j.item.external_id, alias(study, j.rater)] == j.value["rating"]

    def test_items_keep_their_listed_order(self, exported):
        _, path = exported
        frame = pd.read_excel(path, sheet_name="Ratings")
        assert frame["Item"].tolist() == list(RATINGS)


class TestRaterStatsSheet:
    def test_each_rater_is_described_from_their_own_ratings(self, exported):
        study, path = exported
        frame = pd.read_excel(path, sheet_name="Rater stats").set_index("Rater")
        for index, (participant, rater) in enumerate(study.raters.items()):
            values = [v[index] for v in RATINGS.values()]
            row = frame.loc[alias(study, rater)]
            assert row["Judgments (n)"] == 5
            assert row["Mean"] == pytest.approx(statistics.mean(values))
            assert row["SD"] == pytest.approx(statistics.stdev(values))
            assert row["Median"] == statistics.median(values)
            for point in range(4):
                assert row[f"n at {point}"] == values.count(point)
            assert row["Excluded"] == ("yes" if participant == "p4" else "no")


class TestRatersSheet:
    def test_raters_show_checks_exclusion_and_kind(self, exported):
        study, path = exported
        frame = pd.read_excel(path, sheet_name="Raters").set_index("Rater id")
        p1, p4 = study.raters["p1"], study.raters["p4"]
        assert frame.loc[p4.pk, "Attention checks failed"] == 1
        assert frame.loc[p4.pk, "Excluded"] == "yes"
        assert frame.loc[p4.pk, "Exclusion reason"] == "failed 1 attention check(s)"
        assert frame.loc[p1.pk, "Attention checks passed"] == 1
        assert frame.loc[p1.pk, "Excluded"] == "no"
        assert frame.loc[p1.pk, "Judgments"] == 6
        assert frame.loc[study.judge.pk, "Kind"] == "llm"
        assert frame.loc[study.judge.pk, "Usable judgments"] == 1
        assert len(frame) == 5

    def test_subset_membership_is_marked_when_a_subset_is_chosen(self, jest_study, tmp_path):
        p2 = jest_study.raters["p2"]
        path = tmp_path / "subset.xlsx"
        write_workbook(jest_study, str(path), rater_subset=[jest_study.raters["p1"].pk, p2.pk])
        frame = pd.read_excel(path, sheet_name="Raters").set_index("Rater id")
        assert frame.loc[p2.pk, "In subset"] == "yes"
        assert frame.loc[jest_study.raters["p3"].pk, "In subset"] == "no"


class TestLlmJudgmentsSheet:
    def test_judge_rows_carry_status_value_raw_response_tokens_and_latency(self, exported):
        study, path = exported
        frame = pd.read_excel(path, sheet_name="LLM judgments").set_index("Item")
        assert len(frame) == 2
        ok = frame.loc["item-0"]
        assert ok["Status"] == "ok"
        assert ok["Parsed value"] == 2
        assert ok["Raw response"] == "2"  # text stays text
        assert ok["Input tokens"] == 120
        assert ok["Output tokens"] == 1
        assert ok["Latency ms"] == 321
        failed = frame.loc["item-1"]
        assert failed["Status"] == "unparseable"
        assert failed["Raw response"] == "It is quite funny, I would say."

    def test_no_credential_reaches_the_workbook(self, exported):
        _, path = exported
        wb = load_workbook(path)
        text = "\n".join(str(v) for ws in wb for row in ws.iter_rows(values_only=True) for v in row if v is not None)
        assert API_KEY not in text
        assert "hunter2" not in text
        assert "Bearer" not in text
        assert '"model": "gpt-test"' in text

    def test_a_study_without_judges_says_so(self, researcher, tmp_path):
        study = build_study(researcher, n_items=2)
        path = tmp_path / "plain.xlsx"
        write_workbook(study, str(path))
        assert rows(load_workbook(path)["LLM judgments"]) == [["No LLM judgments in this study."]]


class TestJudgeProvenance:
    def test_tokens_add_up_over_retry_attempts_and_latency_is_the_answers(self):
        provenance = {
            "raw": "B",
            "attempts": [
                {"attempt": 1, "prompt_tokens": 100, "completion_tokens": 0, "latency_ms": 50},
                {"attempt": 2, "prompt_tokens": 100, "completion_tokens": 2, "latency_ms": 70},
            ],
        }
        raw, tokens_in, tokens_out, latency, rest = judge_provenance(provenance)
        assert (raw, tokens_in, tokens_out, latency) == ("B", 200, 2, 70)
        assert "raw" not in rest


class TestAgreementSheet:
    def test_study_level_figures_match_the_per_item_flags(self, exported):
        _, path = exported
        figures = pd.read_excel(path, sheet_name="Agreement").set_index("Metric")["All included human raters"]
        items = pd.read_excel(path, sheet_name="Items")
        assert figures["Items"] == 5
        assert figures["Raters"] == 3
        assert figures["Exact agreement %"] == pytest.approx(100 * (items["All raters equal"] == "yes").mean())
        assert figures["Adjacent agreement %"] == pytest.approx(100 * (items["All within one point"] == "yes").mean())
        assert figures["Exact agreement %"] == pytest.approx(100 * (items["Exact agreement %"] == 100).mean())

    def test_the_subset_is_compared_with_everyone(self, jest_study, tmp_path):
        path = tmp_path / "subset.xlsx"
        write_workbook(jest_study, str(path), rater_subset=[jest_study.raters["p1"].pk, jest_study.raters["p3"].pk])
        frame = pd.read_excel(path, sheet_name="Agreement").set_index("Metric")
        assert frame.loc["Raters", "All included human raters"] == 3
        assert frame.loc["Raters", "Selected subset"] == 2


class TestMetadataSheet:
    def test_it_records_the_study_settings_version_and_definitions(self, exported):
        study, path = exported
        meta = dict(rows(load_workbook(path)["Metadata"])[1:])
        assert meta["Study"] == study.name
        assert meta["Task type"] == "ordinal"
        assert meta["Software"].startswith("Funnybone ")
        assert "Exact-agreement %" in meta["Exact agreement"]
        assert meta["Judgments (all)"] == Judgment.objects.filter(study=study).count()
        assert meta["Human raters excluded"] == 1


class TestPairwiseWorkbook:
    @pytest.fixture
    def pairwise(self, researcher):
        study = build_study(researcher, task_type="pairwise", n_items=3, n_candidates=2, quota_per_item=3)
        # c0 is written by secret-model-0 and wins most votes.
        answers = {
            "a": {"item-0": {"choice": "c0"}, "item-1": {"choice": "c0"}, "item-2": {"choice": "c1"}},
            "b": {"item-0": {"choice": "c0"}, "item-1": {"choice": "tie"}, "item-2": {"choice": "c0"}},
            "c": {"item-0": {"choice": "c0"}, "item-1": {"choice": "c1"}, "item-2": {"choice": "c0"}},
        }
        rate_as_crowd(study, answers)
        return study

    def test_items_show_votes_and_win_shares(self, pairwise, tmp_path):
        path = tmp_path / "pairwise.xlsx"
        write_workbook(pairwise, str(path))
        frame = pd.read_excel(path, sheet_name="Items").set_index("Item")
        assert frame.index.tolist() == ["item-0", "item-2", "item-1"]
        assert frame.loc["item-0", "Consensus (majority)"] == "c0"
        assert frame.loc["item-0", "First wins"] == 3
        assert frame.loc["item-1", "Ties"] == 1
        assert frame.loc["item-1", "First-candidate win share %"] == pytest.approx(50)
        assert frame.loc["item-2", "Winner's win share %"] == pytest.approx(200 / 3, abs=0.01)
        assert frame.loc["item-0", "Consensus candidate text"] == "Joke 0-0 about a cat."
        assert "secret-model-0" in frame.loc["item-0", "Consensus candidate provenance"]

    def test_rankings_rank_the_generators(self, pairwise, tmp_path):
        path = tmp_path / "pairwise.xlsx"
        write_workbook(pairwise, str(path))
        sheet = rows(load_workbook(path)["Rankings"])
        assert sheet[0][0] == "Human raters (included)"
        table = [r for r in sheet[2:] if isinstance(r[0], int)]
        assert [r[1] for r in table] == ["secret-model-0", "secret-model-1"]
        assert table[0][2] > table[1][2]
        # Win rate: 6 wins and one tie in 9 games (ties count half).
        assert table[0][5] == pytest.approx(100 * 6.5 / 9, abs=0.05)  # printed to one decimal
        assert table[0][6] == 9


class TestOtherTaskTypes:
    @pytest.mark.parametrize(
        ("task_type", "n_candidates", "answers", "consensus_column", "expected"),
        [
            ("binary", 0, ({"label": "funny"}, {"label": "funny"}), "Consensus (majority)", "funny"),
            ("pick_one", 3, ({"choice": "c2"}, {"choice": "c2"}), "Consensus (majority)", "c2"),
            ("vote_allocation", 3, ({"votes": {"c1": 2}}, {"votes": {"c1": 1, "c0": 1}}), "Most-voted candidate", "c1"),
        ],
    )
    def test_every_sheet_is_written_with_the_consensus(
        self, researcher, tmp_path, task_type, n_candidates, answers, consensus_column, expected
    ):
        study = build_study(researcher, task_type=task_type, n_items=1, n_candidates=n_candidates, quota_per_item=2)
        rate_as_crowd(study, {f"p{i}": {"item-0": answer} for i, answer in enumerate(answers)})
        path = tmp_path / f"{task_type}.xlsx"
        write_workbook(study, str(path))
        frames = pd.read_excel(path, sheet_name=None)
        assert list(frames) == list(SHEETS)
        assert frames["Items"].loc[0, consensus_column] == expected
        assert frames["Items"].loc[0, "Ratings (n)"] == 2

    def test_written_answers_are_kept_and_agreement_says_why_it_is_empty(self, researcher, tmp_path):
        study = build_study(researcher, task_type="explanation", n_items=1, quota_per_item=2)
        texts = ["The cat is the punchline.", "It plays on the double meaning."]
        rate_as_crowd(study, {f"p{i}": {"item-0": {"text": text}} for i, text in enumerate(texts)})
        path = tmp_path / "explanations.xlsx"
        write_workbook(study, str(path))
        wb = load_workbook(path)
        assert sorted(rows(wb["Ratings"])[1][3:]) == sorted(texts)
        assert rows(wb["Agreement"])[0][0].startswith("Agreement statistics need ratings or labels")
        assert rows(wb["Rankings"]) == [
            ["Rankings apply to pairwise studies; this study collects written explanation."]
        ]

    def test_a_study_without_judgments_still_has_every_sheet(self, researcher, tmp_path):
        study = build_study(researcher, n_items=2)
        path = tmp_path / "empty.xlsx"
        write_workbook(study, str(path))
        wb = load_workbook(path)
        assert wb.sheetnames == list(SHEETS)
        assert rows(wb["Ratings"]) == [["No human raters have judged this study yet."]]
        assert [r[1] for r in rows(wb["Items"])[1:]] == ["item-0", "item-1"]
        assert rows(wb["Agreement"]) == [["Agreement needs at least two included human raters."]]
