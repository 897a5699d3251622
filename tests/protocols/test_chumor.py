"""Chumor 2.0: the two templates, importing labels and preferences, and both reports from the database."""

import io

import pytest
from openpyxl import load_workbook

from annotation.models import Item, Judgment, Study
from annotation.protocols import get_template, protocol_import, study_from_template
from judging.services.judges import ensure_baseline_judges
from judging.services.runs import process_run, run_create
from ratings.protocols import protocol_report, report_json, write_report_workbook

pytestmark = pytest.mark.django_db

LABELS = """joke_id,joke,explanation,source,joke_types,annotator,label
j1,Joke one.,Explains the pun fully.,human,pun-based;homophonic,A1,good
j1,Joke one.,Explains the pun fully.,human,pun-based;homophonic,A2,good
j1,Joke one.,Explains the pun fully.,human,pun-based;homophonic,A3,Fully explains
j1,Joke one.,Misses the pun.,GPT-4o,pun-based;homophonic,A1,bad
j1,Joke one.,Misses the pun.,GPT-4o,pun-based;homophonic,A2,bad
j1,Joke one.,Misses the pun.,GPT-4o,pun-based;homophonic,A3,good
j2,Joke two.,Gets the custom.,GPT-4o,Cultural,A1,1
j2,Joke two.,Gets the custom.,GPT-4o,Cultural,A2,yes
j2,Joke two.,Gets the custom.,GPT-4o,Cultural,A3,0
j3,Joke three.,Retells it.,gpt-4o,situational,,
"""

PREFERENCES = """joke_id,joke,human_explanation,llm_explanation,annotator,choice,shown_first
p1,Joke one.,Human says why.,Model says why.,A1,human,
p1,Joke one.,Human says why.,Model says why.,A2,Explanation 1,human
p1,Joke one.,Human says why.,Model says why.,A3,llm,
p2,Joke two.,Human two.,Model two.,A1,2,human
p2,Joke two.,Human two.,Model two.,A2,llm,
p2,Joke two.,Human two.,Model two.,A3,equally good,
p3,Joke three.,Human three.,Model three.,A1,human,
p3,Joke three.,Human three.,Model three.,A2,llm,
p3,Joke three.,Human three.,Model three.,A3,equal,
p4,Joke four.,Human four.,Model four.,A1,equal,
p4,Joke four.,Human four.,Model four.,A2,tie,
p4,Joke four.,Human four.,Model four.,A3,human,
"""


@pytest.fixture
def labels_study(researcher):
    return study_from_template(owner=researcher, template="chumor-explanation", name="Explanations")


@pytest.fixture
def preference_study(researcher):
    return study_from_template(owner=researcher, template="chumor-preference", name="Preferences")


def imported(study, text: str, filename: str = "chumor.csv"):
    return protocol_import(study=study, data=text.encode(), filename=filename)


def table(report, key: str):
    return next(t for t in report.tables() if t.key == key)


class TestTemplates:
    def test_the_label_study_asks_five_annotators_good_or_bad(self, labels_study):
        assert labels_study.protocol == "chumor-explanation"
        assert labels_study.task_type == "binary"
        assert [o["label"] for o in labels_study.config["options"]] == ["Fully explains", "Does not fully explain"]
        assert labels_study.config["positive"] == "good"
        assert (labels_study.quota_per_item, labels_study.item_order) == (5, Study.ItemOrder.RANDOM_PER_RATER)
        # A Chinese study: its instructions name the labels as the annotators see them.
        assert labels_study.config["language"] == "zh"
        assert "“完全解释清楚”" in labels_study.instructions_text
        assert "笑话" in labels_study.consent_text

    def test_the_preference_study_asks_three_annotators_in_random_order(self, preference_study):
        assert preference_study.task_type == "pairwise"
        assert preference_study.config["labels"] == ["Explanation 1", "Explanation 2", "Equally good"]
        assert preference_study.quota_per_item == 3
        assert preference_study.item_order == Study.ItemOrder.RANDOM_PER_RATER

    def test_the_label_preset_breaks_judges_down_by_source_and_joke_type(self):
        assert get_template("chumor-explanation").analyses["breakdowns"] == ["source", "joke_types"]


