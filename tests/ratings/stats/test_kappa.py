# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from ratings.stats import (
    cohen_kappa,
    cohen_kappa_bootstrap,
    confusion_table,
    fleiss_kappa,
    fleiss_kappa_from_matrix,
)

# Fleiss (1971): 10 subjects, 14 raters, 5 categories (the table reproduced
# on Wikipedia's "Fleiss' kappa" page); kappa = 0.210.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Agresti / Hout, Duncan & Sobel: husbands' (rows) and wives' (columns)
# ratings of "sex is fun" on a 4-point scale, n = 91.  Published by R's vcd
# package (Kappa(SexualFun)): unweighted 0.1293, equal-spacing (linear) 0.2374.
SEXUAL_FUN = np.array([[7, 7, 2, 3], [2, 8, 3, 7], [1, 5, 4, 9], [2, 8, 9, 14]])


def table_to_pairs(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.indices(table.shape)
    reps = table.ravel()
    return np.repeat(rows.ravel(), reps).astype(float), np.repeat(cols.ravel(), reps).astype(float)


class TestFleissKappa:
    def test_it_reproduces_fleiss_1971_example(self):
        assert round(fleiss_kappa(FLEISS_1971), 3) == 0.210

    def test_it_gives_the_same_value_from_a_ratings_matrix(self):
        # Rebuild a 10 × 14 matrix of labels 1..5 from the count table.
        matrix = np.array([np.repeat(np.arange(1, 6), row) for row in FLEISS_1971], dtype=float)
        assert fleiss_kappa_from_matrix(matrix, categories=[1, 2, 3, 4, 5]) == pytest.approx(fleiss_kappa(FLEISS_1971))

    def test_it_accepts_different_raters_per_item_with_the_same_count(self):
        matrix = np.array([[0, 0, np.nan], [np.nan, 1, 1], [1, np.nan, 0]])
        counts = np.array([[2, 0], [0, 2], [1, 1]])
        assert fleiss_kappa_from_matrix(matrix, categories=[0, 1]) == pytest.approx(fleiss_kappa(counts))

    def test_it_refuses_a_varying_number_of_ratings_per_item(self):
        with pytest.raises(ValueError, match="same number of ratings"):
            fleiss_kappa([[2, 1], [1, 1]])

    def test_it_refuses_labels_outside_the_category_list(self):
        with pytest.raises(ValueError, match="outside the declared set"):
            fleiss_kappa_from_matrix([[0, 2], [1, 1]], categories=[0, 1])

    def test_it_is_one_for_perfect_agreement_and_nan_for_a_single_category(self):
        assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
        assert np.isnan(fleiss_kappa([[3, 0], [3, 0]]))

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_is_invariant_to_permuting_categories_and_items(self, seed):
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(6, rng.dirichlet(np.ones(4)), size=12)
        shuffled = counts[rng.permutation(12)][:, rng.permutation(4)]
        assert fleiss_kappa(counts) == pytest.approx(fleiss_kappa(shuffled), nan_ok=True)


class TestCohenKappa:
    def test_it_reproduces_the_published_unweighted_and_linear_kappa_of_the_sexual_fun_table(self):
        husband, wife = table_to_pairs(SEXUAL_FUN)
        labels = [0, 1, 2, 3]
        assert round(cohen_kappa(husband, wife, labels=labels), 4) == 0.1293
        assert round(cohen_kappa(husband, wife, labels=labels, weights="linear"), 4) == 0.2374

    @pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
    @pytest.mark.parametrize("seed", range(4))
    def test_it_matches_sklearn_on_random_labels(self, weights, seed):
        rng = np.random.default_rng(seed)
        a = rng.integers(0, 4, 60)
        b = np.clip(a + rng.integers(-1, 2, 60), 0, 3)
        ours = cohen_kappa(a, b, labels=[0, 1, 2, 3], weights=weights)
        theirs = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights=weights)
        assert ours == pytest.approx(theirs, abs=1e-12)

    def test_a_category_nobody_used_still_counts_on_the_scale(self):
        # Nobody gave a 2, so a label set inferred from the data would put 3
        # right next to 1; the explicit 0..3 scale keeps it two steps away.
        a = np.array([0, 1, 3, 3, 1, 0, 1, 3])
        b = np.array([0, 3, 3, 1, 1, 0, 0, 3])
        inferred = cohen_kappa(a, b, labels=[0, 1, 3], weights="quadratic")
        explicit = cohen_kappa(a, b, labels=[0, 1, 2, 3], weights="quadratic")
        assert inferred == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), abs=1e-12)
        assert explicit == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-12)
        assert explicit != pytest.approx(inferred, abs=1e-3)

    def test_it_builds_the_confusion_table_in_label_order(self):
        table = confusion_table([1, 0, 1], [1, 1, 0], labels=[1, 0])
        np.testing.assert_array_equal(table, [[1, 1], [1, 0]])

    def test_it_rejects_nonsense(self):
        with pytest.raises(ValueError, match="same length"):
            cohen_kappa([0, 1], [0], labels=[0, 1])
        with pytest.raises(ValueError, match="outside the declared set"):
            cohen_kappa([0, 5], [0, 1], labels=[0, 1])
        with pytest.raises(ValueError, match="missing values"):
            cohen_kappa([0, np.nan], [0, 1], labels=[0, 1])
        with pytest.raises(ValueError, match="weights must be"):
            cohen_kappa([0, 1], [0, 1], labels=[0, 1], weights="cubic")
        with pytest.raises(ValueError, match="at least two labels"):
            cohen_kappa([0, 0], [0, 0], labels=[0])

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_unweighted_kappa_is_invariant_to_relabelling_and_swapping_raters(self, seed):
        rng = np.random.default_rng(seed)
        a = rng.integers(0, 3, 25)
        b = np.where(rng.random(25) < 0.6, a, rng.integers(0, 3, 25))
        perm = rng.permutation(3)
        k1 = cohen_kappa(a, b, labels=[0, 1, 2])
        k2 = cohen_kappa(perm[a], perm[b], labels=[0, 1, 2])
        k3 = cohen_kappa(b, a, labels=[0, 1, 2])
        assert k1 == pytest.approx(k2, nan_ok=True)
        assert k1 == pytest.approx(k3, nan_ok=True)


