# SPDX-License-Identifier: GPL-3.0-or-later
"""How closely LLM and baseline judges agree with a human reference.

The human reference is one rater group of the study (all humans, the ones
who passed the attention checks, experts, crowdworkers, or chosen raters);
its per-item answer is the *consensus*:

* ordinal scales: the median of the reference raters, moved to the nearest
  scale point; a median halfway between two points (an even number of
  ratings) goes to the **higher** point, as JEST resolves ties;
* binary labels, pick one of N, pairwise choices: the majority label; an item
  whose top labels tie is *undecided* and left out of the comparison (the
  count is reported).

Each judge's answer on an item is its earliest usable judgment (the same
rule as the analysis page). A judge with no usable answer on a reference item
— unparseable, failed, or never judged — is *missing* there: accuracy-type
figures count it as wrong, kappa and correlations leave it out, and the
number of missing items (by reason) is always reported.

The functions on arrays (``ordinal_consensus``, ``ordinal_section`` …) have
no Django in them; :func:`compute_alignment` reads a study and assembles the
report, a dict of plain JSON values.
"""

from .base import (
    REFERENCES,
    AlignmentParams,
    AlignmentUnavailable,
    Family,
    family_flags,
    majority_labels,
    metadata_groups,
    ordinal_consensus,
)
from .sections import label_section, loo_kappas, ordinal_section, pairwise_agreement, primary_metric
from .study import compute_alignment, count_judgments, feature_tallies, metadata_keys, study_judges, task_family

__all__ = [
    "REFERENCES",
    "AlignmentParams",
    "AlignmentUnavailable",
    "Family",
    "compute_alignment",
    "count_judgments",
    "family_flags",
    "feature_tallies",
    "label_section",
    "loo_kappas",
    "majority_labels",
    "metadata_groups",
    "metadata_keys",
    "ordinal_consensus",
    "ordinal_section",
    "pairwise_agreement",
    "primary_metric",
    "study_judges",
    "task_family",
]
