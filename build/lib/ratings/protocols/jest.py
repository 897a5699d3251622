# SPDX-License-Identifier: GPL-3.0-or-later
"""The jest protocol's report (PROTOCOLS.md): all raters against the most balanced subset,
the median consensus, "Dataset A"/"Dataset B", and LLM judges against the consensus.

Humans are the study's expert and crowd raters; the subset is chosen by
``ratings.stats.select_raters`` (balance of each rater's distribution over the
scale; its size is the template's ``analyses["subset_size"]``, 3 by default).
The consensus is the median of the selected raters per item; judges are
compared with it through ``ratings.alignment`` (quadratic-weighted κ and
Spearman ρ with bootstrap CIs and p-values).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.models import Item, Study
from annotation.protocols.base import template_of

from .. import plots
from ..alignment import AlignmentParams, AlignmentUnavailable, compute_alignment
from ..reports import rating_distributions
from ..selectors import StudyMatrix, study_rating_matrix
from ..stats import (
    METRICS,
    agreement_summary,
    item_median,
    item_summary,
    majority_vote,
    select_raters,
    spearman_matrix,
)
from .base import Figure, ProtocolReport, Section, Table, register_report, rounded

DEFAULT_SUBSET_SIZE = 3
METRIC_NAMES = {
    "icc2k": "ICC(2,k)",
    "alpha_ordinal": "Krippendorff's α (ordinal)",
    "exact_agreement": "Exact agreement (all raters equal), %",
    "adjacent_agreement": "Adjacent agreement (all within 1 point), %",
    "mean_item_sd": "Mean per-item SD",
    "mean_pairwise_spearman": "Mean pairwise Spearman ρ",
}
PERCENT_METRICS = {"exact_agreement", "adjacent_agreement"}
N_RESAMPLES = 1000
DISTANCES = {
    "tv": "total-variation distance ½ Σ |share − 1/C|",
    "kl": "Kullback–Leibler divergence log C − entropy",
}


def _metric(key: str, value: float) -> float | None:
    return rounded(value * 100, 1) if key in PERCENT_METRICS else rounded(value)


def _analyses(study: Study) -> tuple[int, str]:
    """The subset size and the balance distance ("tv" or "kl") of the template's preset."""
    template = template_of(study)
    analyses = template.analyses if template else {}
    return int(analyses.get("subset_size", DEFAULT_SUBSET_SIZE)), analyses.get("subset_distance", "tv")


class _Panel:
    """The human matrix, the scale, and which raters the subset keeps."""

    def __init__(self, data: StudyMatrix, names: list[str]):
        # Raters in name order (the order raters were stored in says nothing to a reader).
        order = sorted(range(len(data.raters)), key=lambda j: (data.raters[j].label.lower(), data.raters[j].id))
        self.data = data
        self.raters = [data.raters[j] for j in order]
        self.values = data.values[:, order]
        self.points = np.asarray(data.scale.codes, dtype=float)
        self.names = names
        self.labels = [r.label for r in self.raters]
        self.selected: list[int] = list(range(len(data.raters)))
        self.subset = None

    @property
    def chosen(self) -> np.ndarray:
        return self.values[:, self.selected]


@register_report("jest")
def build(study: Study) -> ProtocolReport:
    data = study_rating_matrix(study=study, group="humans")
    panel = _Panel(data, list(study.config.get("labels", [])))
    report = ProtocolReport(study=study, title=f"JEST report — {study.name}")
    report.notes.extend(data.warnings)
    n_items = study.items.filter(is_attention_check=False).count()
    report.summary += [("Texts", n_items), ("Human raters", len(panel.labels)), ("Human ratings", data.n_judgments)]
    if len(panel.labels) < 2:
        report.notes.append(
            f"Agreement needs ratings from at least two human raters; this study has {len(panel.labels)}. "
            "Import ratings or open the study to raters, then reload the report."
        )
    else:
        report.sections.append(_agreement_section(study, panel, report))
        report.sections.append(_raters_section(panel))
        report.sections.append(_consensus_section(study, panel, report))
    report.sections.append(_judges_section(study, panel, report))
    return report


# -- all raters against the selected subset -------------------------------------------------------


