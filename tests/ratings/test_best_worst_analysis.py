"""Best–worst scaling in the analysis: counting scores, agreement per pick, the page and the exports."""

import csv
import io
import json

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from annotation.models import Rater
from annotation.privacy import pseudonym
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from ratings.reports import best_worst_report
from ratings.selectors import study_best_worst
from ratings.stats import best_worst_scores
from tests.judging.test_best_worst_judging import bws_study
from tests.ratings.export_helpers import rate_as_crowd

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.ratings.export_urls")]

TEXTS = [["ant", "bee", "cat", "dog"], ["eel", "fox", "gnu", "hen"]]


class TestCountingScores:
    def test_a_score_is_best_minus_worst_over_appearances(self):
        scores = best_worst_scores(
            [(["a", "b", "c", "d"], "a", "d"), (["a", "b", "c", "d"], "a", "b"), (["a", "b", "c", "e"], "c", "a")]
        )
        by_name = dict(zip(scores.names, scores.scores, strict=True))
        assert by_name == pytest.approx({"a": 1 / 3, "c": 1 / 3, "b": -1 / 3, "d": -1 / 2, "e": 0.0})
        assert scores.names == ["a", "c", "e", "b", "d"]  # equal scores: by name
        assert scores.appearances[scores.names.index("e")] == 1
        assert scores.n_judgments == 3

    def test_one_contestants_two_jokes_as_best_and_worst_count_once_each_over_two_appearances(self):
        scores = best_worst_scores([(["m0", "m0", "m1", "m2"], "m0", "m0"), (["m0", "m1", "m2", "m3"], "m0", "m3")])
        by_name = dict(zip(scores.names, scores.scores, strict=True))
        assert by_name == pytest.approx({"m0": 1 / 3, "m1": 0.0, "m2": 0.0, "m3": -1.0})
        assert scores.appearances[scores.names.index("m0")] == 3
        assert (scores.best[scores.names.index("m0")], scores.worst[scores.names.index("m0")]) == (2, 1)

    def test_one_candidate_as_both_best_and_worst_is_refused(self):
        with pytest.raises(ValueError, match="shown once"):
            best_worst_scores([(["a", "b", "c", "d"], "a", "a")])

    def test_a_pick_outside_the_options_shown_is_refused(self):
        with pytest.raises(ValueError, match="among the options shown"):
            best_worst_scores([(["a", "b", "c", "d"], "z", "a")])


@pytest.fixture
def judged(researcher):
    """Two sets of four jokes, three crowdworkers: all agree on the best; the worst splits once."""
    study = bws_study(researcher, TEXTS)
    study.quota_per_item = 3
    study.save()
    rate_as_crowd(
        study,
        {
            "p1": {"set-0": {"best": "k0", "worst": "k3"}, "set-1": {"best": "k1", "worst": "k2"}},
            "p2": {"set-0": {"best": "k0", "worst": "k3"}, "set-1": {"best": "k1", "worst": "k2"}},
            "p3": {"set-0": {"best": "k0", "worst": "k2"}, "set-1": {"best": "k1", "worst": "k2"}},
        },
    )
    return study


class TestReport:
    def test_scores_and_agreement_on_each_pick(self, judged):
        report = best_worst_report(study_best_worst(study=judged))
        rows = {row["name"]: row for row in report["rows"]}
        # Both sets use the keys k0-k3, so each key is one contestant shown six times (as with pairwise keys).
        assert rows["k0"]["score"] == pytest.approx(3 / 6)  # best three times in set-0, never worst
        assert rows["k2"]["score"] == pytest.approx(-4 / 6)  # worst once in set-0 and three times in set-1
        assert rows["k0"]["best"] == 3 and rows["k2"]["worst"] == 4 and rows["k2"]["shown"] == 6
        assert report["rows"][0]["name"] in ("k0", "k1")
        assert report["krippendorff_alpha"]["best"] == pytest.approx(1.0)
        assert 0 < report["krippendorff_alpha"]["worst"] < 1
        assert (report["n_judgments"], report["n_items"], report["n_raters"]) == (6, 2, 3)


def analysis_page(client, owner, study) -> str:
    """The study's analysis page as its owner sees it (it must render)."""
    client.force_login(owner)
    page = client.get(reverse("ratings:study_analysis", args=[study.slug]))
    assert page.status_code == 200
    return page.content.decode()


