# SPDX-License-Identifier: GPL-3.0-or-later
"""Judges against the reference, per task type, on arrays (no database access)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..pairwise import consistency_over
from ..stats import (
    MatchVerdict,
    binary_scores,
    cohen_kappa,
    cohen_kappa_bootstrap,
    item_mean,
    leaderboard,
    ranking_kendall_tau,
    spearman,
    win_rate_matrix,
)
from .base import (
    BT_RESAMPLES,
    Block,
    Family,
    bootstrap_interval,
    counted_answers,
    finite,
    judge_head,
    majority_labels,
    missing_counts,
    ordinal_consensus,
    spread,
)


def loo_kappas(matrix: np.ndarray, points: Sequence[float]) -> list[float]:
    """Each rater's quadratic-weighted kappa against the consensus of the other raters.

    Only items the rater rated and at least one other rater rated count; a
    rater with fewer than two such items, or whose kappa is undefined, gets NaN.
    """
    arr = np.asarray(matrix, dtype=float)
    out: list[float] = []
    if arr.shape[0] == 0:  # no item rated twice (``Block.by_rater`` of a packed reference)
        return [math.nan] * arr.shape[1]
    for j in range(arr.shape[1]):
        others = np.delete(arr, j, axis=1)
        consensus = ordinal_consensus(others, points) if others.shape[1] else np.full(arr.shape[0], np.nan)
        mask = ~np.isnan(arr[:, j]) & ~np.isnan(consensus)
        if mask.sum() < 2:
            out.append(math.nan)
            continue
        out.append(cohen_kappa(arr[mask, j], consensus[mask], labels=points, weights="quadratic"))
    return out


def ordinal_section(block: Block, points: Sequence[float], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Quadratic kappa and Spearman rho (bootstrap CI, p) and RMSE of each judge against the consensus."""
    consensus = ordinal_consensus(block.reference, points)
    mean = item_mean(block.reference)
    rows = np.flatnonzero(~np.isnan(consensus))
    loo = loo_kappas(block.by_rater(rows), points)
    humans = {
        **spread(loo),
        "per_rater": [
            {"id": r.id, "label": r.label, "kappa": finite(k)} for r, k in zip(block.raters, loo, strict=True)
        ],
    }
    judges = []
    for judge in block.judges:
        pred = judge.values[rows]
        present = ~np.isnan(pred)
        ref, got = consensus[rows][present], pred[present]
        row: dict[str, Any] = {**judge_head(judge), "n_items": int(rows.size), **missing_counts(judge, rows)}
        row["kappa"] = row["spearman"] = row["rmse"] = None
        notes = []
        if got.size >= 2:
            boot = cohen_kappa_bootstrap(
                ref, got, labels=points, weights="quadratic", n_resamples=n_resamples, seed=seed
            )
            row["kappa"] = bootstrap_interval(boot.estimate, boot.ci_low, boot.ci_high, boot.p_value, n_resamples)
            row["rmse"] = float(np.sqrt(np.mean((mean[rows][present] - got) ** 2)))
        if got.size >= 3 and np.ptp(ref) > 0 and np.ptp(got) > 0:
            rho = spearman(ref, got, n_resamples=n_resamples, seed=seed)
            row["spearman"] = bootstrap_interval(
                rho.estimate, rho.ci_low, rho.ci_high, rho.bootstrap_p_value, n_resamples
            )
        else:
            notes.append("Spearman's rho needs three answered items and variation on both sides")
        kappa = row["kappa"]["estimate"] if row["kappa"] else None
        row["kappa_gap"] = kappa - humans["mean"] if kappa is not None and humans["mean"] is not None else None
        row["notes"] = notes
        judges.append(row)
    return {"n_items": int(rows.size), "humans": humans, "judges": judges}


def _label_scores(reference: np.ndarray, pred: np.ndarray, codes: np.ndarray, binary: bool) -> dict[str, Any]:
    """Accuracy (missing = wrong), and for binary labels MCC, FPR, FNR; kappa on answered items."""
    n = int(reference.size)
    out: dict[str, Any] = {
        "n": n,
        "accuracy": None,
        "correct": 0,
        "mcc": None,
        "mcc_undefined": None,
        "fpr": None,
        "fnr": None,
        "kappa": None,
    }
    if n == 0:
        return out
    correct = int(np.sum(reference == pred))
    out.update(accuracy=correct / n, correct=correct)
    if binary:
        scores = binary_scores(reference, pred, positive=float(codes[1]), negative=float(codes[0]))
        out.update(
            mcc=finite(scores.mcc), mcc_undefined=scores.mcc_undefined, fpr=finite(scores.fpr), fnr=finite(scores.fnr)
        )
    present = ~np.isnan(pred)
    if present.sum() >= 2:
        out["kappa"] = finite(cohen_kappa(reference[present], pred[present], labels=codes))
    return out