def _agreement_section(study: Study, panel: _Panel, report: ProtocolReport) -> Section:
    k, distance = _analyses(study)
    n = len(panel.labels)
    section = Section(
        title="All raters and the selected subset",
        text=(
            f"The {k} raters whose ratings spread most evenly over the scale (smallest {DISTANCES[distance]} "
            "from a uniform distribution) are kept; the agreement figures are shown for every "
            "rater and for that subset."
        ),
    )
    if n <= k:
        report.notes.append(
            f"Subset selection keeps {k} of the raters; with {n} rater(s) there is nothing to choose, "
            "so every rater is used for the consensus."
        )
        before = agreement_summary(panel.values, categories=panel.points)
        table = {m: (before.metrics[m], before.metrics[m]) for m in METRICS}  # the "subset" is everyone
        rho_means = None
        report.notes.extend(before.warnings)
    else:
        result = select_raters(panel.values, k=k, categories=panel.points, distance=distance)
        panel.selected = list(result.selected)
        panel.subset = result
        table = result.table
        rho_means = result.mean_rank_correlation
        report.notes.extend(dict.fromkeys(result.warnings))
    chosen = [panel.labels[i] for i in panel.selected]
    rows = [[METRIC_NAMES[m], _metric(m, table[m][0]), _metric(m, table[m][1])] for m in METRICS]
    section.tables.append(
        Table(
            key="agreement",
            title="Agreement: all raters → selected subset",
            columns=["Metric", f"All {n} raters", f"Selected {len(chosen)}"],
            rows=rows,
            note=f"Selected raters: {', '.join(chosen)}.",
        )
    )
    balance = panel.subset.distance_to_uniform if panel.subset else np.full(n, np.nan)
    dists = panel.subset.distributions if panel.subset else np.full((n, panel.points.size), np.nan)
    section.tables.append(
        Table(
            key="balance",
            title="Rater balance",
            columns=[
                "Rater",
                *[f"Share of {_point(p)}, %" for p in panel.points],
                "Distance from uniform",
                "Selected",
            ],
            rows=[
                [
                    label,
                    *[rounded(share * 100, 1) for share in dists[i]],
                    rounded(balance[i]),
                    "yes" if i in panel.selected and panel.subset else "no",
                ]
                for i, label in enumerate(panel.labels)
            ],
            note=f"Distance from uniform: {DISTANCES[distance]} (0 = every rating used equally often).",
        )
    )
    all_summary = agreement_summary(panel.values, categories=panel.points)
    all_alpha = all_summary.metrics["alpha_ordinal"]
    report.summary.append(("Krippendorff's α (ordinal), all raters", rounded(all_alpha)))
    if panel.subset:
        report.summary += [
            ("Selected raters", ", ".join(chosen)),
            ("Krippendorff's α (ordinal), selected", rounded(table["alpha_ordinal"][1])),
            ("ICC(2,k), all → selected", f"{_fmt(table['icc2k'][0])} → {_fmt(table['icc2k'][1])}"),
            ("Spearman ρ, all-rater mean vs subset mean", rounded(rho_means)),
        ]
    return section


def _point(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _fmt(value: float) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.2f}"


# -- raters: heatmap, distributions, Dataset B -------------------------------------------------


def _raters_section(panel: _Panel) -> Section:
    counts = rating_distributions(panel.values, categories=panel.points)
    rho = spearman_matrix(panel.values)
    kinds = [r.kind for r in panel.raters]
    section = Section(
        title="Raters",
        text="How each rater used the scale, how raters correlate, and every raw rating (“Dataset B”).",
        figures=[
            Figure("spearman-heatmap", "Spearman ρ between raters", plots.spearman_heatmap(panel.labels, rho.tolist())),
            Figure(
                "rater-distributions",
                "Ratings per rater",
                plots.rating_distributions(panel.labels, counts.tolist(), panel.points.tolist(), kinds=kinds),
            ),
        ],
    )
    section.tables.append(
        Table(
            key="spearman",
            title="Spearman ρ between raters",
            columns=["Rater", *panel.labels],
            rows=[[label, *[rounded(v) for v in rho[i]]] for i, label in enumerate(panel.labels)],
        )
    )
    texts = _texts(panel.data.item_ids)
    section.tables.append(
        Table(
            key="dataset-b",
            title="Dataset B — raw ratings",
            columns=["Id", "Setup", "Response", *panel.labels],
            rows=[
                [label, *texts.get(pk, ("", "")), *[_rating_cell(v) for v in panel.values[r]]]
                for r, (pk, label) in enumerate(zip(panel.data.item_ids, panel.data.item_labels, strict=True))
            ],
        )
    )
    rows = []
    for j, label in enumerate(panel.labels):
        col = panel.values[:, j]
        col = col[~np.isnan(col)]
        stats = [
            col.size,
            rounded(col.mean()),
            rounded(np.median(col)),
            rounded(col.std(ddof=1) if col.size > 1 else None),
        ]
        rows.append([label, *stats, *[int(c) for c in counts[j]]])
    section.tables.append(
        Table(
            key="dataset-b-stats",
            title="Dataset B — per-rater statistics",
            columns=["Rater", "Ratings", "Mean", "Median", "SD", *[f"n({_point(p)})" for p in panel.points]],
            rows=rows,
        )
    )
    return section


def _rating_cell(value: float) -> int | None:
    return None if np.isnan(value) else int(value)


def _texts(item_ids: list[int]) -> dict[int, tuple[str, str]]:
    return {
        pk: (prompt, text)
        for pk, prompt, text in Item.objects.filter(pk__in=item_ids).values_list("id", "prompt", "text")
    }


# -- consensus: Dataset A and the majority distribution ----------------------------------------


