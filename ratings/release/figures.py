# SPDX-License-Identifier: GPL-3.0-or-later
"""The figures a release bundle states (``figures.json``) and the study design they rest on (``study.json``).

Everything here is computed by the project's own statistics (``ratings.reports``,
``ratings.stats``) from the database; the bundle's ``recompute.py`` computes the
same figures from the bundle's data files with the reference libraries, so a
reader can check them. What the script recomputes is listed in ``RECOMPUTED``;
the intervals are the server's alone (a bootstrap with the seed stated beside them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import Count

from annotation.languages import items_language
from annotation.models import Item, Judgment, Study, counted_raters
from annotation.task_types import get_task_type

from ..reports import json_ready, rating_report
from ..selectors import NoNumericCoding, study_rating_matrix, study_scale
from ..stats import DEFAULT_SEED, krippendorff_alpha_bootstrap

#: The figures ``recompute.py`` recomputes and checks (keys of ``figures.json``).
RECOMPUTED = ("counts", "human_agreement", "items")
#: Resamples of the bootstrap interval of alpha stated in the card.
ALPHA_RESAMPLES = 1000


def study_design(study: Study) -> dict[str, Any]:
    """``study.json``: what a reader needs to read the data (the scale's codes, the task) and how it was collected."""
    task_type = get_task_type(study.task_type)
    try:
        scale = study_scale(study, task_type)
        codes = {"codes": [float(c) for c in scale.codes], "names": list(scale.names), "nominal": scale.nominal}
    except NoNumericCoding as exc:
        codes = {"codes": None, "names": None, "nominal": None, "note": str(exc)}
    return {
        "study": study.slug,
        "name": study.name,
        "task_type": study.task_type,
        "task_title": str(task_type.title),
        "protocol": study.protocol,
        "language": items_language(study.config),
        "scale": codes,
        "config": study.config,
        "quota_per_item": study.quota_per_item,
        "per_rater_cap": study.per_rater_cap,
        "item_order": study.item_order,
        "recruitment": study.recruitment,
        "recruitment_label": str(study.get_recruitment_display()),
        "screening": {
            "attention_check_rate": study.attention_check_rate,
            "attention_check_policy": study.attention_check_policy,
            "attention_check_max_failures": study.attention_check_max_failures,
            "min_seconds_per_item": study.min_seconds_per_item,
            "min_answers": study.min_answers,
        },
        "items": Item.objects.filter(study=study, is_attention_check=False).count(),
        "attention_check_items": Item.objects.filter(study=study, is_attention_check=True).count(),
    }


def release_figures(study: Study) -> dict[str, Any]:
    """``figures.json``: counts by kind of rater, the human raters' agreement, and each item's human ratings."""
    rows = (
        Judgment.objects.filter(counted_raters(), study=study)
        .values("rater__kind")
        .annotate(judgments=Count("id"), raters=Count("rater_id", distinct=True))
        .order_by("rater__kind")
    )
    counts = {row["rater__kind"]: {"raters": row["raters"], "judgments": row["judgments"]} for row in rows}
    figures: dict[str, Any] = {
        "study": study.slug,
        "counts": counts,
        "human_agreement": None,
        "items": None,
        "intervals": None,
        "notes": [],
    }
    try:
        data = study_rating_matrix(study=study, group="humans")
    except NoNumericCoding as exc:
        figures["notes"].append(f"no agreement figures: {exc}")
        return json_ready(figures)
    values = data.values
    if values.shape[1] >= 2 and not np.isnan(values).all():
        report = rating_report(values, categories=data.scale.codes, nominal=data.scale.nominal)
        figures["human_agreement"] = {
            "n_items": report["n_items"],
            "n_raters": report["n_raters"],
            "n_ratings": report["n_ratings"],
            "krippendorff_alpha": report["krippendorff_alpha"],
            "exact_agreement": report["exact_agreement"],
        }
        level = "nominal" if data.scale.nominal else "ordinal"
        try:
            boot = krippendorff_alpha_bootstrap(
                values, level=level, value_domain=data.scale.codes, n_resamples=ALPHA_RESAMPLES, seed=DEFAULT_SEED
            )
            figures["intervals"] = {
                "krippendorff_alpha": {
                    "level": level,
                    "estimate": boot.estimate,
                    "low": boot.ci_low,
                    "high": boot.ci_high,
                    "confidence": 0.95,
                    "method": f"percentile bootstrap over items, {ALPHA_RESAMPLES} resamples, seed {DEFAULT_SEED}",
                }
            }
        except ValueError as exc:
            figures["notes"].append(f"no interval for alpha: {exc}")
    else:
        figures["notes"].append("agreement needs ratings from at least two human raters")
    items = []
    for label, row in zip(data.item_labels, values, strict=True):
        rated = row[~np.isnan(row)]
        items.append(
            {
                "item": label,
                "n": int(rated.size),
                "mean": float(rated.mean()) if rated.size else None,
                "median": float(np.median(rated)) if rated.size else None,
            }
        )
    figures["items"] = items
    return json_ready(figures)