def label_section(block: Block, codes: Sequence[float], *, binary: bool) -> dict[str, Any]:
    """Each judge against the human majority and, where items have one, the gold label."""
    cats = np.asarray(codes, dtype=float)
    majority = majority_labels(block.reference, cats)
    decided = np.flatnonzero(~np.isnan(majority))
    undecided = int(np.sum(np.isnan(majority) & (~np.isnan(block.reference)).any(axis=1)))
    with_gold = np.flatnonzero(~np.isnan(block.gold))
    judges = []
    for judge in block.judges:
        row = {**judge_head(judge), **missing_counts(judge, decided)}
        row["vs_majority"] = {
            **_label_scores(majority[decided], judge.values[decided], cats, binary),
            **missing_counts(judge, decided),
        }
        row["vs_gold"] = (
            {
                **_label_scores(block.gold[with_gold], judge.values[with_gold], cats, binary),
                **missing_counts(judge, with_gold),
            }
            if with_gold.size
            else None
        )
        judges.append(row)
    return {
        "n_items": int(decided.size),
        "n_undecided": undecided,
        "n_gold": int(with_gold.size),
        "judges": judges,
    }


def pairwise_agreement(majority: np.ndarray, pred: np.ndarray, swapped: np.ndarray | None = None) -> dict[str, Any]:
    """Agreement of a judge with the human majority (codes 1 first wins, 0.5 tie, 0 second wins).

    *With ties*: every decided item counts; a tie is an answer like any other.
    *Without ties*: items whose human majority is a tie and items the judge
    called a tie are left out. A missing answer is wrong in both.
    A judge asked in both orders gives ``swapped``, its B/A answers: each
    order's answer then counts as its own verdict (:func:`counted_answers`),
    so ``n`` counts verdicts (two per item) and a judge that always picks the
    joke shown first scores no better than chance.
    """
    m, p = counted_answers(majority, pred, swapped)
    n_with = int(m.size)
    correct_with = int(np.sum(m == p))
    keep = (m != 0.5) & (p != 0.5)
    n_without = int(keep.sum())
    correct_without = int(np.sum(m[keep] == p[keep]))
    return {
        "with_ties": {"value": correct_with / n_with if n_with else None, "n": n_with, "correct": correct_with},
        "without_ties": {
            "value": correct_without / n_without if n_without else None,
            "n": n_without,
            "correct": correct_without,
        },
    }


def bt_ranking(a: Sequence[str], b: Sequence[str], score: np.ndarray, *, seed: int) -> dict[str, Any] | None:
    """Bradley–Terry ratings with bootstrap intervals and the win-rate matrix; None without two contestants.

    The numbers are the shared leaderboard's (``ratings.stats.leaderboard``), in sorted name order.
    """
    if len(a) == 0 or len(set(a) | set(b)) < 2:
        return None
    board = leaderboard(
        [MatchVerdict(str(x), str(y), float(s)) for x, y, s in zip(a, b, score, strict=True)],
        n_resamples=BT_RESAMPLES,
        seed=seed,
    )
    rows = [board.standing(name) for name in board.names]
    return {
        "names": list(board.names),
        "ratings": [r.rating for r in rows],
        "ci_low": [r.ci_low for r in rows],
        "ci_high": [r.ci_high for r in rows],
        "win_rates": [[finite(x) for x in row] for row in win_rate_matrix(board.wins)],
        "n_matches": board.n_matches,
        "warnings": list(board.warnings),
    }


def ranking_tau(first: dict[str, Any] | None, second: dict[str, Any] | None) -> dict[str, Any]:
    """Kendall's tau-b between two BT rankings over their shared contestants (at least three)."""
    if not first or not second:
        return {"tau": None, "p_value": None, "n": 0}
    shared = sorted(set(first["names"]) & set(second["names"]))
    if len(shared) < 3:
        return {"tau": None, "p_value": None, "n": len(shared)}
    x = [first["ratings"][first["names"].index(n)] for n in shared]
    y = [second["ratings"][second["names"].index(n)] for n in shared]
    tau, p = ranking_kendall_tau(x, y)
    return {"tau": finite(tau), "p_value": finite(p), "n": len(shared)}


