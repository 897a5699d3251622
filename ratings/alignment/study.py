# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a study into the alignment computations and assembling the stored report."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from django.conf import settings

from annotation.models import (
    SWAPPED_TRIAL_OFFSET,
    Candidate,
    Item,
    Judgment,
    Rater,
    Study,
    counted_raters,
)
from annotation.task_types import get_task_type

from ..leaderboards import counted_judge_judgments
from ..pairwise import item_candidates, outcome_of, study_judge_comparisons
from ..rater_groups import rater_groups, small_group_raters
from ..selectors import (
    JUDGE_KINDS,
    RaterInfo,
    StudyMatrix,
    study_pairwise_outcomes,
    study_rating_matrix,
)
from ..stats import (
    spearman_matrix,
)
from .base import (
    BREAKDOWN_RESAMPLES,
    MAX_GROUPS,
    MISSING_REASONS,
    REFERENCES,
    AlignmentParams,
    AlignmentUnavailable,
    Block,
    Family,
    JudgeColumn,
    Progress,
    counted_answers,
    family_of,
    finite,
    majority_labels,
    metadata_groups,
    ordinal_consensus,
)
from .sections import bt_ranking, primary_metric, section

# -- reading the study -----------------------------------------------------------------------------


def task_family(study: Study) -> str:
    task_type = get_task_type(study.task_type)
    family = family_of(task_type)
    if family is not None:
        return family
    raise AlignmentUnavailable(f"{task_type.title} studies have no alignment report (no single answer per item)")


def study_judges(*, study: Study) -> list[RaterInfo]:
    """Every LLM or baseline judge with a judgment (of any status) in the study."""
    ids = Judgment.objects.filter(study=study, rater__kind__in=JUDGE_KINDS).values("rater_id").distinct()
    rows = Rater.objects.filter(pk__in=ids).order_by("pk").values_list("id", "kind", "name", "external_id")
    return [RaterInfo(id=pk, kind=kind, label=name or ext or f"rater {pk}") for pk, kind, name, ext in rows]


def _reference_matrix(study: Study, params: AlignmentParams) -> StudyMatrix:
    cap = settings.FUNNYBONE_DENSE_MATRIX_CELLS
    if params.reference == "selected":
        return study_rating_matrix(study=study, group="humans", rater_ids=params.reference_rater_ids, max_cells=cap)
    return study_rating_matrix(study=study, group=params.reference, max_cells=cap)


def _judge_columns(study: Study, judges: list[RaterInfo], item_ids: list[int]) -> list[JudgeColumn]:
    if not judges:
        return []
    data = study_rating_matrix(study=study, group="judges", rater_ids=[j.id for j in judges])
    row_of = {pk: i for i, pk in enumerate(data.item_ids)}
    col_of = {r.id: c for c, r in enumerate(data.raters)}
    statuses: dict[tuple[int, int], set[str]] = defaultdict(set)
    # Every judgment of the judges, not those of ``item_ids`` (a list of a million ids in the query costs
    # more than reading the few judgments of other items); only the statuses on ``item_ids`` are looked up.
    rows = Judgment.objects.filter(study=study, rater_id__in=[j.id for j in judges]).values_list(
        "rater_id", "item_id", "status"
    )
    for rater_id, item_id, status in rows.iterator(chunk_size=20_000):
        statuses[(rater_id, item_id)].add(status)
    orders = _both_orders(study, judges, item_ids) if task_family(study) == Family.PAIRWISE else {}
    columns = []
    for judge in judges:
        values = np.full(len(item_ids), np.nan)
        swapped = None
        if judge.id in orders:
            values, swapped = orders[judge.id]
        else:
            for i, item_id in enumerate(item_ids):
                if judge.id in col_of and item_id in row_of:
                    values[i] = data.values[row_of[item_id], col_of[judge.id]]
        reasons: list[str | None] = []
        for i, item_id in enumerate(item_ids):
            if not np.isnan(values[i]):
                reasons.append(None)
                continue
            seen = statuses.get((judge.id, item_id), set())
            if Judgment.Status.UNPARSEABLE in seen:
                reasons.append("unparseable")
            elif Judgment.Status.FAILED in seen:
                reasons.append("failed")
            else:
                reasons.append("not_judged")
        columns.append(JudgeColumn(info=judge, values=values, reasons=reasons, swapped=swapped))
    return columns


