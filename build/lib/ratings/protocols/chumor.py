"""The Chumor 2.0 explanation-label report (PROTOCOLS.md §4).

The gold label of an item is the majority of its human annotators
(attention-check failures excluded). Every judge — LLM or baseline — is scored
against it with accuracy, MCC, FPR and FNR, overall, by explanation source and
by joke type (an item with two joke types counts in both groups). A judge's
missing, failed or unparseable answer counts as wrong. The figures come from
the alignment computation (``ratings.alignment``), which already scores binary
judges this way. The explanation-preference report is in
:mod:`.chumor_preference`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models.fields.json import KT

from annotation.models import Item, Judgment, Study

from .. import plots
from ..alignment import AlignmentParams, AlignmentUnavailable, compute_alignment
from ..selectors import study_rating_matrix
from ..stats import binary_scores, krippendorff_alpha, majority_vote, percentage_agreement
from .base import Figure, ProtocolReport, Section, Table, register_report, rounded

EXPLANATION = "chumor-explanation"
SCORE_COLUMNS = ["accuracy", "MCC", "FPR", "FNR"]
MISSING_IS_WRONG = (
    "A judge's missing answer (not judged, failed or unparseable) counts as wrong: it lowers accuracy, "
    "and in MCC, FPR and FNR it counts on the wrong side of the gold label."
)


def _prompt_names(study: Study, judge_ids: list[int]) -> dict[int, str]:
    """Which prompt template each judge's answers came from (as judging records it in the provenance)."""
    rows = (
        Judgment.objects.filter(study=study, rater_id__in=judge_ids)
        .annotate(template=KT("provenance__template__name"))
        .values_list("rater_id", "template")
        .distinct()
    )
    names: dict[int, set[str]] = {}
    for rater_id, name in rows:
        if name:
            names.setdefault(rater_id, set()).add(name)
    return {pk: ", ".join(sorted(found)) for pk, found in names.items()}


def _prompt_style(name: str, kind: str) -> str:
    if kind == "baseline":
        return "baseline (no prompt)"
    if not name:
        return "unknown"
    return "step by step" if "step" in name else "direct"


def _score_row(scores: dict[str, Any]) -> list[Any]:
    return [
        rounded(scores.get("accuracy")),
        rounded(scores.get("mcc")),
        rounded(scores.get("fpr")),
        rounded(scores.get("fnr")),
    ]


def _human_rows(matrix: np.ndarray, labels: list[str]) -> list[list[Any]]:
    """Each annotator against the majority of the *other* annotators (items where those others agree on one)."""
    rows = []
    for c, label in enumerate(labels):
        others = np.delete(matrix, c, axis=1)
        gold = majority_vote(others, categories=[0.0, 1.0], tie="undecided") if others.shape[1] else None
        if gold is None:
            continue
        mine = matrix[:, c]
        keep = ~np.isnan(gold) & ~np.isnan(mine)
        if keep.sum() == 0:
            continue
        s = binary_scores(gold[keep], mine[keep], positive=1.0, negative=0.0)
        rows.append([label, int(keep.sum()), rounded(s.accuracy), rounded(s.mcc), rounded(s.fpr), rounded(s.fnr)])
    return rows


def _group_table(key: str, title: str, by: str, result: dict[str, Any] | None, judges: list[dict]) -> Table:
    table = Table(key=key, title=title, columns=["judge", by, "items", "correct", *SCORE_COLUMNS, "missing"])
    if not result or not result.get("breakdown"):
        return table
    for judge in judges:
        for group in result["breakdown"]["groups"]:
            row = next((j for j in group["section"]["judges"] if j["id"] == judge["id"]), None)
            if row is None:
                continue
            scores = row["vs_majority"]
            table.rows.append(
                [
                    judge["label"],
                    group["value"],
                    scores["n"],
                    scores["correct"],
                    *_score_row(scores),
                    scores["n_missing"],
                ]
            )
    return table


