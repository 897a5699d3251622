# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from scipy import stats

from ratings.stats import (
    METRICS,
    adjacent_agreement,
    agreement_summary,
    distance_to_uniform,
    exact_agreement,
    icc,
    krippendorff_alpha,
    mean_item_sd,
    mean_offdiagonal,
    rater_distributions,
    select_raters,
    spearman_matrix,
)

SCALE = [0, 1, 2, 3]


def jest_like(seed: int = 0, n_items: int = 80) -> np.ndarray:
    """Seven raters on 0–3: raters 1, 3 and 5 spread their ratings evenly and
    track the latent funniness closely; the others bunch at one end of the scale."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n_items)
    columns = []
    for r in range(7):
        noisy = latent + rng.normal(scale=0.3 if r in (1, 3, 5) else 1.0, size=n_items)
        if r in (1, 3, 5):
            cuts = np.quantile(noisy, [0.25, 0.5, 0.75])
        elif r % 2 == 0:
            cuts = np.quantile(noisy, [0.6, 0.85, 0.95])  # stingy
        else:
            cuts = np.quantile(noisy, [0.05, 0.15, 0.4])  # generous
        columns.append(np.digitize(noisy, cuts))
    return np.column_stack(columns).astype(float)


class TestRaterDistributions:
    def test_it_gives_each_raters_share_per_category(self):
        dist = rater_distributions([[0, 3], [0, 3], [1, np.nan], [3, 2]], categories=SCALE)
        np.testing.assert_allclose(dist[0], [0.5, 0.25, 0, 0.25])
        np.testing.assert_allclose(dist[1], [0, 0, 1 / 3, 2 / 3])

    def test_total_variation_and_kl_distances_are_zero_for_a_uniform_rater(self):
        uniform = np.full((1, 4), 0.25)
        skewed = np.array([[1.0, 0, 0, 0]])
        assert distance_to_uniform(uniform)[0] == pytest.approx(0.0)
        assert distance_to_uniform(uniform, distance="kl")[0] == pytest.approx(0.0)
        assert distance_to_uniform(skewed)[0] == pytest.approx(0.75)
        assert distance_to_uniform(skewed, distance="kl")[0] == pytest.approx(np.log(4))


class TestSelectRaters:
    def test_it_picks_the_raters_with_the_most_balanced_distributions(self):
        result = select_raters(jest_like(), k=3, categories=SCALE)
        assert result.selected == (1, 3, 5)
        assert result.method == "exhaustive" and result.n_candidates == 35

    def test_its_before_and_after_table_matches_the_individual_functions(self):
        data = jest_like(1)
        result = select_raters(data, k=3, categories=SCALE)
        sub = data[:, list(result.selected)]
        for matrix, column in ((data, 0), (sub, 1)):
            expected = {
                "icc2k": icc(matrix)["ICC2k"].value,
                "alpha_ordinal": krippendorff_alpha(matrix, level="ordinal", value_domain=SCALE),
                "exact_agreement": exact_agreement(matrix).value,
                "adjacent_agreement": adjacent_agreement(matrix).value,
                "mean_item_sd": mean_item_sd(matrix).value,
                "mean_pairwise_spearman": mean_offdiagonal(spearman_matrix(matrix)),
            }
            for metric in METRICS:
                assert result.table[metric][column] == pytest.approx(expected[metric])

    def test_the_balanced_subset_agrees_better_than_all_raters(self):
        result = select_raters(jest_like(2), k=3, categories=SCALE)
        before, after = result.before.metrics, result.after.metrics
        assert after["alpha_ordinal"] > before["alpha_ordinal"]
        assert after["mean_item_sd"] < before["mean_item_sd"]

    def test_it_reports_the_rank_correlation_of_all_rater_and_subset_means(self):
        data = jest_like(3)
        result = select_raters(data, k=3, categories=SCALE)
        expected = stats.spearmanr(data.mean(axis=1), data[:, list(result.selected)].mean(axis=1))
        assert result.mean_rank_correlation == pytest.approx(expected.statistic)
        assert result.mean_rank_correlation > 0.8

    def test_greedy_search_finds_the_same_trio_here(self):
        result = select_raters(jest_like(), k=3, categories=SCALE, exhaustive_limit=1)
        assert result.method == "greedy" and result.selected == (1, 3, 5)
        assert any("greedy" in w for w in result.warnings)

    def test_the_correlation_weight_can_change_the_choice(self):
        rng = np.random.default_rng(4)
        latent = rng.permutation(np.repeat(np.arange(4), 20)).astype(float)
        agree = np.column_stack([latent, latent, latent])
        # Two perfectly balanced raters who ignore the items, and three
        # slightly less balanced raters who agree with each other.
        balanced_noise = np.column_stack([rng.permutation(latent), rng.permutation(latent)])
        agree[:4, :] = 0.0
        data = np.column_stack([balanced_noise, agree])
        by_balance = select_raters(data, k=2, categories=SCALE)
        by_both = select_raters(data, k=2, categories=SCALE, correlation_weight=1.0)
        assert by_balance.selected == (0, 1)
        assert set(by_both.selected) <= {2, 3, 4}

    def test_it_can_use_the_kl_distance(self):
        result = select_raters(jest_like(), k=3, categories=SCALE, distance="kl")
        assert result.selected == (1, 3, 5)

    def test_it_rejects_impossible_requests(self):
        data = jest_like()
        with pytest.raises(ValueError, match="k must be between"):
            select_raters(data, k=8, categories=SCALE)
        with pytest.raises(ValueError, match="outside the declared set"):
            select_raters(data, k=3, categories=[0, 1, 2])
        with pytest.raises(ValueError, match="distance"):
            select_raters(data, k=3, categories=SCALE, distance="hellinger")


class TestAgreementSummary:
    def test_it_returns_all_six_jest_metrics(self):
        summary = agreement_summary(jest_like(), categories=SCALE)
        assert tuple(summary.metrics) == METRICS
        assert all(np.isfinite(v) for v in summary.metrics.values())
        assert (summary.n_items, summary.n_raters) == (80, 7)

    def test_it_passes_on_the_icc_drop_notes(self):
        data = jest_like()
        data[0, 0] = np.nan
        summary = agreement_summary(data, categories=SCALE)
        assert any("dropped 1 of 80 items" in w for w in summary.warnings)