def _consensus_section(study: Study, panel: _Panel, report: ProtocolReport) -> Section:
    chosen = panel.chosen
    summary = item_summary(chosen, mad_center="median")
    median = item_median(chosen)
    texts = _texts(panel.data.item_ids)
    order = sorted(range(len(median)), key=lambda r: (-median[r] if np.isfinite(median[r]) else np.inf, r))
    rows = []
    for rank, r in enumerate(order, start=1):
        pk, label = panel.data.item_ids[r], panel.data.item_labels[r]
        rows.append(
            [
                rank,
                label,
                *texts.get(pk, ("", "")),
                rounded(median[r], 2),
                rounded(summary.share_at_median[r] * 100, 1),
                rounded(summary.share_within_one_of_median[r] * 100, 1),
                rounded(summary.mad[r]),
                int(summary.n_ratings[r]),
            ]
        )
    who = "selected" if panel.subset else "all"
    section = Section(
        title="Consensus",
        text=(
            f"The consensus of a text is the median of the {who} raters' ratings. Exact % is the share of those "
            "raters who gave the median, adjacent % the share within one point of it, MAD the mean absolute "
            "deviation from the median."
        ),
    )
    section.tables.append(
        Table(
            key="dataset-a",
            title="Dataset A — texts by consensus",
            columns=["Rank", "Id", "Setup", "Response", "Median", "Exact %", "Adjacent %", "MAD", "Ratings"],
            rows=rows,
        )
    )
    rated = ~np.isnan(chosen).all(axis=1)
    majority = majority_vote(chosen[rated], categories=panel.points, tie="higher") if rated.any() else np.array([])
    labels = panel.names
    total = int(rated.sum())
    section.tables.append(
        Table(
            key="majority",
            title="Majority-vote distribution",
            columns=["Rating", "Label", "Texts", "Share %"],
            rows=[
                [
                    _point(p),
                    labels[i] if i < len(labels) else "",
                    int((majority == p).sum()),
                    rounded((majority == p).sum() / total * 100, 1) if total else None,
                ]
                for i, p in enumerate(panel.points)
            ],
            note="Each text's most frequent rating among the consensus raters; a tie goes to the higher rating.",
        )
    )
    if total < len(median):
        report.notes.append(f"{len(median) - total} text(s) have no rating from the consensus raters.")
    return section


# -- LLM and baseline judges ------------------------------------------------------------------------


def _judges_section(study: Study, panel: _Panel, report: ProtocolReport) -> Section:
    section = Section(
        title="LLM raters against the consensus",
        text=(
            "Each judge's rating of a text is compared with the consensus (median of the selected raters, a "
            "half-point median moved up): quadratic-weighted Cohen's κ and Spearman ρ with percentile "
            f"bootstrap 95% CIs over texts ({N_RESAMPLES} resamples); p is the share of resamples at or below 0. "
            "κ above 0.60 reads as substantial agreement."
        ),
    )
    columns = [
        "Judge",
        "Kind",
        "Texts",
        "Missing",
        "κ (quadratic)",
        "κ CI low",
        "κ CI high",
        "κ p",
        "Spearman ρ",
        "ρ CI low",
        "ρ CI high",
        "ρ p",
    ]
    table = Table(key="judges", title="LLM raters: κ and ρ against the consensus", columns=columns)
    section.tables.append(table)
    if len(panel.labels) < 1:
        report.notes.append("No human ratings yet, so there is no consensus to compare judges with.")
        return section
    human_ids = tuple(panel.raters[i].id for i in panel.selected)
    params = AlignmentParams(reference="selected", reference_rater_ids=human_ids, n_resamples=N_RESAMPLES)
    try:
        result = compute_alignment(study=study, params=params)
    except AlignmentUnavailable as exc:
        report.notes.append(f"No judge rows: {exc}. Run an LLM or baseline judge on this study to fill the table.")
        return section
    best = None
    for row in (result["overall"] or {}).get("judges", []):
        kappa, rho = row.get("kappa") or {}, row.get("spearman") or {}
        table.rows.append(
            [
                row["label"],
                row["kind"],
                row["n_items"],
                row["n_missing"],
                rounded(kappa.get("estimate")),
                rounded(kappa.get("ci_low")),
                rounded(kappa.get("ci_high")),
                _p(kappa),
                rounded(rho.get("estimate")),
                rounded(rho.get("ci_low")),
                rounded(rho.get("ci_high")),
                _p(rho),
            ]
        )
        if kappa.get("estimate") is not None and (best is None or kappa["estimate"] > best[1]):
            best = (row["label"], kappa["estimate"])
        report.notes.extend(f"{row['label']}: {note}" for note in row.get("notes", []))
    table.note = "p = 0 means no resample was at or below 0: read it as p < 1/1000."
    if best:
        report.summary.append((f"Best judge κ ({best[0]})", rounded(best[1])))
    return section


def _p(interval: dict[str, Any]) -> float | None:
    return rounded(interval.get("p_value"), 4)