def _score_heatmap(table: Table, by: str) -> plots.Plot:
    judges = list(dict.fromkeys(r[0] for r in table.rows))
    groups = sorted({r[1] for r in table.rows})
    values: list[list[float | None]] = [[None] * len(groups) for _ in judges]
    for row in table.rows:
        values[judges.index(row[0])][groups.index(row[1])] = row[4]
    return plots.heatmap(
        judges,
        groups,
        values,
        title=f"Accuracy vs the majority label, by {by}",
        xlabel=by,
        ylabel="judge",
        colorbar="accuracy",
        empty="No judge answers to break down.",
    )


@register_report(EXPLANATION)
def explanation_report(study: Study) -> ProtocolReport:
    report = ProtocolReport(study=study, title=f"Chumor 2.0 explanation labels — {study.name}")
    matrix = study_rating_matrix(study=study, group="passers")
    report.notes.extend(matrix.warnings)
    values = matrix.values
    n_items = study.items.filter(is_attention_check=False).count()
    majority = majority_vote(values, categories=[0.0, 1.0], tie="undecided") if values.size else np.array([])
    decided = ~np.isnan(majority)
    answered = (~np.isnan(values)).sum(axis=1) if values.size else np.array([], dtype=int)
    report.summary = [
        ("Items (joke + explanation)", n_items),
        ("Human annotators", len(matrix.raters)),
        ("Items with a majority label", int(decided.sum())),
        ("Share labelled good by the majority", rounded(np.mean(majority[decided])) if decided.any() else None),
    ]
    if values.size and values.shape[1] >= 2:
        report.summary.append(
            ("Krippendorff's α (nominal), annotators", rounded(krippendorff_alpha(values, level="nominal")))
        )
        report.summary.append(("Percentage agreement, annotators", rounded(percentage_agreement(values).value)))
    quota = study.quota_per_item
    if not matrix.raters:
        report.notes.append("No human labels yet: there is no majority label to score judges against.")
    else:
        short = int(np.sum(answered < quota))
        if short:
            report.notes.append(f"{short} item(s) have fewer than {quota} human labels; their majority is of fewer.")
        ties = int(np.sum(~decided & (answered > 0)))
        if ties:
            report.notes.append(f"{ties} item(s) have tied human labels (undecided) and are left out of the scores.")
        unlabelled = n_items - len(matrix.item_ids)
        if unlabelled:
            report.notes.append(f"{unlabelled} item(s) have no human label yet and are left out.")

    metadata = dict(Item.objects.filter(pk__in=matrix.item_ids).values_list("id", "metadata"))
    label_table = Table(
        key="majority_labels",
        title="Majority label per item",
        columns=["item", "source", "joke types", "good", "bad", "majority"],
    )
    names = {1.0: "good", 0.0: "bad"}
    for i, (pk, label) in enumerate(zip(matrix.item_ids, matrix.item_labels, strict=True)):
        meta = metadata.get(pk) or {}
        row = values[i]
        label_table.rows.append(
            [
                label,
                meta.get("source", ""),
                "; ".join(meta.get("joke_types") or []),
                int(np.sum(row == 1.0)),
                int(np.sum(row == 0.0)),
                names.get(float(majority[i]), "undecided") if decided[i] else "undecided",
            ]
        )
    source_table = Table(
        key="gold_by_source",
        title="Majority labels by source",
        columns=["source", "items", "good", "bad", "share good"],
    )
    by_source: dict[str, list[float]] = {}
    for i, pk in enumerate(matrix.item_ids):
        if decided[i]:
            by_source.setdefault(str((metadata.get(pk) or {}).get("source", "(not set)")), []).append(majority[i])
    for source, labels in sorted(by_source.items()):
        good = int(sum(labels))
        source_table.rows.append([source, len(labels), good, len(labels) - good, rounded(good / len(labels))])
    humans = Table(
        key="annotators_vs_majority",
        title="Annotators vs others' majority",
        columns=["annotator", "items", *SCORE_COLUMNS],
        rows=_human_rows(values, [r.label for r in matrix.raters]) if values.size else [],
        note="The human ceiling: an annotator's label scored against the others' majority (ties left out).",
    )
    report.sections.append(
        Section(
            title="Human labels",
            text="The gold label of an item is the majority of its annotators: good = fully explains the joke.",
            tables=[label_table, source_table, humans],
        )
    )
    _judge_sections(study, report)
    return report