def pairwise_section(block: Block) -> dict[str, Any]:
    """Agreement with the human majority, position consistency and ranking agreement per judge."""
    majority = majority_labels(block.reference, [0.0, 0.5, 1.0])
    decided = np.flatnonzero(~np.isnan(majority))
    undecided = int(np.sum(np.isnan(majority) & (~np.isnan(block.reference)).any(axis=1)))
    items = set(block.item_ids)
    consistency = block.extras.get("consistency", {})
    rankings = block.extras.get("rankings", {})
    human_rank = rankings.get("reference")
    judges = []
    for judge in block.judges:
        row = {**judge_head(judge), "n_items": int(decided.size), **missing_counts(judge, decided)}
        swapped = judge.swapped[decided] if judge.swapped is not None else None
        row.update(pairwise_agreement(majority[decided], judge.values[decided], swapped))
        row["both_orders"] = judge.swapped is not None
        groups = consistency.get(judge.info.id, {})
        row["position_consistency"] = consistency_over(groups, items).as_dict()
        row["ranking_tau"] = ranking_tau(human_rank, rankings.get(judge.info.id))
        judges.append(row)
    between = []
    for i, first in enumerate(block.judges):
        for second in block.judges[i + 1 :]:
            tau = ranking_tau(rankings.get(first.info.id), rankings.get(second.info.id))
            between.append({"first": first.info.label, "second": second.info.label, **tau})
    return {"n_items": int(decided.size), "n_undecided": undecided, "judges": judges, "judge_pairs": between}


def pick_one_section(block: Block, codes: Sequence[float]) -> dict[str, Any]:
    """Accuracy of each judge against the gold option and against the human majority (missing = wrong)."""
    cats = np.asarray(codes, dtype=float)
    majority = majority_labels(block.reference, cats)
    decided = np.flatnonzero(~np.isnan(majority))
    with_gold = np.flatnonzero(~np.isnan(block.gold))
    judges = []
    for judge in block.judges:
        row = {**judge_head(judge)}
        for name, rows, truth in (("vs_gold", with_gold, block.gold), ("vs_majority", decided, majority)):
            scores = _label_scores(truth[rows], judge.values[rows], cats, binary=False)
            row[name] = {
                "n": scores["n"],
                "accuracy": scores["accuracy"],
                "correct": scores["correct"],
                **missing_counts(judge, rows),
            }
        judges.append(row)
    gold_rows = with_gold
    humans_vs_gold = None
    if gold_rows.size:
        hit = block.reference[gold_rows] == block.gold[gold_rows, None]
        rated = ~np.isnan(block.reference[gold_rows])
        humans_vs_gold = float(hit.sum() / rated.sum()) if rated.sum() else None
    undecided = int(np.sum(np.isnan(majority) & (~np.isnan(block.reference)).any(axis=1)))
    return {
        "n_items": int(decided.size),
        "n_gold": int(with_gold.size),
        "n_undecided": undecided,
        "humans_vs_gold": humans_vs_gold,
        "judges": judges,
    }


def section(block: Block, family: str, codes: np.ndarray, *, n_resamples: int, seed: int) -> dict[str, Any]:
    if family == Family.ORDINAL:
        return ordinal_section(block, codes, n_resamples=n_resamples, seed=seed)
    if family == Family.BINARY:
        return label_section(block, codes, binary=True)
    if family == Family.CHOICE:
        return pick_one_section(block, codes)
    return pairwise_section(block)


def primary_metric(family: str, judge_row: dict[str, Any]) -> float | None:
    """The figure judges are ranked by: kappa (ordinal), accuracy against the majority (binary),
    agreement with ties (pairwise), accuracy against gold, else the majority (pick one)."""
    if family == Family.ORDINAL:
        return (judge_row.get("kappa") or {}).get("estimate")
    if family == Family.BINARY:
        return judge_row["vs_majority"]["accuracy"]
    if family == Family.PAIRWISE:
        return judge_row["with_ties"]["value"]
    if judge_row["vs_gold"]["n"]:
        return judge_row["vs_gold"]["accuracy"]
    return judge_row["vs_majority"]["accuracy"]