def _both_orders(
    study: Study, judges: list[RaterInfo], item_ids: list[int]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Pairwise judges asked in both orders: per judge, its answers in the A/B and in the B/A order.

    The answers that count are the rankings' (``counted_judge_judgments``: one per item and order shown,
    the earliest trial), so agreement and rankings read the same verdicts. A judge counts as asked in
    both orders when any of its judgments here, answered or not, was in the second order.
    """
    asked = set(
        Judgment.objects.filter(
            study=study, rater_id__in=[j.id for j in judges], assignment__trial__gte=SWAPPED_TRIAL_OFFSET
        )
        .values_list("rater_id", flat=True)
        .distinct()
    )
    if not asked:
        return {}
    row_of = {pk: i for i, pk in enumerate(item_ids)}
    task_type = get_task_type(study.task_type)
    keys = {item: [key for key, _ in pair] for item, pair in item_candidates(study=study).items()}
    out = {rater: (np.full(len(item_ids), np.nan), np.full(len(item_ids), np.nan)) for rater in asked}
    for rater_id, item_id, value, shown, _ in counted_judge_judgments(study=study, rater_ids=asked):
        pair = keys.get(item_id, [])
        if item_id not in row_of or len(pair) != 2 or not shown:
            continue
        code = outcome_of(task_type, value, pair)
        if code is not None:
            first_order, second_order = out[rater_id]
            (first_order if shown[0] == pair[0] else second_order)[row_of[item_id]] = code
    return out


def _gold_codes(study: Study, item_ids: list[int], golds: dict[int, Any]) -> np.ndarray:
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys: dict[int, list[str]] = defaultdict(list)
    if task_type.candidates != (0, 0):
        rows = Candidate.objects.filter(item_id__in=[pk for pk in item_ids if golds.get(pk) is not None])
        for item_id, key in rows.order_by("item_id", "position", "id").values_list("item_id", "key"):
            keys[item_id].append(key)
    out = np.full(len(item_ids), np.nan)
    for i, pk in enumerate(item_ids):
        gold = golds.get(pk)
        if gold is None:
            continue
        try:
            number = task_type.to_number(gold, candidate_keys=keys.get(pk, []), config=config)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError):
            number = None
        out[i] = math.nan if number is None else number
    return out


def _rankings(study: Study, params: AlignmentParams, judges: list[RaterInfo]) -> dict[Any, Any]:
    rater_ids = params.reference_rater_ids if params.reference == "selected" else None
    group = "humans" if params.reference == "selected" else params.reference
    outcomes = study_pairwise_outcomes(study=study, group=group, rater_ids=rater_ids)
    rankings: dict[Any, Any] = {"reference": bt_ranking(outcomes.a, outcomes.b, outcomes.score, seed=params.seed)}
    for judge in judges:
        mine = study_pairwise_outcomes(study=study, group="judges", rater_ids=[judge.id])
        rankings[judge.id] = bt_ranking(mine.a, mine.b, mine.score, seed=params.seed)
    return rankings


def feature_tallies(study: Study, judges: list[RaterInfo]) -> dict[int, dict[str, Any]]:
    """Per judge: each contestant's share of wins carrying each humour mechanism or delivery
    feature, and share of losses carrying each failure feature (HumorRank's feature analysis)."""
    task_type = get_task_type(study.task_type)
    contestants = item_candidates(study=study)
    out: dict[int, dict[str, Any]] = {}
    for judge in judges:
        rows = Judgment.objects.filter(
            study=study, rater_id=judge.id, status=Judgment.Status.OK, item__is_attention_check=False
        ).values_list("item_id", "value", "provenance__features")
        wins: Counter = Counter()
        losses: Counter = Counter()
        tally: dict[str, Counter] = defaultdict(Counter)
        for item_id, value, features in rows.iterator(chunk_size=20_000):
            pair = contestants.get(item_id, [])
            if len(pair) != 2 or not isinstance(features, dict):
                continue
            score = outcome_of(task_type, value, [key for key, _ in pair])
            if score is None or score == 0.5:
                continue
            (_, first), (_, second) = pair
            winner, loser = (first, second) if score == 1.0 else (second, first)
            wins[winner] += 1
            losses[loser] += 1
            for feature in {*features.get("humor_mechanisms", []), *features.get("delivery_features", [])}:
                tally[winner][f"win:{feature}"] += 1
            for feature in set(features.get("failure_features", [])):
                tally[loser][f"loss:{feature}"] += 1
        names = sorted(set(wins) | set(losses))
        columns = sorted({f for counter in tally.values() for f in counter})
        if not names or not columns:
            continue
        shares = []
        for name in names:
            row = []
            for column in columns:
                base = wins[name] if column.startswith("win:") else losses[name]
                row.append(tally[name][column] / base if base else None)
            shares.append(row)
        out[judge.id] = {"contestants": names, "features": columns, "shares": shares}
    return out


def unrankable_reason(judge: JudgeColumn) -> str | None:
    """Why a judge cannot be ranked against the reference, or None when it can.

    A judge with no usable answer on the compared items has nothing to be scored on:
    its "agreement" would be its missing answers counted as wrong (0.000), a figure
    about its endpoint, not its judgment. It is listed apart, with what happened.
    """
    usable = ~np.isnan(judge.values)
    if judge.swapped is not None:
        usable |= ~np.isnan(judge.swapped)
    if usable.any():
        return None
    counts = Counter(reason for reason in judge.reasons if reason is not None)
    what = ", ".join(f"{counts[reason]} {reason.replace('_', ' ')}" for reason in MISSING_REASONS if counts[reason])
    return f"no usable answer on the {len(judge.reasons)} items compared" + (f" ({what})" if what else "")


#: Most raters (columns) in the distribution and Spearman figures.
MAX_PLOT_RATERS = 40


def _plot_data(
    family: str, block: Block, codes: np.ndarray, scale_names: list[str], study: Study, judges, matrix: StudyMatrix
) -> dict:
    """The arrays behind the report's figures, stored with it so plots never recompute statistics."""
    data: dict[str, Any] = {"scale": [float(c) for c in codes], "scale_names": scale_names}
    if family == Family.ORDINAL:
        # A box per rater and a rater × rater heatmap stay readable (and cheap) for a panel, not a crowd:
        # beyond MAX_PLOT_RATERS columns the reference raters with the most ratings are kept.
        rated = matrix.rater_counts.sum(axis=1) if matrix.cells is not None else (~np.isnan(matrix.values)).sum(axis=0)
        keep = np.argsort(-rated, kind="stable")
        keep = np.sort(keep[: max(MAX_PLOT_RATERS - len(block.judges), 2)])
        reference = matrix.columns(keep)
        raters = [block.raters[i] for i in keep]
        if len(raters) < len(block.raters):
            data["note"] = f"figures show the {len(raters)} reference raters with the most ratings"
        everyone = np.column_stack([reference, *[j.values for j in block.judges]]) if block.judges else reference
        labels = [r.label for r in raters] + [j.info.label for j in block.judges]
        data["raters"] = labels
        data["kinds"] = [r.kind for r in raters] + [j.info.kind for j in block.judges]
        data["counts"] = [[int(np.sum(everyone[:, c] == code)) for code in codes] for c in range(everyone.shape[1])]
        data["spearman"] = [[finite(x) for x in row] for row in spearman_matrix(everyone)] if labels else []
        truth = ordinal_consensus(block.reference, codes)
    elif family == Family.PAIRWISE:
        truth = majority_labels(block.reference, [0.0, 0.5, 1.0])
        data["rankings"] = {
            "reference": block.extras["rankings"].get("reference"),
            **{str(j.info.id): block.extras["rankings"].get(j.info.id) for j in block.judges},
        }
        data["features"] = {str(k): v for k, v in feature_tallies(study, judges).items()}
    else:
        truth = majority_labels(block.reference, codes)
    if family != Family.CHOICE:
        data["confusion"] = {str(j.info.id): _confusion(truth, j, codes) for j in block.judges}
    return data


def _confusion(truth: np.ndarray, judge: JudgeColumn, codes: np.ndarray) -> list[list[int]]:
    """Reference (rows) × judge (columns, last column = missing) counts of the answers the judge is scored on.

    Those are :func:`counted_answers`: one per item with a reference label, and for a pairwise judge
    asked in both orders one per item and order, so the table's total is the agreement figures' ``n``.
    """
    table = np.zeros((codes.size, codes.size + 1), dtype=int)
    for t, p in zip(*counted_answers(truth, judge.values, judge.swapped), strict=True):
        row = int(np.flatnonzero(codes == t)[0])
        col = codes.size if np.isnan(p) else int(np.flatnonzero(codes == p)[0])
        table[row, col] += 1
    return table.tolist()


def _breakdown(block: Block, family: str, codes: np.ndarray, params: AlignmentParams, metadata: dict, step, warnings):
    """The report's tables again for each value of one metadata key (a list value: each of its values)."""
    values = [(metadata.get(pk) or {}).get(params.breakdown) for pk in block.item_ids]
    groups = sorted(metadata_groups(values).items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if len(groups) > MAX_GROUPS:
        warnings.append(
            f"the breakdown by {params.breakdown!r} has {len(groups)} groups; the {MAX_GROUPS} largest are shown"
        )
        groups = groups[:MAX_GROUPS]
    resamples = min(params.n_resamples, BREAKDOWN_RESAMPLES)
    out = []
    for n, (label, rows) in enumerate(groups):
        step(0.55 + 0.35 * n / max(len(groups), 1), f"breakdown group {label}")
        sub = block.subset(np.asarray(rows, dtype=int))
        out.append(
            {
                "value": label,
                "n_items": len(rows),
                "section": section(sub, family, codes, n_resamples=resamples, seed=params.seed),
            }
        )
    return {"key": params.breakdown, "groups": out, "resamples": resamples}


def _reference_block(study: Study, reference: StudyMatrix, judges: list[RaterInfo], golds: dict) -> Block:
    """The judges' answers and gold beside a human reference, on the items the reference rated."""
    item_ids = reference.item_ids if reference.cells is None else reference.judged_ids
    return Block(
        reference=reference.packed(),
        raters=reference.raters,
        judges=_judge_columns(study, judges, item_ids),
        gold=_gold_codes(study, item_ids, golds),
        item_ids=item_ids,
        pairs=None if reference.cells is None else reference.values,
        pair_rows=reference.row_positions,
    )


def _rater_breakdown(
    study: Study,
    params: AlignmentParams,
    reference: StudyMatrix,
    judges: list[RaterInfo],
    golds: dict,
    overall: Block,
    family: str,
    codes: np.ndarray,
    step,
    warnings: list[str],
) -> dict[str, Any]:
    """The report's tables again for the reference's raters of each answer to one questionnaire question."""
    try:
        groups = rater_groups(study=study, key=params.rater_breakdown, within={r.id for r in reference.raters})
    except ValueError as exc:
        warnings.append(str(exc))
        return {"key": params.rater_breakdown, "groups": [], "resamples": 0, "small_below": small_group_raters()}
    if len(groups) > MAX_GROUPS:
        warnings.append(f"the rater breakdown has {len(groups)} groups; the first {MAX_GROUPS} are shown")
        groups = groups[:MAX_GROUPS]
    group = "humans" if params.reference == "selected" else params.reference
    resamples = min(params.n_resamples, BREAKDOWN_RESAMPLES)
    small = small_group_raters()
    out = []
    for n, part in enumerate(groups):
        step(0.55 + 0.35 * n / max(len(groups), 1), f"rater group {part.label}")
        matrix = study_rating_matrix(
            study=study, group=group, rater_ids=part.rater_ids, max_cells=settings.FUNNYBONE_DENSE_MATRIX_CELLS
        )
        block = _reference_block(study, matrix, judges, golds)
        block.extras.update({k: v for k, v in overall.extras.items() if k != "rankings"})
        out.append(
            {
                "value": part.value,
                "label": part.label,
                "n_raters": len(part.rater_ids),
                "n_items": len(block.item_ids),
                "small": len(part.rater_ids) < small,
                "section": section(block, family, codes, n_resamples=resamples, seed=params.seed),
            }
        )
    return {"key": params.rater_breakdown, "groups": out, "resamples": resamples, "small_below": small}


def compute_alignment(*, study: Study, params: AlignmentParams, progress: Progress | None = None) -> dict[str, Any]:
    """The full alignment report of a study as plain JSON values (see the package docstring).

    A pairwise study judged only by models (a tournament's matches) has no
    human reference: its report carries the judges' rankings and feature
    tallies, with no agreement tables, and says so in ``warnings``.
    """
    step = progress or (lambda fraction, message: None)
    family = task_family(study)
    step(0.05, "reading the human reference")
    reference = _reference_matrix(study, params)
    codes = reference.scale.codes
    chosen = set(params.judge_ids)
    judges = [j for j in study_judges(study=study) if not chosen or j.id in chosen]
    warnings = list(reference.warnings)
    if not judges:
        raise AlignmentUnavailable("this study has no LLM or baseline judge to compare")
    has_reference = bool(reference.raters)
    if not has_reference:
        if family != Family.PAIRWISE:
            raise AlignmentUnavailable("the chosen human reference has no judgments in this study")
        warnings.append(
            "the chosen human reference has no judgments here: only the judges' own rankings and features are shown"
        )
    step(0.2, "reading the judges' answers")
    item_ids = reference.item_ids if reference.cells is None else reference.judged_ids
    # The reference's items are the study's regular items; both are read whole rather than by a list of ids.
    regular = Item.objects.filter(study=study, is_attention_check=False)
    metadata = dict(regular.values_list("id", "metadata"))
    golds = dict(regular.filter(gold__isnull=False).values_list("id", "gold"))
    block = _reference_block(study, reference, judges, golds)
    if family == Family.PAIRWISE:
        step(0.35, "fitting Bradley–Terry rankings")
        block.extras["rankings"] = _rankings(study, params, judges)
        block.extras["consistency"] = study_judge_comparisons(study=study, rater_ids=[j.id for j in judges])
    overall = breakdown = by_raters = None
    ranking: list[dict[str, Any]] = []
    unranked: list[dict[str, Any]] = []
    if has_reference:
        step(0.5, "comparing judges with the reference")
        overall = section(block, family, codes, n_resamples=params.n_resamples, seed=params.seed)
        if params.breakdown:
            breakdown = _breakdown(block, family, codes, params, metadata, step, warnings)
        if params.rater_breakdown:
            by_raters = _rater_breakdown(study, params, reference, judges, golds, block, family, codes, step, warnings)
        columns = {column.info.id: column for column in block.judges}
        scored = []
        for row in overall["judges"]:
            reason = unrankable_reason(columns[row["id"]])
            if reason is None:
                scored.append((primary_metric(family, row), row))
            else:
                unranked.append({"id": row["id"], "label": row["label"], "reason": reason})
        scored.sort(key=lambda pair: -pair[0] if pair[0] is not None else math.inf)
        ranking = [{"id": r["id"], "label": r["label"], "primary": value} for value, r in scored]
    step(0.92, "preparing figures")
    plots = _plot_data(family, block, codes, reference.scale.names, study, judges, reference)
    if not has_reference:
        plots.pop("confusion", None)
    step(1.0, "done")
    return {
        "study": study.slug,
        "task_type": study.task_type,
        "family": family,
        "params": params.as_dict(),
        "reference": {
            "name": params.reference,
            "label": REFERENCES[params.reference],
            "raters": [{"id": r.id, "label": r.label, "kind": r.kind} for r in reference.raters],
            "n_items": len(item_ids),
        },
        "judges": [{"id": j.id, "label": j.label, "kind": j.kind} for j in judges],
        "ranking": ranking,
        "unranked": unranked,
        "overall": overall,
        "breakdown": breakdown,
        "rater_breakdown": by_raters,
        "plots": plots,
        "warnings": warnings,
    }


def metadata_keys(*, study: Study, limit: int = 2000) -> list[str]:
    """Metadata keys found on the study's items (from the first ``limit`` items), for the breakdown picker."""
    keys: set[str] = set()
    for meta in Item.objects.filter(study=study, is_attention_check=False).values_list("metadata", flat=True)[:limit]:
        if isinstance(meta, dict):
            keys.update(str(k) for k in meta)
    return sorted(keys)


def count_judgments(*, study: Study) -> int:
    return Judgment.objects.filter(counted_raters(), study=study).count()
