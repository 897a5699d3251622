# SPDX-License-Identifier: GPL-3.0-or-later
"""Analysis reports built from ``ratings.stats``: the figures the analyze
command prints, the study analysis page shows and the API returns.

Each ``*_report`` function takes plain arrays and returns a dict of plain
Python values. :func:`json_ready` then replaces every undefined number (NaN,
infinity) with ``None`` and says so in the report's ``warnings``, so the
result always serialises as strict JSON.

The module imports no Django: ``funnybone analyze`` (``ratings.cli``) builds its
reports here without a project, settings or database. Only the study-level
functions read the database, importing ``ratings.selectors`` when called.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .stats import (
    DEFAULT_ORDERINGS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    FORMS,
    Leaderboard,
    MatchVerdict,
    accuracy,
    adjacent_agreement,
    best_worst_scores,
    binary_scores,
    category_counts,
    cohen_kappa_bootstrap,
    dawid_skene,
    exact_agreement,
    fleiss_kappa_from_matrix,
    icc,
    kendall,
    krippendorff_alpha,
    krippendorff_alpha_all_levels,
    leaderboard,
    mean_item_sd,
    mean_offdiagonal,
    percentage_agreement,
    rmse,
    select_raters,
    spearman,
    spearman_matrix,
)

if TYPE_CHECKING:
    from annotation.models import Study

    from .selectors import BestWorstPicks, StudyMatrix

LEVELS = ("nominal", "ordinal", "interval", "ratio")
KAPPA_WEIGHTS = {"none": None, "linear": "linear", "quadratic": "quadratic"}
#: Above this many raters with gaps in their ratings (a crowd design), the rater × rater
#: Spearman matrix means millions of small correlations; it is skipped with a warning.
MAX_SPEARMAN_RATERS = 200


class AnalysisError(ValueError):
    """The data cannot give the analysis asked for (too few raters, k out of range, ...)."""


def _interval(value: float, low: float, high: float) -> dict[str, float]:
    return {"value": float(value), "ci_low": float(low), "ci_high": float(high)}


def _bootstrap_interval(value: float, low: float, high: float, p_value: float | None) -> dict[str, Any]:
    """A percentile-bootstrap interval and its ``p_value``: the share of resamples whose statistic is at or
    below 0 (one-sided; small when the figure is reliably above chance), not a classical test's p-value."""
    return {**_interval(value, low, high), "p_value": p_value}


# -- agreement on a rating matrix -------------------------------------------------------


def alpha_figures(arr: np.ndarray, cats: np.ndarray, *, nominal: bool, warnings: list[str]) -> dict[str, Any]:
    """Krippendorff's α at every level of an items × raters matrix (only nominal for nominal codes)."""
    try:
        alpha = krippendorff_alpha_all_levels(arr, value_domain=cats)
    except ValueError as exc:
        warnings.append(f"Krippendorff's alpha: {exc}")
        alpha = dict.fromkeys(LEVELS, math.nan)
    if nominal:
        alpha = {level: (alpha[level] if level == "nominal" else None) for level in LEVELS}
    return alpha