class TestLabelImport:
    def test_it_stores_one_item_per_explanation_with_source_and_joke_types(self, labels_study):
        result = imported(labels_study, LABELS)
        assert result.ok, result.errors
        assert (result.items, result.judgments) == (4, 9)
        item = Item.objects.get(study=labels_study, external_id="j1:gpt-4o")
        assert item.prompt == "Joke one." and item.text == "Misses the pun."
        assert item.metadata == {"joke_id": "j1", "source": "gpt-4o", "joke_types": ["pun-based", "homophonic"]}
        labels = dict(Judgment.objects.filter(item__external_id="j2:gpt-4o").values_list("rater__name", "value__label"))
        assert labels == {"A1": "good", "A2": "good", "A3": "bad"}
        # The row without an annotator only declares an item to label later.
        assert not Judgment.objects.filter(item__external_id="j3:gpt-4o").exists()

    def test_every_bad_row_is_named_and_nothing_is_written(self, labels_study):
        bad = """joke_id,joke,explanation,source,joke_types,annotator,label
j1,Joke one.,Good one.,human,cultural,A1,maybe
j1,Joke one.,A different text.,human,cultural,A2,good
,Joke two.,Explains.,human,cultural,A1,good
j3,Joke three.,Explains.,human,cultural,,good
j4,Joke four.,Explains.,llm,cultural,A1,bad
"""
        result = imported(labels_study, bad)
        assert not result.ok
        assert [e.split(":")[0] for e in result.errors] == ["Row 2", "Row 3", "Row 4", "Row 5"]
        assert "'maybe' is not a label" in result.errors[0]
        assert "explanation differs from Row 2" in result.errors[1]
        assert "joke_id is empty" in result.errors[2]
        assert "has no annotator" in result.errors[3]
        assert not labels_study.items.exists()
        assert not Judgment.objects.exists()

    def test_a_file_without_the_explanation_column_is_refused(self, labels_study):
        result = imported(labels_study, "joke_id,joke,source\nj1,Joke.,human\n")
        assert result.errors == ["The file needs the column(s) explanation; its columns are: joke_id, joke, source."]


class TestPreferenceImport:
    def test_choices_by_source_or_by_position_land_on_the_right_explanation(self, preference_study):
        result = imported(preference_study, PREFERENCES)
        assert result.ok, result.errors
        assert (result.items, result.judgments) == (4, 12)
        item = Item.objects.get(study=preference_study, external_id="p1")
        assert {c.key: c.provenance["source"] for c in item.candidates.all()} == {"human": "human", "llm": "llm"}
        by_position = Judgment.objects.get(item=item, rater__name="A2")
        assert by_position.value == {"choice": "human"} and by_position.shown_order == ["human", "llm"]
        second = Judgment.objects.get(item__external_id="p2", rater__name="A1")
        assert second.value == {"choice": "llm"}
        tie = Judgment.objects.get(item__external_id="p2", rater__name="A3")
        assert tie.value == {"choice": "tie"}

    def test_a_position_without_shown_first_is_a_row_error(self, preference_study):
        bad = """joke_id,joke,human_explanation,llm_explanation,annotator,choice,shown_first
p1,Joke.,Human.,Model.,A1,1,
p1,Joke.,Human.,Model.,A2,best,
p1,Joke.,Human.,Model.,A3,human,left
p2,Joke.,,Model.,A1,human,
"""
        result = imported(preference_study, bad)
        assert [e.split(":")[0] for e in result.errors] == ["Row 2", "Row 3", "Row 4", "Row 5"]
        assert "shown_first must say human or llm" in result.errors[0]
        assert "'best' is not a choice" in result.errors[1]
        assert "shown_first must be human or llm" in result.errors[2]
        assert "human_explanation is empty" in result.errors[3]
        assert not preference_study.items.exists()


