# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import dawid_skene, item_mean, item_median, majority_vote

NAN = np.nan


def simulate_crowd(seed: int, *, n_items=300, n_good=6, n_noisy=3, n_cats=4, good_accuracy=0.6, missing=0.2):
    """Labels from good raters (right with probability good_accuracy, otherwise
    uniform) and noisy raters (always uniform), with some ratings missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_cats, n_items)
    columns = []
    for r in range(n_good + n_noisy):
        guess = rng.integers(0, n_cats, n_items)
        if r < n_good:
            columns.append(np.where(rng.random(n_items) < good_accuracy, truth, guess))
        else:
            columns.append(guess)
    labels = np.column_stack(columns).astype(float)
    labels[rng.random(labels.shape) < missing] = NAN
    return labels, truth


class TestItemMeanAndMedian:
    def test_they_ignore_missing_ratings_and_give_nan_for_unrated_items(self):
        data = np.array([[0, 1, 3], [2, NAN, 2], [NAN, NAN, NAN], [1, 2, NAN]])
        np.testing.assert_allclose(item_mean(data), [4 / 3, 2, NAN, 1.5])
        np.testing.assert_allclose(item_median(data), [1, 2, NAN, 1.5])


class TestMajorityVote:
    DATA = np.array([[0, 0, 1], [1, 2, NAN], [3, 3, 3], [NAN, NAN, NAN], [2, 1, 2]])

    def test_it_resolves_ties_toward_the_higher_label(self):
        np.testing.assert_array_equal(majority_vote(self.DATA, tie="higher"), [0, 2, 3, NAN, 2])

    def test_it_resolves_ties_toward_the_lower_label(self):
        np.testing.assert_array_equal(majority_vote(self.DATA, tie="lower"), [0, 1, 3, NAN, 2])

    def test_it_leaves_ties_undecided_on_request(self):
        np.testing.assert_array_equal(majority_vote(self.DATA, tie="undecided"), [0, NAN, 3, NAN, 2])

    def test_chumor_style_three_way_disagreement_is_undecided(self):
        # 0 = explanation 1, 1 = explanation 2, 2 = equally good
        votes = np.array([[0, 1, 2], [0, 0, 2], [1, 1, 1]])
        np.testing.assert_array_equal(majority_vote(votes, categories=[0, 1, 2], tie="undecided"), [NAN, 0, 1])

    def test_it_rejects_unknown_tie_rules_and_labels_outside_the_set(self):
        with pytest.raises(ValueError, match="tie must be"):
            majority_vote(self.DATA, tie="coin")
        with pytest.raises(ValueError, match="outside the declared set"):
            majority_vote(self.DATA, categories=[0, 1, 2])

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_it_agrees_with_a_plain_counting_loop(self, seed):
        rng = np.random.default_rng(seed)
        data = rng.integers(0, 4, size=(15, 5)).astype(float)
        data[rng.random(data.shape) < 0.3] = NAN
        got = majority_vote(data, categories=[0, 1, 2, 3], tie="higher")
        for row, value in zip(data, got, strict=True):
            vals = row[~np.isnan(row)]
            if vals.size == 0:
                assert np.isnan(value)
                continue
            labels, counts = np.unique(vals, return_counts=True)
            assert value == labels[counts == counts.max()].max()


class TestDawidSkene:
    def test_it_recovers_the_truth_on_clean_data(self):
        labels, truth = simulate_crowd(0, n_noisy=0, good_accuracy=0.9, missing=0.0)
        result = dawid_skene(labels, categories=[0, 1, 2, 3])
        assert result.converged
        assert np.mean(result.labels == truth) > 0.97
        np.testing.assert_allclose(result.posterior.sum(axis=1), 1.0)
        np.testing.assert_allclose(result.confusion.sum(axis=2), 1.0)
        assert result.priors.sum() == pytest.approx(1.0)

    @pytest.mark.parametrize("seed", range(5))
    def test_it_beats_majority_vote_when_a_third_of_raters_are_noisy(self, seed):
        labels, truth = simulate_crowd(seed)
        ds = dawid_skene(labels, categories=[0, 1, 2, 3])
        mv = majority_vote(labels, categories=[0, 1, 2, 3], tie="higher")
        ds_acc, mv_acc = np.mean(ds.labels == truth), np.mean(mv == truth)
        assert ds_acc > mv_acc + 0.03

    def test_it_learns_that_noisy_raters_are_uninformative(self):
        labels, _ = simulate_crowd(7, n_items=600)
        ds = dawid_skene(labels, categories=[0, 1, 2, 3])
        diag = np.array([np.mean(np.diag(c)) for c in ds.confusion])
        assert diag[:6].min() > diag[6:].max()
        assert np.all(np.abs(diag[6:] - 0.25) < 0.1)

    def test_its_confidence_is_the_posterior_of_the_chosen_label(self):
        labels, _ = simulate_crowd(8, n_items=50)
        ds = dawid_skene(labels, categories=[0, 1, 2, 3])
        picked = ds.posterior[np.arange(50), np.searchsorted(ds.categories, ds.labels)]
        np.testing.assert_allclose(ds.confidence, picked)

    def test_an_unrated_item_gets_the_prior_and_a_warning(self):
        labels, _ = simulate_crowd(9, n_items=40, missing=0.0)
        labels[0] = NAN
        ds = dawid_skene(labels, categories=[0, 1, 2, 3])
        np.testing.assert_allclose(ds.posterior[0], ds.priors, atol=1e-9)
        assert any("no rating" in w for w in ds.warnings)

    def test_it_reports_when_it_stops_before_converging(self):
        labels, _ = simulate_crowd(10, n_items=60)
        ds = dawid_skene(labels, categories=[0, 1, 2, 3], max_iter=1)
        assert not ds.converged and ds.iterations == 1
        assert any("did not converge" in w for w in ds.warnings)

    def test_it_rejects_bad_settings_and_labels(self):
        labels, _ = simulate_crowd(11, n_items=10)
        with pytest.raises(ValueError, match="smoothing"):
            dawid_skene(labels, categories=[0, 1, 2, 3], smoothing=0)
        with pytest.raises(ValueError, match="outside the declared set"):
            dawid_skene(labels, categories=[0, 1, 2])

    def test_a_rater_who_always_says_1_is_left_out_with_a_warning(self):
        labels, truth = simulate_crowd(12, n_items=80, missing=0.0)
        with_constant = np.column_stack([labels, np.ones(labels.shape[0])])
        names = [f"r{c}" for c in range(with_constant.shape[1])]
        ds = dawid_skene(with_constant, categories=[0, 1, 2, 3], rater_names=names)
        alone = dawid_skene(labels, categories=[0, 1, 2, 3])
        assert ds.constant_raters == [labels.shape[1]]
        assert any(f"{names[-1]} (always 1)" in w and "left out of the fit" in w for w in ds.warnings)
        # Leaving it out is exactly fitting without it: it could only have tilted the start values.
        np.testing.assert_array_equal(ds.labels, alone.labels)
        np.testing.assert_allclose(ds.posterior, alone.posterior, atol=1e-9)

    def test_only_constant_raters_give_no_labels_rather_than_confident_ones(self):
        # Before: labels all 1 at 99% confidence, from nothing but the starting values.
        for matrix in (np.ones((30, 1)), np.ones((30, 3)), np.column_stack([[0, 1] * 15, np.ones(30)])):
            ds = dawid_skene(matrix, categories=[0, 1])
            assert not ds.fitted and ds.iterations == 0
            assert np.isnan(ds.labels).all() and np.isnan(ds.confidence).all()
            assert any("needs at least 2 raters who use more than one label" in w for w in ds.warnings)

    @settings(max_examples=10, deadline=None)
    @given(seed=st.integers(0, 10_000))
    def test_permuting_raters_does_not_change_the_labels(self, seed):
        labels, _ = simulate_crowd(seed, n_items=60)
        perm = np.random.default_rng(seed).permutation(labels.shape[1])
        a = dawid_skene(labels, categories=[0, 1, 2, 3])
        b = dawid_skene(labels[:, perm], categories=[0, 1, 2, 3])
        np.testing.assert_allclose(a.posterior, b.posterior, atol=1e-6)