def rating_report(
    values: np.ndarray,
    *,
    categories: Sequence[float] | np.ndarray,
    nominal: bool = False,
    left_out: int = 0,
) -> dict[str, Any]:
    """Agreement figures for an items × raters matrix (NaN = not rated).

    ``categories`` is the scale (numbers in order); ``nominal`` says the codes
    are unordered labels, in which case only the figures that compare labels
    for equality are computed. ``left_out`` counts items with one rating left
    out of ``values`` (a study's matrix read paired, ``StudyMatrix.left_out``):
    the report is then the one of the whole matrix.
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise AnalysisError("agreement needs ratings from at least two raters")
    if np.isnan(arr).all():
        raise AnalysisError("there are no ratings to analyse")
    cats = np.sort(np.asarray(categories, dtype=float))
    if cats.size < 2:
        cats = np.unique(np.append(cats, cats[0] + 1.0)) if cats.size else np.array([0.0, 1.0])
    warnings: list[str] = []
    report: dict[str, Any] = {
        "n_items": int(arr.shape[0]) + left_out,
        "n_raters": int(arr.shape[1]),
        "n_ratings": int((~np.isnan(arr)).sum()) + left_out,
    }

    report["krippendorff_alpha"] = alpha_figures(arr, cats, nominal=nominal, warnings=warnings)

    if nominal:
        report["icc"] = dict.fromkeys(FORMS)
    else:
        result = icc(arr, warn=False, left_out=left_out)
        warnings.extend(f"ICC: {note}" for note in result.warnings)
        if result.estimates is None:
            report["icc"] = dict.fromkeys(FORMS)
        else:
            report["icc"] = {form: _interval(e.value, e.ci_low, e.ci_high) for form, e in result.estimates.items()}

    try:
        report["fleiss_kappa"] = fleiss_kappa_from_matrix(arr, cats)
    except ValueError as exc:
        report["fleiss_kappa"] = None
        warnings.append(f"Fleiss' kappa: {exc}")

    exact = exact_agreement(arr)
    report["exact_agreement"] = exact.value
    # Share of agreeing rater pairs per item (HumorRank's "raw agreement" on A/B/tie votes).
    report["percentage_agreement"] = percentage_agreement(arr).value
    if exact.n_excluded + left_out:
        warnings.append(f"{exact.n_excluded + left_out} item(s) with fewer than two ratings left out of agreement")
    if nominal:
        report["adjacent_agreement"] = None
        report["mean_item_sd"] = None
        report["mean_pairwise_spearman"] = None
        warnings.append(
            "the labels are unordered: ordinal/interval/ratio alpha, ICC, adjacent agreement, "
            "item SD and Spearman correlations do not apply"
        )
    else:
        report["adjacent_agreement"] = adjacent_agreement(arr).value
        report["mean_item_sd"] = mean_item_sd(arr).value
        if arr.shape[1] > MAX_SPEARMAN_RATERS and np.isnan(arr).any():
            report["mean_pairwise_spearman"] = None
            warnings.append(
                f"mean pairwise Spearman skipped: {arr.shape[1]} raters with incomplete ratings "
                f"(computed for at most {MAX_SPEARMAN_RATERS})"
            )
        else:
            report["mean_pairwise_spearman"] = mean_offdiagonal(spearman_matrix(arr))
    report["warnings"] = warnings
    return report


def subset_report(
    values: np.ndarray,
    *,
    k: int,
    rater_ids: Sequence[str],
    categories: Sequence[float] | np.ndarray,
    nominal: bool = False,
) -> dict[str, Any]:
    """Choose k raters with the most balanced rating distributions; figures before and after."""
    arr = np.asarray(values, dtype=float)
    n_raters = arr.shape[1]
    if not 2 <= k <= n_raters:
        raise AnalysisError(f"k must be between 2 and the number of raters ({n_raters}), got {k}")
    if n_raters > MAX_SPEARMAN_RATERS:
        raise AnalysisError(
            f"subset selection is meant for panels of at most {MAX_SPEARMAN_RATERS} raters; this group has {n_raters}"
        )
    cats = np.sort(np.asarray(categories, dtype=float))
    try:
        result = select_raters(arr, k=k, categories=cats)
    except ValueError as exc:
        raise AnalysisError(str(exc)) from None
    selected = list(result.selected)
    # select_raters appends the two agreement tables' notes after its own; ours come from rating_report.
    own_notes = len(result.warnings) - len(result.before.warnings) - len(result.after.warnings)
    labels = [_label(c) for c in cats]
    report: dict[str, Any] = {
        "k": k,
        "selected": [rater_ids[i] for i in selected],
        "method": result.method,
        "balance": {rater_ids[i]: float(result.distance_to_uniform[i]) for i in range(n_raters)},
        "distributions": {
            rater_ids[i]: dict(zip(labels, (float(x) for x in result.distributions[i]), strict=True))
            for i in range(n_raters)
        },
        "before": rating_report(arr, categories=cats, nominal=nominal),
        "after": rating_report(arr[:, selected], categories=cats, nominal=nominal),
        "rho_all_vs_subset": result.mean_rank_correlation,
        "warnings": list(result.warnings[:own_notes]),
    }
    return report


def _label(code: float) -> str:
    return str(int(code)) if float(code).is_integer() else f"{code:g}"


def rating_distributions(values: np.ndarray, *, categories: Sequence[float] | np.ndarray) -> np.ndarray:
    """Raters × categories table: how many times each rater used each scale point."""
    return category_counts(np.asarray(values, dtype=float).T, categories)


# -- pairwise --------------------------------------------------------------------------


def pairwise_report(
    a: Sequence[str],
    b: Sequence[str],
    score: Sequence[float] | np.ndarray,
    *,
    shown_first: Sequence[str | None] | None = None,
    matches: Sequence[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    n_orderings: int = DEFAULT_ORDERINGS,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The leaderboard (:func:`ratings.stats.leaderboard`) of a match list as plain values.

    ``shown_first`` (who was shown first per match) and ``matches`` (an id shared by
    both orders of one comparison) add the position figures when given.
    """
    if len(a) == 0:
        raise AnalysisError("there are no pairwise judgments to analyse")
    if n_resamples < 2:
        raise AnalysisError("the bootstrap needs at least 2 resamples")
    n = len(a)
    verdicts = [
        MatchVerdict(
            str(a[i]),
            str(b[i]),
            float(score[i]),
            match=str(matches[i]) if matches is not None else "",
            shown_first=shown_first[i] if shown_first is not None else None,
        )
        for i in range(n)
    ]
    try:
        board = leaderboard(verdicts, n_resamples=n_resamples, n_orderings=n_orderings, seed=seed)
    except ValueError as exc:
        raise AnalysisError(f"pairwise analysis: {exc}") from None
    return leaderboard_dict(board)