def _judge_sections(study: Study, report: ProtocolReport) -> None:
    results: dict[str, dict[str, Any] | None] = {}
    reason = "the study has no human majority label to compare with"
    for key in ("source", "joke_types"):
        try:
            results[key] = compute_alignment(
                study=study, params=AlignmentParams(reference="passers", breakdown=key, n_resamples=200)
            )
        except AlignmentUnavailable as exc:
            results[key] = None
            reason = str(exc)
    first = results["source"]
    if first is None or first["overall"] is None:
        report.notes.append(f"No judge scores: {reason}.")
        report.sections.append(Section(title="Judges against the majority label", text=f"Nothing to show: {reason}."))
        return
    report.notes.append(MISSING_IS_WRONG)
    judges = first["judges"]
    prompts = _prompt_names(study, [j["id"] for j in judges])
    overall = Table(
        key="judges_overall",
        title="Judges vs majority, all items",
        columns=["judge", "kind", "prompt", "items", "correct", *SCORE_COLUMNS, "missing", "failed", "unparseable"],
        note=MISSING_IS_WRONG,
    )
    figures: list[Figure] = []
    for judge in judges:
        row = next(r for r in first["overall"]["judges"] if r["id"] == judge["id"])
        scores = row["vs_majority"]
        prompt = prompts.get(judge["id"], "")
        overall.rows.append(
            [
                judge["label"],
                judge["kind"],
                f"{_prompt_style(prompt, judge['kind'])}{f' ({prompt})' if prompt else ''}",
                scores["n"],
                scores["correct"],
                *_score_row(scores),
                scores["n_missing"],
                scores["failed"],
                scores["unparseable"],
            ]
        )
        if prompt and judge["kind"] != "baseline" and "explanation-quality" not in prompt:
            report.notes.append(
                f"Judge {judge['label']!r} answered with the prompt {prompt!r}, not one of the explanation-quality "
                "prompts (direct or step by step); set its binary template to compare like with like."
            )
        confusion = first["plots"].get("confusion", {}).get(str(judge["id"]))
        if confusion:
            figures.append(
                Figure(
                    key=f"confusion-{judge['id']}",
                    title=f"Majority label vs {judge['label']}",
                    plot=plots.confusion_matrix(confusion, ["bad", "good"], judge=judge["label"], reference="majority"),
                )
            )
    by_source = _group_table("judges_by_source", "Judges by explanation source", "source", results["source"], judges)
    by_type = _group_table("judges_by_joke_type", "Judges by joke type", "joke type", results["joke_types"], judges)
    by_type.note = "An item with several joke types counts in each of their rows."
    best = max(overall.rows, key=lambda r: -1 if r[5] is None else r[5])
    report.summary.append(("Judges", len(judges)))
    report.summary.append(("Best judge by accuracy", best[0]))
    report.summary.append(("Best judge's accuracy", best[5]))
    report.summary.append(("Best judge's MCC", best[6]))
    report.sections.append(
        Section(
            title="Judges against the majority label",
            text="Accuracy, Matthews correlation, false-positive rate (bad explanations called good) and "
            "false-negative rate (good explanations called bad), with 'good' as the positive label.",
            tables=[overall, by_source, by_type],
            figures=[
                Figure("accuracy-by-joke-type", "Accuracy by joke type", _score_heatmap(by_type, "joke type")),
                Figure("accuracy-by-source", "Accuracy by explanation source", _score_heatmap(by_source, "source")),
                *figures,
            ],
        )
    )
