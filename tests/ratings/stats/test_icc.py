# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pandas as pd
import pingouin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import FORMS, IncompleteRatingsWarning, icc

from .examples import SHROUT_FLEISS, random_ratings

# Shrout & Fleiss (1979), Table 4: the six ICCs of the Table 2 data.
PUBLISHED = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62, "ICC3k": 0.91}

# pingouin names the forms differently.
PINGOUIN_NAMES = {
    "ICC1": "ICC(1,1)",
    "ICC2": "ICC(A,1)",
    "ICC3": "ICC(C,1)",
    "ICC1k": "ICC(1,k)",
    "ICC2k": "ICC(A,k)",
    "ICC3k": "ICC(C,k)",
}


def pingouin_icc(matrix: np.ndarray) -> pd.DataFrame:
    n, k = matrix.shape
    long = pd.DataFrame(
        {
            "item": np.repeat(np.arange(n), k),
            "rater": np.tile(np.arange(k), n),
            "score": matrix.ravel(),
        }
    )
    old = pingouin.options["round.column.CI95"]
    pingouin.options["round.column.CI95"] = None
    try:
        table = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score")
    finally:
        pingouin.options["round.column.CI95"] = old
    return table.set_index("Type")


class TestICC:
    def test_it_reproduces_shrout_and_fleiss_1979_table_4(self):
        result = icc(SHROUT_FLEISS)
        assert {f: round(result[f].value, 2) for f in FORMS} == PUBLISHED
        assert result.n_items_used == 6 and result.n_items_dropped == 0
        assert result.warnings == []

    @pytest.mark.parametrize("seed", range(5))
    def test_it_matches_pingouin_values_f_tests_and_intervals_on_random_data(self, seed):
        data = random_ratings(seed, n_items=30, n_raters=5)
        ours = icc(data)
        theirs = pingouin_icc(data)
        for form in FORMS:
            row = theirs.loc[PINGOUIN_NAMES[form]]
            est = ours[form]
            assert est.value == pytest.approx(row["ICC"], abs=1e-10)
            assert est.f_stat == pytest.approx(row["F"], rel=1e-10)
            assert est.df2 == row["df2"]
            assert est.p_value == pytest.approx(row["pval"], rel=1e-8, abs=1e-300)
            assert [est.ci_low, est.ci_high] == pytest.approx(list(row["CI95"]), abs=1e-9)

    def test_it_matches_pingouin_on_the_shrout_fleiss_intervals(self):
        ours = icc(SHROUT_FLEISS)
        theirs = pingouin_icc(SHROUT_FLEISS)
        for form in FORMS:
            low, high = theirs.loc[PINGOUIN_NAMES[form], "CI95"]
            assert ours[form].ci_low == pytest.approx(low, abs=1e-9)
            assert ours[form].ci_high == pytest.approx(high, abs=1e-9)

    def test_it_drops_incomplete_items_and_says_how_many(self):
        data = random_ratings(7, n_items=20, n_raters=4)
        data[[0, 5], 1] = np.nan
        with pytest.warns(IncompleteRatingsWarning, match="dropped 2 of 20 items"):
            result = icc(data)
        assert (result.n_items_used, result.n_items_dropped) == (18, 2)
        assert result["ICC2"].value == pytest.approx(icc(np.delete(data, [0, 5], axis=0))["ICC2"].value)

    def test_it_shouts_when_most_items_are_dropped(self):
        data = random_ratings(8, n_items=20, n_raters=4)
        data[:15, 0] = np.nan
        with pytest.warns(IncompleteRatingsWarning, match="MOST ITEMS DROPPED"):
            result = icc(data)
        assert result.n_items_used == 5

    def test_it_returns_no_estimate_with_a_reason_when_too_few_items_remain(self):
        data = random_ratings(9, n_items=6, n_raters=3)
        data[:5, 2] = np.nan
        result = icc(data, warn=False)
        assert result.estimates is None
        assert "only 1 complete item" in result.reason
        with pytest.raises(KeyError, match="no ICC was computed"):
            result["ICC2k"]

    def test_it_drops_raters_who_rated_nothing_before_dropping_items(self):
        data = random_ratings(10, n_items=12, n_raters=4)
        data[:, 3] = np.nan
        result = icc(data, warn=False)
        assert result.n_raters_dropped == 1 and result.n_raters_used == 3
        assert result.n_items_used == 12

    def test_it_rejects_nonsense_input(self):
        with pytest.raises(ValueError, match="2-D"):
            icc([1, 2, 3])
        with pytest.raises(ValueError, match="empty"):
            icc(np.empty((0, 3)))
        with pytest.raises(ValueError, match="confidence"):
            icc(SHROUT_FLEISS, confidence=0)

    @settings(max_examples=25, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_is_invariant_to_permuting_items_and_raters(self, seed):
        data = random_ratings(seed, n_items=10, n_raters=4)
        rng = np.random.default_rng(seed)
        shuffled = data[rng.permutation(10)][:, rng.permutation(4)]
        a, b = icc(data), icc(shuffled)
        for form in FORMS:
            assert a[form].value == pytest.approx(b[form].value, nan_ok=True)

    @settings(max_examples=20, deadline=None)
    @given(seed=st.integers(0, 10_000), shift=st.floats(-5, 5), scale=st.floats(0.1, 10))
    def test_it_is_invariant_to_a_linear_change_of_scale(self, seed, shift, scale):
        data = random_ratings(seed, n_items=10, n_raters=3)
        a, b = icc(data), icc(data * scale + shift)
        for form in FORMS:
            assert a[form].value == pytest.approx(b[form].value, abs=1e-9, nan_ok=True)

    def test_identical_raters_give_icc_one(self):
        column = np.arange(8, dtype=float)[:, None] % 4
        result = icc(np.repeat(column, 3, axis=1))
        for form in FORMS:
            assert result[form].value == pytest.approx(1.0)