def leaderboard_dict(board: Leaderboard) -> dict[str, Any]:
    """A leaderboard as plain values, keyed by contestant in ranking order."""
    rows = board.standings
    position = board.position
    return {
        "n_matches": board.n_matches,
        "n_contestants": len(board.names),
        "bradley_terry": {s.name: {"rating": s.rating, "ci_low": s.ci_low, "ci_high": s.ci_high} for s in rows},
        "stable_elo": {s.name: {"mean": s.elo_mean, "sd": s.elo_sd} for s in rows},
        "win_rate": {s.name: s.win_rate for s in rows},
        "games": {s.name: s.games for s in rows},
        "ranking": board.ranking,
        # Equal ratings share a rank (ratings.stats.leaderboard.competition_ranks).
        "rank": {s.name: s.rank for s in rows},
        "intransitive_triads": board.intransitive_triads,
        "position": {
            "decisive_verdicts": position.n_decisive,
            "first_shown_wins": position.first_wins,
            "first_shown_rate": position.first_rate,
            "binomial_p": position.p_value,
            "judged_both_orders": position.n_both_orders,
            "consistent": position.n_consistent,
            "consistency": position.consistency,
        },
        "bootstrap": {"resamples": board.n_resamples, "seed": board.seed, "elo_orderings": board.n_orderings},
        "warnings": list(board.warnings),
    }


# -- alignment ----------------------------------------------------------------------------


