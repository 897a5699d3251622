# SPDX-License-Identifier: GPL-3.0-or-later
"""The JEST agreement table for a set of raters, in one call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._validation import as_categories, as_rating_matrix
from .agreement import adjacent_agreement, exact_agreement, mean_item_sd
from .alpha import krippendorff_alpha
from .correlation import mean_offdiagonal, spearman_matrix
from .icc import icc

#: Metric keys in the order JEST reports them.
METRICS: tuple[str, ...] = (
    "icc2k",
    "alpha_ordinal",
    "exact_agreement",
    "adjacent_agreement",
    "mean_item_sd",
    "mean_pairwise_spearman",
)


@dataclass
class AgreementSummary:
    """The six JEST agreement figures; NaN where a figure could not be computed."""

    metrics: dict[str, float]
    n_items: int
    n_raters: int
    warnings: list[str] = field(default_factory=list)


def agreement_summary(matrix, *, categories: Sequence[float] | np.ndarray) -> AgreementSummary:
    """ICC(2,k), ordinal alpha, exact and adjacent agreement, mean item SD and
    mean pairwise Spearman rho for an items × raters matrix on an ordinal scale.
    """
    arr = as_rating_matrix(matrix, min_raters=2)
    cats = as_categories(categories)
    notes: list[str] = []
    icc_result = icc(arr, warn=False)
    notes.extend(icc_result.warnings)
    icc2k = icc_result["ICC2k"].value if icc_result.estimates is not None else float("nan")
    sd = mean_item_sd(arr)
    if sd.n_excluded:
        notes.append(f"{sd.n_excluded} item(s) with fewer than two ratings left out of agreement")
    metrics = {
        "icc2k": icc2k,
        "alpha_ordinal": krippendorff_alpha(arr, level="ordinal", value_domain=np.sort(cats)),
        "exact_agreement": exact_agreement(arr).value,
        "adjacent_agreement": adjacent_agreement(arr).value,
        "mean_item_sd": sd.value,
        "mean_pairwise_spearman": mean_offdiagonal(spearman_matrix(arr)),
    }
    return AgreementSummary(metrics=metrics, n_items=arr.shape[0], n_raters=arr.shape[1], warnings=notes)
