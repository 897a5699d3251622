# SPDX-License-Identifier: GPL-3.0-or-later
"""Funnybone's statistics: agreement, aggregation, classification and pairwise ranking.

Plain functions on numpy arrays, with no Django import, so they run the same
in a view, a Celery task or a notebook.  Ratings come as an items × raters
float matrix with NaN for "not rated" (build one with :func:`long_to_matrix`);
pairwise judgments as a match list (a, b, score).  Every randomised function
takes ``seed`` (default :data:`DEFAULT_SEED`) and uses
``numpy.random.default_rng(seed)``.  See docs/stats.md for the definitions.
"""

from ._bootstrap import BootstrapResult
from ._validation import DEFAULT_SEED
from .aggregation import (
    DawidSkeneResult,
    dawid_skene,
    item_mean,
    item_median,
    majority_vote,
)
from .agreement import (
    AgreementResult,
    ItemSummary,
    adjacent_agreement,
    exact_agreement,
    item_summary,
    mean_absolute_deviation,
    mean_item_sd,
    percentage_agreement,
)
from .alpha import krippendorff_alpha, krippendorff_alpha_all_levels, krippendorff_alpha_bootstrap
from .best_worst import BestWorstScores, best_worst_scores
from .bradley_terry import (
    BTBootstrapResult,
    BTResult,
    bradley_terry,
    bradley_terry_bootstrap,
    bradley_terry_from_wins,
)
from .classification import (
    BinaryScores,
    BinError,
    FunnierScores,
    GroupComparison,
    TailRMSE,
    accuracy,
    binary_scores,
    compare_groups,
    funnier_of_two,
    mae_by_grade_bin,
    rmse,
    rmse_by_tail,
)
from .correlation import CorrelationResult, kendall, mean_offdiagonal, spearman, spearman_matrix
from .elo import EloResult, sequential_elo, stable_elo
from .icc import FORM_LABELS, FORMS, ICCEstimate, ICCResult, IncompleteRatingsWarning, icc
from .kappa import (
    cohen_kappa,
    cohen_kappa_bootstrap,
    confusion_table,
    fleiss_kappa,
    fleiss_kappa_from_matrix,
)
from .leaderboard import (
    DEFAULT_ORDERINGS,
    DEFAULT_RESAMPLES,
    Leaderboard,
    MatchVerdict,
    OrderConsistency,
    PositionFigures,
    Standing,
    leaderboard,
    order_consistency,
    position_figures,
)
from .matrix import (
    RatingMatrix,
    category_counts,
    encode_labels,
    long_to_matrix,
    matrix_to_long,
    ratings_per_item,
)
from .pairwise import (
    Matches,
    TriadResult,
    as_matches,
    encode_matches,
    graph_warnings,
    intransitive_triads,
    ranking_kendall_tau,
    win_matrix,
    win_rate_matrix,
    win_rates,
)
from .report import METRICS, AgreementSummary, agreement_summary
from .subset import SubsetResult, distance_to_uniform, rater_distributions, select_raters

__all__ = [
    "DEFAULT_ORDERINGS",
    "DEFAULT_RESAMPLES",
    "Leaderboard",
    "MatchVerdict",
    "OrderConsistency",
    "PositionFigures",
    "Standing",
    "leaderboard",
    "order_consistency",
    "position_figures",
    "DEFAULT_SEED",
    "FORMS",
    "FORM_LABELS",
    "METRICS",
    "AgreementResult",
    "AgreementSummary",
    "BTBootstrapResult",
    "BTResult",
    "BestWorstScores",
    "BinError",
    "BinaryScores",
    "BootstrapResult",
    "CorrelationResult",
    "DawidSkeneResult",
    "EloResult",
    "FunnierScores",
    "GroupComparison",
    "ICCEstimate",
    "ICCResult",
    "IncompleteRatingsWarning",
    "ItemSummary",
    "Matches",
    "RatingMatrix",
    "SubsetResult",
    "TailRMSE",
    "TriadResult",
    "accuracy",
    "adjacent_agreement",
    "agreement_summary",
    "as_matches",
    "best_worst_scores",
    "binary_scores",
    "bradley_terry",
    "bradley_terry_bootstrap",
    "bradley_terry_from_wins",
    "category_counts",
    "cohen_kappa",
    "cohen_kappa_bootstrap",
    "compare_groups",
    "confusion_table",
    "dawid_skene",
    "distance_to_uniform",
    "encode_labels",
    "encode_matches",
    "exact_agreement",
    "fleiss_kappa",
    "fleiss_kappa_from_matrix",
    "funnier_of_two",
    "graph_warnings",
    "icc",
    "intransitive_triads",
    "item_mean",
    "item_median",
    "item_summary",
    "kendall",
    "krippendorff_alpha",
    "krippendorff_alpha_all_levels",
    "krippendorff_alpha_bootstrap",
    "long_to_matrix",
    "mae_by_grade_bin",
    "majority_vote",
    "matrix_to_long",
    "mean_absolute_deviation",
    "mean_item_sd",
    "mean_offdiagonal",
    "percentage_agreement",
    "ranking_kendall_tau",
    "rater_distributions",
    "ratings_per_item",
    "rmse",
    "rmse_by_tail",
    "select_raters",
    "sequential_elo",
    "spearman",
    "spearman_matrix",
    "stable_elo",
    "win_matrix",
    "win_rate_matrix",
    "win_rates",
]
