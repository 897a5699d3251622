# SPDX-License-Identifier: GPL-3.0-or-later
"""A study's matrix read paired (too many cells to read whole) gives the analysis the whole matrix gives."""

import numpy as np
import pytest
from django.test import override_settings

from annotation.models import Rater
from ratings.alignment import AlignmentParams, compute_alignment
from ratings.analysis import analysis_result
from ratings.reports import study_agreement
from ratings.selectors import study_rating_matrix
from tests.ratings.test_selectors import add_rater, judge, rate_all

pytestmark = pytest.mark.django_db

ANALYSIS = {"group": "humans", "rater_ids": None, "k": 3, "tie": "higher"}


def alignment_both_ways(study, **params):
    """The alignment report of ``study`` with the reference read whole, and read paired."""
    params = AlignmentParams(reference="humans", n_resamples=50, **params)
    whole = compute_alignment(study=study, params=params)
    with override_settings(FUNNYBONE_DENSE_MATRIX_CELLS=0):
        return whole, compute_alignment(study=study, params=params)


@pytest.fixture
def partly_paired(make_study):
    """10 items: four rated by three people, four by one person each, two by nobody.

    Dan rated only single-rated items, so the whole matrix has no complete item for ICC;
    the paired items all carry three ratings, so only the single-rated ones make Fleiss' kappa
    undefined. A paired reading that simply dropped the single-rated items would get both wrong.
    """
    study = make_study(n_items=10, quota_per_item=10)
    ann, bob, cat, dan = (add_rater(study, name) for name in ("ann", "bob", "cat", "dan"))
    gpt = add_rater(study, "gpt", Rater.Kind.LLM)
    rate_all(study, ann, [0, 1, 2, 3, 2, None, None, None, None, None])
    rate_all(study, bob, [0, 2, 2, 3, None, 1, None, None, None, None])
    rate_all(study, cat, [1, 1, 3, 2, None, None, None, None, None, None])
    rate_all(study, dan, [None, None, None, None, None, None, 0, 3, None, None])
    rate_all(study, gpt, [1, 1, 2, 3, 3, 1, 0, None, 2, None])
    # A repeated judgment: the earliest one counts, whichever way the matrix is read.
    judge(study, ann, study.items.get(position=1), {"rating": 3}, trial=1)
    return study


def test_the_paired_rows_are_the_rated_twice_items_and_one_single_per_rater(partly_paired):
    whole = study_rating_matrix(study=partly_paired)
    paired = study_rating_matrix(study=partly_paired, max_cells=0, first_rows=5)
    assert whole.whole and whole.values.shape == (8, 4)
    assert not paired.whole
    # Items 0–3 (three ratings), and one of the single-rated items of each rater: ann's, bob's, dan's first.
    assert paired.item_ids == whole.item_ids[:4] + [whole.item_ids[4], whole.item_ids[5], whole.item_ids[6]]
    assert paired.left_out == 1 and paired.n_items == 8
    np.testing.assert_array_equal(paired.values, whole.values[:7])
    np.testing.assert_array_equal(paired.first.values, whole.values[:5])
    assert paired.first.item_labels == whole.item_labels[:5]
    assert paired.n_judgments == whole.n_judgments and paired.warnings == whole.warnings


def test_the_agreement_figures_are_those_of_the_whole_matrix(partly_paired):
    whole = study_agreement(study=partly_paired, matrix=study_rating_matrix(study=partly_paired))
    paired = study_agreement(study=partly_paired, matrix=study_rating_matrix(study=partly_paired, max_cells=0))
    figures = whole["agreement"]
    assert figures["n_items"] == 8 and figures["n_ratings"] == 16
    assert figures["fleiss_kappa"] is None and figures["icc"]["ICC2"] is None
    assert np.isfinite(figures["krippendorff_alpha"]["ordinal"])
    # Every figure and every note of the agreement table, NaN where NaN.
    assert repr(paired["agreement"]) == repr(figures)
    assert any("have one rating each" in w for w in paired["warnings"])


def test_the_analysis_report_is_the_same_read_paired(partly_paired):
    whole = analysis_result(study=partly_paired, **ANALYSIS)
    with override_settings(FUNNYBONE_DENSE_MATRIX_CELLS=0):
        paired = analysis_result(study=partly_paired, **ANALYSIS)
    assert paired["agreement"]["agreement"] == whole["agreement"]["agreement"]
    for key in ("raters", "distributions", "aggregates", "aggregates_truncated", "icc_rows", "scale_names"):
        assert paired[key] == whole[key], key
    assert [row["n"] for row in whole["aggregates"]] == [3, 3, 3, 3, 1, 1, 1, 1]
    assert "too large" in paired["subset"]["error"]


def test_the_alignment_report_is_the_same_read_paired(partly_paired):
    whole, paired = alignment_both_ways(partly_paired)
    assert repr(paired) == repr(whole)
    humans = whole["overall"]["humans"]["per_rater"]
    assert [r["label"] for r in humans] == ["ann", "bob", "cat", "dan"]
    assert humans[0]["kappa"] is not None and humans[3]["kappa"] is None
    assert whole["overall"]["judges"][0]["n_missing"] == 1


def test_a_breakdown_is_the_same_read_paired(partly_paired):
    for n, item in enumerate(partly_paired.items.order_by("position")):
        item.metadata = {"topic": "cats" if n % 2 else "dogs"}
        item.save(update_fields=["metadata"])
    whole, paired = alignment_both_ways(partly_paired, breakdown="topic")
    assert len(whole["breakdown"]["groups"]) == 2
    assert repr(paired["breakdown"]) == repr(whole["breakdown"])


@pytest.fixture
def one_rating_each(make_study):
    """6 items, each rated by one of three people (two items each), and an LLM judge on the first four."""
    study = make_study(n_items=6, quota_per_item=1)
    for n, name in enumerate(("ann", "bob", "cat")):
        ratings = [None] * 6
        ratings[2 * n], ratings[2 * n + 1] = n, 3 - n
        rate_all(study, add_rater(study, name), ratings)
    rate_all(study, add_rater(study, "gpt", Rater.Kind.LLM), [0, 2, 1, 2, None, None])
    return study


def test_a_study_whose_items_all_have_one_rating_has_undefined_agreement(one_rating_each):
    study = one_rating_each
    with override_settings(FUNNYBONE_DENSE_MATRIX_CELLS=0):
        result = analysis_result(study=study, **ANALYSIS)
    agreement = result["agreement"]
    assert agreement["agreement"] is None
    assert any("agreement is undefined: no item has ratings from two raters" in w for w in agreement["warnings"])
    # What every item has is still shown: each rater's distribution and the per-item table.
    assert [row["total"] for row in result["distributions"]] == [2, 2, 2]
    assert [row["n"] for row in result["aggregates"]] == [1] * 6


def test_its_alignment_is_the_same_read_paired(one_rating_each):
    whole, paired = alignment_both_ways(one_rating_each)
    assert repr(paired) == repr(whole)
    assert all(r["kappa"] is None for r in whole["overall"]["humans"]["per_rater"])
    judge = whole["overall"]["judges"][0]
    assert judge["n_items"] == 6 and judge["n_missing"] == 2 and judge["kappa"] is not None
