# SPDX-License-Identifier: GPL-3.0-or-later
"""By-rater-group breakdowns (analysis and alignment), questionnaire exports, and steps kept out of aggregates."""

import io
import shutil
import subprocess

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.models import Enrollment, Judgment, QualificationResult, QuestionAnswer, StepAnswer
from annotation.rater_steps import rater_steps_save
from ratings.alignment.base import AlignmentParams, ordinal_consensus
from ratings.alignment.study import compute_alignment
from ratings.analysis import analysis_result
from ratings.exports.services import write_export
from ratings.selectors import study_rating_matrix
from tests.ratings.alignment_helpers import HUMANS, build_ordinal

pytestmark = pytest.mark.django_db

# ann and bob are young, cat and the excluded dan old; eve is young and has no judgment.
AGES = {"ann": "18-24", "bob": "18-24", "cat": "65+", "dan": "65+"}
QUESTIONS = {
    "before": [
        "demographics",
        {"key": "note", "kind": "text", "text": "Anything?", "required": False},
    ]
}


def answer(study, rater, **answers):
    enrollment = Enrollment.objects.get(study=study, rater=rater)
    for key, value in answers.items():
        QuestionAnswer.objects.create(enrollment=enrollment, key=key, value=value)
    return enrollment


@pytest.fixture
def grouped(researcher):
    study, raters = build_ordinal(researcher)
    rater_steps_save(study=study, data={"questionnaire": QUESTIONS})
    for name, age in AGES.items():
        answer(study, raters[name], age_band=age, gender="woman", note="=HYPERLINK(1)" if name == "ann" else None)
    return study, raters


def alpha_of(study, names, raters):
    """Krippendorff's α (ordinal) computed directly on these raters' judgments, without the app's code."""
    ids = [raters[n].pk for n in names]
    items = list(study.items.order_by("position").values_list("pk", flat=True))
    table = np.full((len(ids), len(items)), np.nan)
    for rater_id, item_id, value in Judgment.objects.filter(study=study, rater_id__in=ids).values_list(
        "rater_id", "item_id", "value"
    ):
        table[ids.index(rater_id), items.index(item_id)] = value["rating"]
    return krippendorff.alpha(reliability_data=table, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])


class TestBreakdowns:
    def test_alpha_per_group_equals_alpha_of_each_subset(self, grouped, settings):
        settings.FUNNYBONE_SMALL_GROUP_RATERS = 2
        study, raters = grouped
        result = analysis_result(study=study, group="humans", rater_ids=None, k=2, tie="higher", by_question="age_band")
        rows = {row["value"]: row for row in result["by_group"]["rows"]}
        assert list(rows) == ["18-24", "65+"]  # the question's order
        assert rows["18-24"]["n_raters"] == 2 and rows["65+"]["n_raters"] == 2
        assert rows["18-24"]["alpha"] == pytest.approx(alpha_of(study, ["ann", "bob"], raters))
        assert rows["65+"]["alpha"] == pytest.approx(alpha_of(study, ["cat", "dan"], raters))
        assert rows["65+"]["label"] == "65 or older"
        # Passers leave the excluded dan out: the old group is one rater, flagged small, with no α.
        passers = analysis_result(
            study=study, group="passers", rater_ids=None, k=2, tie="higher", by_question="age_band"
        )["by_group"]
        old = {row["value"]: row for row in passers["rows"]}["65+"]
        assert old["n_raters"] == 1 and old["small"] and old["alpha"] is None

    def test_a_judge_against_each_group_equals_kappa_on_that_groups_consensus(self, grouped):
        study, raters = grouped
        result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50, rater_breakdown="age_band"))
        groups = {g["value"]: g for g in result["rater_breakdown"]["groups"]}
        assert {v: g["n_raters"] for v, g in groups.items()} == {"18-24": 2, "65+": 1}  # dan is not a passer
        twin = [0, 1, 2, 3, 0, 3]
        for value, names in (("18-24", ["ann", "bob"]), ("65+", ["cat"])):
            consensus = ordinal_consensus(np.array([HUMANS[n] for n in names], dtype=float).T, [0, 1, 2, 3])
            expected = cohen_kappa_score(consensus.astype(int), twin, labels=[0, 1, 2, 3], weights="quadratic")
            row = next(r for r in groups[value]["section"]["judges"] if r["label"] == "twin")
            assert row["kappa"]["estimate"] == pytest.approx(expected)

    def test_the_pages_show_the_groups_and_their_sizes(self, grouped, client, researcher):
        study, _ = grouped
        client.force_login(researcher)
        page = client.get(f"/analysis/{study.slug}/", {"by": "age_band"}).content.decode()
        assert 'id="by-rater-group"' in page and "65 or older" in page and 'class="group-size">2<' in page
        alignment = client.get(f"/alignment/{study.slug}/", {"by": "age_band"}).content.decode()
        assert 'id="rater-breakdown"' in alignment and "small group" in alignment


class TestExports:
    def test_long_and_wide_files_read_in_pandas(self, grouped, tmp_path):
        study, raters = grouped
        long_path, wide_path = tmp_path / "long.csv", tmp_path / "wide.csv"
        write_export(study, "quest_long", long_path)
        write_export(study, "quest_wide", wide_path)
        long = pd.read_csv(long_path, dtype=str, keep_default_na=False)
        wide = pd.read_csv(wide_path, dtype=str, keep_default_na=False)
        assert set(long.columns) >= {"rater_id", "phase", "question", "answer", "answer_label"}
        ann = long[(long.rater_id == str(raters["ann"].pk)) & (long.question == "age_band")].iloc[0]
        assert (ann.answer, ann.answer_label) == ("18-24", "18-24")
        assert long[long.question == "note"].answer.tolist() == ["'=HYPERLINK(1)", "", "", ""]  # made inert
        assert list(wide.columns[-6:]) == ["age_band", "gender", "country", "first_language", "joke_reading", "note"]
        row = wide[wide.rater_id == str(raters["cat"].pk)].iloc[0]
        assert (row.age_band, row.gender, row.country) == ("65+", "woman", "")
        assert len(wide) == 4  # every counted human enrolled; judges have no enrollment

    @pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
    def test_r_reads_the_wide_file(self, grouped, tmp_path):
        study, _ = grouped
        path = tmp_path / "wide.csv"
        write_export(study, "quest_wide", path)
        script = 'x <- read.csv(commandArgs(TRUE)[1], encoding = "UTF-8"); cat(nrow(x), sum(x$age_band == "65+"))'
        done = subprocess.run(["Rscript", "-e", script, str(path)], capture_output=True, text=True, timeout=120)
        assert done.stdout.split() == ["4", "2"], done.stderr


class TestStepsStayOutOfAggregates:
    def test_practice_and_test_answers_and_screened_out_raters_add_nothing(self, grouped, researcher):
        study, raters = grouped
        before = study_rating_matrix(study=study, group="humans")
        enrollment = Enrollment.objects.get(study=study, rater=raters["ann"])
        StepAnswer.objects.create(enrollment=enrollment, step="practice", index=0, value={"rating": 0}, correct=False)
        after = study_rating_matrix(study=study, group="humans")
        assert np.array_equal(before.values, after.values, equal_nan=True)
        assert before.n_judgments == after.n_judgments
        out = io.BytesIO()
        write_export(study, "csv_raw", out)
        assert len(pd.read_csv(io.BytesIO(out.getvalue()))) == Judgment.objects.filter(study=study).count()
        assert not QualificationResult.objects.exists()