class TestExplanationReport:
    def test_a_study_without_answers_renders_and_says_what_is_missing(self, labels_study):
        imported(labels_study, "joke_id,joke,explanation,source,joke_types\nj1,Joke.,Explains.,human,cultural\n")
        report = protocol_report(study=labels_study)
        assert any("No human labels yet" in n for n in report.notes)
        assert any("No judge scores" in n for n in report.notes)
        assert report_json(report)["summary"]["Items (joke + explanation)"] == 1

    def test_majority_labels_and_a_constant_judge_scored_by_source_and_joke_type(self, labels_study, researcher):
        imported(labels_study, LABELS)
        constant = next(j for j in ensure_baseline_judges(owner=researcher) if j.baseline == "constant")
        process_run(run_id=run_create(study=labels_study, judge=constant, enqueue=False).pk)
        report = protocol_report(study=labels_study)
        majority = {r[0]: r[-1] for r in table(report, "majority_labels").rows}
        assert majority == {"j1:human": "good", "j1:gpt-4o": "bad", "j2:gpt-4o": "good"}
        said = {j.value["label"] for j in Judgment.objects.filter(rater=constant.rater)}
        assert len(said) == 1  # a constant judge says the same thing every time
        right = {"good": 2, "bad": 1}[said.pop()]
        overall = table(report, "judges_overall").rows
        assert [(r[0], r[3], r[4]) for r in overall] == [(constant.name, 3, right)]
        by_type = {r[1]: r[2] for r in table(report, "judges_by_joke_type").rows}
        assert by_type == {"cultural": 1, "homophonic": 2, "pun-based": 2}
        by_source = {r[1]: r[2] for r in table(report, "judges_by_source").rows}
        assert by_source == {"gpt-4o": 2, "human": 1}
        assert {"accuracy-by-joke-type", "accuracy-by-source"} <= {f.key for f in report.figures()}
        assert report.figure("accuracy-by-joke-type").plot.png.startswith(b"\x89PNG")

    def test_the_report_exports_one_sheet_per_table(self, labels_study):
        imported(labels_study, LABELS)
        stream = io.BytesIO()
        write_report_workbook(protocol_report(study=labels_study), stream)
        book = load_workbook(io.BytesIO(stream.getvalue()))
        assert book.sheetnames[:4] == [
            "Summary",
            "Majority label per item",
            "Majority labels by source",
            "Annotators vs others' majority",
        ]
        rows = list(book["Majority label per item"].values)
        assert rows[0] == ("item", "source", "joke types", "good", "bad", "majority")
        assert ("j1:human", "human", "pun-based; homophonic", 3, 0, "good") in rows


class TestPreferenceReport:
    def test_win_rates_count_undecided_jokes_and_agreement_is_the_share_of_agreeing_pairs(self, preference_study):
        imported(preference_study, PREFERENCES)
        report = protocol_report(study=preference_study)
        majority = {r[0]: r[-1] for r in table(report, "per_joke_majority").rows}
        assert majority == {"p1": "human", "p2": "llm", "p3": "undecided", "p4": "tie"}
        wins = {r[0]: (r[1], r[2]) for r in table(report, "win_rates").rows}
        assert wins == {"human": (1, 0.25), "llm": (1, 0.25), "tie": (1, 0.25), "undecided": (1, 0.25)}
        agreement = {r[0]: r[1] for r in table(report, "agreement").rows}
        # Each joke with a 2-1 split has 1 agreeing pair of 3; the all-different joke has none.
        assert agreement["raw percentage agreement"] == pytest.approx(0.25, abs=1e-3)
        assert "Fleiss' κ" in agreement

    def test_a_study_without_votes_still_renders(self, preference_study):
        report = protocol_report(study=preference_study)
        assert any("No human votes yet" in n for n in report.notes)
        assert report.figure("win-rates") is not None