def alignment_report(
    reference: np.ndarray,
    predicted: np.ndarray,
    *,
    categories: Sequence[float] | np.ndarray,
    n_resamples: int = 1000,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """A rater (often an LLM judge) against a reference label per item.

    A missing prediction (NaN) counts as wrong in accuracy, MCC, FPR and FNR, as
    the Chumor protocol asks; kappa, correlations and RMSE use the items that
    have a prediction. MCC, FPR and FNR need exactly two labels (the higher one
    is positive), else they are None. Kappa and the correlations carry a
    percentile-bootstrap interval and ``p_value`` (see ``_bootstrap_interval``).
    """
    ref = np.asarray(reference, dtype=float)
    pred = np.asarray(predicted, dtype=float)
    cats = np.sort(np.asarray(categories, dtype=float))
    if ref.size == 0:
        raise AnalysisError("there are no items to compare")
    if n_resamples < 2:
        raise AnalysisError("the bootstrap needs at least 2 resamples")
    present = ~np.isnan(pred)
    warnings: list[str] = []
    n_missing = int((~present).sum())
    if n_missing:
        warnings.append(
            f"{n_missing} item(s) have no prediction: they count as wrong in accuracy and MCC and are "
            "left out of kappa, correlations and RMSE"
        )
    r, p = ref[present], pred[present]
    report: dict[str, Any] = {"n": int(ref.size), "n_missing": n_missing, "labels": [_label(c) for c in cats]}

    kappas: dict[str, Any] = {}
    for name, weights in KAPPA_WEIGHTS.items():
        try:
            boot = cohen_kappa_bootstrap(r, p, labels=cats, weights=weights, n_resamples=n_resamples, seed=seed)
            kappas[name] = _bootstrap_interval(boot.estimate, boot.ci_low, boot.ci_high, boot.p_value)
            warnings.extend(f"Cohen's kappa ({name}): {w}" for w in boot.warnings)
        except ValueError as exc:
            kappas[name] = None
            warnings.append(f"Cohen's kappa ({name}): {exc}")
    report["cohen_kappa"] = kappas

    for name, func in (("spearman", spearman), ("kendall", kendall)):
        if r.size < 3 or np.ptp(r) == 0 or np.ptp(p) == 0:
            report[name] = None
            warnings.append(f"{name}: needs at least three items and variation on both sides")
            continue
        result = func(r, p, n_resamples=n_resamples, seed=seed)
        report[name] = _bootstrap_interval(result.estimate, result.ci_low, result.ci_high, result.bootstrap_p_value)
        warnings.extend(f"{name}: {w}" for w in result.warnings)

    report["accuracy"] = accuracy(ref, pred)
    report["mcc"] = report["mcc_undefined"] = None
    if cats.size == 2:
        scores = binary_scores(ref, pred, positive=float(cats[1]), negative=float(cats[0]))
        report["mcc"], report["mcc_undefined"] = scores.mcc, scores.mcc_undefined
        report["fpr"], report["fnr"] = scores.fpr, scores.fnr
        if scores.mcc_undefined:
            warnings.append(f"MCC is undefined: {scores.mcc_undefined}")
    else:
        report["fpr"] = report["fnr"] = None
    report["rmse"] = rmse(r, p) if r.size else None
    report["warnings"] = warnings
    return report


# -- aggregated labels ------------------------------------------------------------------


def dawid_skene_report(
    values: np.ndarray,
    *,
    categories: Sequence[float] | np.ndarray,
    names: Sequence[str],
    item_labels: Sequence[str],
    rater_labels: Sequence[str],
) -> dict[str, Any]:
    """Dawid–Skene labels per item (``names`` are the scale's names for ``categories``) with the fit's warnings.

    ``labels`` maps each item to ``{"label", "confidence"}``, both None where no label was estimated;
    ``fitted`` is False when the data cannot identify the model (see ``ratings.stats.dawid_skene``).
    """
    cats = np.asarray(categories, dtype=float)
    ds = dawid_skene(values, categories=cats, rater_names=list(rater_labels), category_names=list(names))
    name_of = dict(zip(cats.tolist(), names, strict=True))
    labels = {}
    for item, label, confidence in zip(item_labels, ds.labels.tolist(), ds.confidence.tolist(), strict=True):
        known = not math.isnan(label)
        labels[str(item)] = {
            "label": name_of.get(label, _label(label)) if known else None,
            "confidence": confidence if known else None,
        }
    return {
        "fitted": ds.fitted,
        "converged": ds.converged,
        "iterations": ds.iterations,
        "left_out_raters": [rater_labels[c] for c in ds.constant_raters],
        "labels": labels,
        "warnings": list(ds.warnings),
    }


# -- JSON -------------------------------------------------------------------------------


def best_worst_report(picks: BestWorstPicks) -> dict[str, Any]:
    """Counting scores per contestant, and Krippendorff's alpha (nominal) on the best and on the worst pick."""
    warnings = list(picks.warnings)
    if not picks.judgments:
        raise AnalysisError("there are no best–worst judgments to analyse")
    scores = best_worst_scores(picks.judgments)
    agreement: dict[str, Any] = {}
    for pick, matrix in picks.matrices.items():
        rated = (~np.isnan(matrix)).sum(axis=1)
        if matrix.shape[1] < 2 or not (rated >= 2).any():
            agreement[pick] = None
            warnings.append(f"agreement on the {pick} pick needs items judged by at least two raters")
            continue
        agreement[pick] = krippendorff_alpha(matrix, level="nominal", value_domain=np.arange(picks.n_positions))
    rows = [
        {"rank": rank, "name": name, "score": score, "best": best, "worst": worst, "shown": shown}
        for rank, (name, score, best, worst, shown) in enumerate(
            zip(scores.names, scores.scores, scores.best, scores.worst, scores.appearances, strict=True), start=1
        )
    ]
    first = next(iter(picks.matrices.values()))
    return {
        "n_judgments": scores.n_judgments,
        "n_items": int(first.shape[0]),
        "n_raters": int(first.shape[1]),
        "rows": rows,
        "krippendorff_alpha": agreement,
        "warnings": warnings,
    }


def to_plain(value: Any, *, path: str = "", undefined: list[str] | None = None) -> Any:
    """JSON-ready: numpy scalars and arrays to Python, tuples to lists, NaN/infinity to None.

    The path of each undefined number is added to ``undefined`` when a list is given.
    """
    if isinstance(value, dict):
        return {
            str(k): to_plain(v, path=f"{path}.{k}" if path else str(k), undefined=undefined) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [to_plain(v, path=f"{path}[{i}]", undefined=undefined) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist(), path=path, undefined=undefined)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if math.isfinite(value):
            return float(value)
        if undefined is not None:
            undefined.append(path)
        return None
    return value


def json_ready(report: dict[str, Any]) -> dict[str, Any]:
    """Replace NaN/infinity with None (noting each in ``warnings``) and numpy scalars with Python ones."""
    undefined: list[str] = []
    cleaned = to_plain(report, undefined=undefined)
    cleaned.setdefault("warnings", [])
    cleaned["warnings"] = list(cleaned["warnings"]) + [
        f"{path} is undefined for these data (reported as null)" for path in undefined
    ]
    return cleaned


# -- studies ------------------------------------------------------------------------------


def study_agreement(
    *, study: Study, group: str = "humans", rater_ids: Iterable[int] | None = None, matrix: StudyMatrix | None = None
) -> dict[str, Any]:
    """The agreement figures of one rater group in a study, recomputed from its judgments.

    Returns ``agreement: None`` with the reason in ``warnings`` when the group
    has fewer than two raters. ``matrix`` lets a caller that already read the
    study's matrix pass it in.
    """
    from .selectors import study_rating_matrix  # the database side; see the module docstring

    data = matrix if matrix is not None else study_rating_matrix(study=study, group=group, rater_ids=rater_ids)
    report: dict[str, Any] = {
        "study": study.slug,
        "group": group,
        "task_type": study.task_type,
        "scale": dict(zip((_label(c) for c in data.scale.codes), data.scale.names, strict=True)),
        "n_judgments": data.n_judgments,
        "raters": [{"id": r.id, "label": r.label, "kind": r.kind} for r in data.raters],
        "agreement": None,
        "warnings": list(data.warnings),
    }
    if not data.whole:
        # Read paired (the whole matrix is too large): the rows are the items with two ratings or more, and a
        # few with one (``StudyMatrix.left_out``); the figures are those of the whole matrix.
        paired = int(((~np.isnan(data.values)).sum(axis=1) >= 2).sum())
        report["warnings"].append(
            f"{data.n_items - paired} of the {data.n_items} items have one rating each and carry no agreement; "
            f"the agreement figures read the {paired} items with two ratings or more"
        )
        if not paired:
            report["warnings"].append("agreement is undefined: no item has ratings from two raters of this group")
            return report
    try:
        report["agreement"] = rating_report(
            data.values, categories=data.scale.codes, nominal=data.scale.nominal, left_out=data.left_out
        )
    except AnalysisError as exc:
        report["warnings"].append(str(exc))
    if not data.whole:
        if data.scale.nominal:
            report["warnings"].append("Dawid–Skene labels need every item's ratings and are not estimated here")
    elif data.scale.nominal and data.values.size:
        report["dawid_skene"] = dawid_skene_report(
            data.values,
            categories=data.scale.codes,
            names=data.scale.names,
            item_labels=data.item_labels,
            rater_labels=[r.label for r in data.raters],
        )
    return report