class TestCohenKappaBootstrap:
    def test_its_p_value_is_the_share_of_resamples_at_or_below_zero(self):
        rng = np.random.default_rng(11)
        a = rng.integers(0, 4, 40)
        b = rng.integers(0, 4, 40)  # independent: kappa near zero
        result = cohen_kappa_bootstrap(a, b, labels=[0, 1, 2, 3], weights="quadratic", n_resamples=500)
        finite = result.samples[np.isfinite(result.samples)]
        assert result.p_value == pytest.approx(np.mean(finite <= 0))
        assert 0.05 < result.p_value < 0.95

    def test_strong_agreement_has_a_tiny_p_value_and_an_interval_around_the_estimate(self):
        rng = np.random.default_rng(12)
        a = rng.integers(0, 4, 80)
        b = np.clip(a + rng.choice([-1, 0, 0, 0, 1], 80), 0, 3)
        result = cohen_kappa_bootstrap(a, b, labels=[0, 1, 2, 3], weights="quadratic", n_resamples=1000)
        assert result.p_value == 0.0
        assert result.ci_low < result.estimate < result.ci_high
        assert result.estimate == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"))

    def test_the_vectorised_resamples_match_a_plain_loop_over_the_same_indices(self):
        rng = np.random.default_rng(13)
        a = rng.integers(0, 3, 30)
        b = np.where(rng.random(30) < 0.5, a, rng.integers(0, 3, 30))
        result = cohen_kappa_bootstrap(a, b, labels=[0, 1, 2], weights="linear", n_resamples=50, seed=3)
        replay = np.random.default_rng(3).integers(0, 30, size=(50, 30))
        expected = [cohen_kappa_score(a[idx], b[idx], labels=[0, 1, 2], weights="linear") for idx in replay]
        np.testing.assert_allclose(result.samples, expected, atol=1e-12)

    def test_the_same_seed_gives_the_same_interval(self):
        a, b = [0, 1, 2, 2, 1, 0, 3, 3, 2, 1], [0, 1, 1, 2, 1, 0, 3, 2, 2, 2]
        first = cohen_kappa_bootstrap(a, b, labels=[0, 1, 2, 3], seed=99, n_resamples=200)
        second = cohen_kappa_bootstrap(a, b, labels=[0, 1, 2, 3], seed=99, n_resamples=200)
        assert (first.ci_low, first.ci_high, first.p_value) == (
            second.ci_low,
            second.ci_high,
            second.p_value,
        )