def exported(client, study, fmt) -> bytes:
    """The study's export in ``fmt``, requested from the exports page as a researcher would."""
    client.get(reverse("exports:page", args=[study.slug]))
    response = client.post(
        reverse("exports:request", args=[study.slug]),
        {"format": fmt, "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
    )
    assert response.status_code == 200
    return b"".join(response.streaming_content)


class TestAnalysisPage:
    def test_the_owner_sees_the_scores_and_the_agreement(self, client, researcher, judged):
        html = analysis_page(client, researcher, judged)
        assert "Best–worst scores" in html
        assert "6 judgments of 2 items by 3 raters" in html
        # No "higher rating" to break a tie between picks: the rule is not offered.
        assert 'name="tie"' not in html and "higher rating" not in html
        assert "Krippendorff's α (nominal), funniest pick</th><td>1.000" in html
        assert '<th scope="row">k2</th><td>-0.667</td>' in html

    def test_the_tie_rules_fit_the_task_type(self):
        from annotation.task_types import TASK_TYPES, Level
        from ratings.analysis import default_tie_rule, tie_rules_for

        for kind in TASK_TYPES.values():
            rules = tie_rules_for(kind.level)
            assert ("higher" in rules) == (kind.level == Level.ORDINAL), kind.name
            assert default_tie_rule(kind.level) in rules


class TestExports:
    def test_the_csv_carries_each_value_its_label_and_both_chosen_candidates(self, client, researcher, judged):
        client.force_login(researcher)
        rows = list(csv.DictReader(io.StringIO(exported(client, judged, "csv").decode())))
        assert len(rows) == 6
        p3 = Rater.objects.get(external_id="p3")
        alias = pseudonym(study_id=judged.pk, key=judged.pseudonym_key, rater_id=p3.pk)
        first = next(r for r in rows if r["item"] == "set-0" and r["rater_pseudonym"] == alias)
        assert json.loads(first["value"]) == {"best": "k0", "worst": "k2"}
        assert first["value_label"] == "best k0, worst k2"
        assert json.loads(first["chosen_candidates"]) == ["k0", "k2"]

    def test_the_workbook_lists_the_values_and_each_items_scores(self, client, researcher, judged):
        client.force_login(researcher)
        workbook = load_workbook(io.BytesIO(exported(client, judged, "xlsx")))
        cells = [c.value for row in workbook["Ratings"].iter_rows() for c in row]
        assert "best k0, worst k2" in cells
        items = workbook["Items"]
        header = [c.value for c in items[1]]
        assert "Its best–worst score" in header
        top = {row[1].value: row[header.index("Top candidate")].value for row in items.iter_rows(min_row=2)}
        assert top == {"set-0": "k0", "set-1": "k1"}


@pytest.fixture
def same_model_twice(researcher):
    """One set whose first two jokes come from the same model; a rater calls one the best, the other the worst."""
    study = study_create(owner=researcher, name="Two jokes by one model", task_type="best_worst")
    models = ["m0", "m0", "m1", "m2"]
    items_create(
        study=study,
        items=[
            ItemSpec(
                external_id="set-0",
                prompt="Animals",
                candidates=[
                    CandidateSpec(key=f"k{j}", text=text, provenance={"model": model})
                    for j, (text, model) in enumerate(zip(TEXTS[0], models, strict=True))
                ],
            )
        ],
    )
    study_set_state(study=study, state="open")
    rate_as_crowd(
        study, {"p1": {"set-0": {"best": "k0", "worst": "k1"}}, "p2": {"set-0": {"best": "k2", "worst": "k3"}}}
    )
    return study


class TestTwoCandidatesOfOneContestant:
    """A valid judgment naming one model's two jokes as best and worst once broke the whole analysis (a 500)."""

    def test_the_analysis_page_shows_the_scores(self, client, researcher, same_model_twice):
        html = analysis_page(client, researcher, same_model_twice)
        assert "2 judgments of 1 item by 2 raters" in html
        # m0: one best and one worst over four appearances (two per judgment); m1 best once, m2 worst once, in two.
        assert '<th scope="row">m0</th><td>0.000</td>' in html
        assert '<th scope="row">m1</th><td>0.500</td>' in html
        assert '<th scope="row">m2</th><td>-0.500</td>' in html

    def test_the_workbook_is_written(self, client, researcher, same_model_twice):
        client.force_login(researcher)
        workbook = load_workbook(io.BytesIO(exported(client, same_model_twice, "xlsx")))
        cells = [c.value for row in workbook["Ratings"].iter_rows() for c in row]
        assert "best k0, worst k1" in cells


class TestAlignmentPage:
    def test_it_says_best_worst_studies_have_no_alignment_report(self, client, researcher, judged):
        client.force_login(researcher)
        page = client.get(reverse("alignment:report", args=[judged.slug]))
        assert page.status_code == 200
        assert "Best–worst scaling studies have no alignment report" in page.content.decode()
