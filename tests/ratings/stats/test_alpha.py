# SPDX-License-Identifier: GPL-3.0-or-later
import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import (
    krippendorff_alpha,
    krippendorff_alpha_all_levels,
    krippendorff_alpha_bootstrap,
)

from .examples import KRIPPENDORFF_2011, random_ratings

PUBLISHED_2011 = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


class TestKrippendorffAlpha:
    @pytest.mark.parametrize("level", list(PUBLISHED_2011))
    def test_it_reproduces_krippendorff_2011_example(self, level):
        value = krippendorff_alpha(KRIPPENDORFF_2011, level=level)
        assert round(value, 3) == PUBLISHED_2011[level]

    def test_it_gives_all_four_levels_at_once(self):
        values = krippendorff_alpha_all_levels(KRIPPENDORFF_2011, value_domain=[1, 2, 3, 4, 5])
        assert {k: round(v, 3) for k, v in values.items()} == PUBLISHED_2011

    @pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
    @pytest.mark.parametrize("seed", range(4))
    def test_it_matches_the_krippendorff_package_on_random_data_with_gaps(self, level, seed):
        data = random_ratings(seed, n_items=40, n_raters=4, missing=0.25)
        ours = krippendorff_alpha(data, level=level, value_domain=[0, 1, 2, 3])
        theirs = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        assert ours == pytest.approx(theirs, abs=1e-12)

    def test_an_unused_category_in_the_value_domain_leaves_ordinal_alpha_unchanged(self):
        data = np.array([[0, 1], [1, 1], [3, 3], [0, 0]], dtype=float)
        with_gap = krippendorff_alpha(data, level="ordinal", value_domain=[0, 1, 2, 3])
        assert with_gap == pytest.approx(
            krippendorff.alpha(data.T, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
        )

    def test_it_ignores_items_with_a_single_rating(self):
        base = random_ratings(1, n_items=20, n_raters=3)
        extra = np.vstack([base, [[2, np.nan, np.nan]]])
        assert krippendorff_alpha(extra, level="ordinal") == pytest.approx(krippendorff_alpha(base, level="ordinal"))

    def test_it_is_nan_when_every_value_is_the_same(self):
        assert np.isnan(krippendorff_alpha(np.full((4, 3), 2.0), level="nominal"))

    def test_it_rejects_values_outside_the_domain_and_unknown_levels(self):
        with pytest.raises(ValueError, match="outside the declared set"):
            krippendorff_alpha([[0, 5], [1, 1]], level="ordinal", value_domain=[0, 1, 2, 3])
        with pytest.raises(ValueError, match="level must be one of"):
            krippendorff_alpha([[0, 1], [1, 1]], level="cardinal")
        with pytest.raises(ValueError, match="non-negative"):
            krippendorff_alpha([[-1, 1], [1, 1]], level="ratio")

    def test_it_refuses_data_where_nothing_can_be_paired(self):
        with pytest.raises(ValueError, match="no item has two or more ratings"):
            krippendorff_alpha([[1, np.nan], [np.nan, 2]], level="nominal")

    @settings(max_examples=25, deadline=None)
    @given(n_items=st.integers(2, 12), n_raters=st.integers(2, 5), seed=st.integers(0, 10_000))
    def test_identical_raters_give_alpha_one(self, n_items, n_raters, seed):
        rng = np.random.default_rng(seed)
        column = rng.integers(0, 4, size=(n_items, 1)).astype(float)
        if np.ptp(column) == 0:
            column[0, 0] = (column[0, 0] + 1) % 4
        data = np.repeat(column, n_raters, axis=1)
        for level in ("nominal", "ordinal", "interval"):
            assert krippendorff_alpha(data, level=level) == pytest.approx(1.0)

    @settings(max_examples=25, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_is_invariant_to_permuting_raters_and_items(self, seed):
        data = random_ratings(seed, n_items=15, n_raters=4, missing=0.2)
        rng = np.random.default_rng(seed)
        shuffled = data[rng.permutation(15)][:, rng.permutation(4)]
        for level in ("nominal", "ordinal", "interval", "ratio"):
            a = krippendorff_alpha(data, level=level, value_domain=[0, 1, 2, 3])
            b = krippendorff_alpha(shuffled, level=level, value_domain=[0, 1, 2, 3])
            assert a == pytest.approx(b, nan_ok=True)

    @settings(max_examples=25, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_nominal_alpha_is_invariant_to_relabelling(self, seed):
        data = random_ratings(seed, n_items=15, n_raters=4, missing=0.2)
        relabel = np.array([7.0, -2.0, 11.0, 3.0])
        renamed = np.where(np.isnan(data), np.nan, relabel[np.nan_to_num(data).astype(int)])
        assert krippendorff_alpha(data, level="nominal") == pytest.approx(
            krippendorff_alpha(renamed, level="nominal"), nan_ok=True
        )


class TestKrippendorffAlphaBootstrap:
    def test_its_interval_brackets_the_estimate_and_is_reproducible(self):
        data = random_ratings(3, n_items=80, n_raters=7, missing=0.1)
        first = krippendorff_alpha_bootstrap(data, level="ordinal", n_resamples=300, seed=5)
        again = krippendorff_alpha_bootstrap(data, level="ordinal", n_resamples=300, seed=5)
        assert first.ci_low < first.estimate < first.ci_high
        assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
        assert first.estimate == pytest.approx(krippendorff_alpha(data, level="ordinal"))
        assert first.n_valid == 300

    def test_a_wider_confidence_gives_a_wider_interval(self):
        data = random_ratings(4, n_items=50, n_raters=4)
        narrow = krippendorff_alpha_bootstrap(data, level="interval", confidence=0.8, n_resamples=400)
        wide = krippendorff_alpha_bootstrap(data, level="interval", confidence=0.99, n_resamples=400)
        assert wide.ci_low < narrow.ci_low and narrow.ci_high < wide.ci_high

    def test_it_rejects_bad_bootstrap_settings(self):
        with pytest.raises(ValueError, match="confidence"):
            krippendorff_alpha_bootstrap(KRIPPENDORFF_2011, confidence=1.5)
        with pytest.raises(ValueError, match="n_resamples"):
            krippendorff_alpha_bootstrap(KRIPPENDORFF_2011, n_resamples=0)
