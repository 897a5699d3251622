"""The Chumor 2.0 reports (PROTOCOLS.md §4): explanation labels and explanation preference.

*Explanation classification.* The gold label of an item is the majority of
its human annotators (attention-check failures excluded). Every judge — LLM or
baseline — is scored against it with accuracy, MCC, FPR and FNR, overall, by
explanation source and by joke type (an item with two joke types counts in
both groups). A judge's missing, failed or unparseable answer counts as wrong.
The figures come from the alignment computation (``ratings.alignment``), which
already scores binary judges this way.

*Explanation preference.* Each vote names the human explanation, the LLM one,
or a tie. The per-joke majority is "undecided" when no answer has a strict
majority (three annotators who all differ); win rates are shares of jokes.
Raw percentage agreement is the mean share of agreeing annotator pairs.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from django.db.models.fields.json import KT

from annotation.models import Candidate, Item, Judgment, Study

from ..alignment import AlignmentParams, AlignmentUnavailable, compute_alignment
from ..plots import Plot, _empty, _figure, _heatmap, _render, confusion_matrix
from ..selectors import JUDGE_KINDS, NoNumericCoding, study_rating_matrix
from ..stats import (
    binary_scores,
    fleiss_kappa_from_matrix,
    krippendorff_alpha,
    majority_vote,
    percentage_agreement,
)
from .base import Figure, ProtocolReport, Section, Table, register_report

EXPLANATION = "chumor-explanation"
PREFERENCE = "chumor-preference"
HUMAN, LLM, TIE, UNDECIDED = "human", "llm", "tie", "undecided"
SCORE_COLUMNS = ["accuracy", "MCC", "FPR", "FNR"]
MISSING_IS_WRONG = (
    "A judge's missing answer (not judged, failed or unparseable) counts as wrong: it lowers accuracy, "
    "and in MCC, FPR and FNR it counts on the wrong side of the gold label."
)


def _r(value: Any, digits: int = 3) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


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


# -- explanation classification ----------------------------------------------------------------------------


def _score_row(scores: dict[str, Any]) -> list[Any]:
    return [_r(scores.get("accuracy")), _r(scores.get("mcc")), _r(scores.get("fpr")), _r(scores.get("fnr"))]


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
        rows.append([label, int(keep.sum()), _r(s.accuracy), _r(s.mcc), _r(s.fpr), _r(s.fnr)])
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


def _score_heatmap(table: Table, by: str) -> Plot:
    judges = list(dict.fromkeys(r[0] for r in table.rows))
    groups = sorted({r[1] for r in table.rows})
    if not judges or not groups:
        return _empty("No judge answers to break down.")
    values = np.full((len(judges), len(groups)), np.nan)
    for row in table.rows:
        if row[4] is not None:
            values[judges.index(row[0]), groups.index(row[1])] = row[4]
    return _heatmap(
        values,
        judges,
        groups,
        title=f"Accuracy vs the majority label, by {by}",
        vmin=0.0,
        vmax=1.0,
        cmap="viridis",
        fmt=".2f",
        xlabel=by,
        ylabel="judge",
        colorbar="accuracy",
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
        ("Share labelled good by the majority", _r(np.mean(majority[decided])) if decided.any() else None),
    ]
    if values.size and values.shape[1] >= 2:
        report.summary.append(
            ("Krippendorff's α (nominal), annotators", _r(krippendorff_alpha(values, level="nominal")))
        )
        report.summary.append(("Percentage agreement, annotators", _r(percentage_agreement(values).value)))
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
        source_table.rows.append([source, len(labels), good, len(labels) - good, _r(good / len(labels))])
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
                    plot=confusion_matrix(confusion, ["bad", "good"], judge=judge["label"], reference="majority"),
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


# -- explanation preference ---------------------------------------------------------------------------------


def _outcomes(study: Study, item_ids: list[int], values: np.ndarray) -> np.ndarray:
    """Coded votes (1 first candidate, 0 second, 0.5 tie) as 'human' / 'llm' / 'tie' per cell ('' = no vote)."""
    sources: dict[int, list[str]] = {}
    rows = (
        Candidate.objects.filter(item_id__in=item_ids)
        .order_by("item_id", "position", "id")
        .values_list("item_id", "key", "provenance")
    )
    for item_id, key, provenance in rows:
        source = provenance.get("source") if isinstance(provenance, dict) else None
        sources.setdefault(item_id, []).append(str(source or key))
    out = np.full(values.shape, "", dtype=object)
    for i, pk in enumerate(item_ids):
        first, second = (sources.get(pk, []) + ["first", "second"])[:2]
        for j, v in enumerate(values[i]):
            if not math.isnan(v):
                out[i, j] = TIE if v == 0.5 else (first if v == 1.0 else second)
    return out


def _win_plot(rows: list[list[Any]]) -> Plot:
    if not rows or not any(r[1] for r in rows):
        return _empty("No per-joke majority yet.")
    fig = _figure(5, 2.8)
    ax = fig.add_subplot()
    names = [r[0] for r in rows]
    shares = [r[2] or 0.0 for r in rows]
    ax.bar(names, shares, color=["#2753c9", "#c0392b", "#1d7a3a", "#555566"][: len(names)])
    for x, share in enumerate(shares):
        ax.text(x, share + 0.01, f"{share:.0%}", ha="center", va="bottom")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share of jokes")
    ax.set_title("Per-joke majority: which explanation wins")
    return _render(fig)


def _win_rates(outcomes: list[str], order: list[str]) -> list[list[Any]]:
    counts = Counter(outcomes)
    total = len(outcomes)
    return [[name, counts[name], _r(counts[name] / total) if total else None] for name in order]


@register_report(PREFERENCE)
def preference_report(study: Study) -> ProtocolReport:
    report = ProtocolReport(study=study, title=f"Chumor 2.0 explanation preference — {study.name}")
    try:
        matrix = study_rating_matrix(study=study, group="passers")
    except NoNumericCoding as exc:
        report.notes.append(str(exc))
        return report
    report.notes.extend(matrix.warnings)
    values = matrix.values
    n_items = study.items.filter(is_attention_check=False).count()
    votes = _outcomes(study, matrix.item_ids, values)
    majority = majority_vote(values, categories=[0.0, 0.5, 1.0], tie="undecided") if values.size else np.array([])
    per_joke = Table(
        key="per_joke_majority",
        title="Votes and majority per joke",
        columns=["joke", "votes", "human", "llm", "tie", "majority"],
    )
    outcome_names: list[str] = []
    for i, label in enumerate(matrix.item_labels):
        row = [v for v in votes[i] if v]
        counts = Counter(row)
        outcome = UNDECIDED if math.isnan(majority[i]) else counts.most_common(1)[0][0]
        outcome_names.append(outcome)
        per_joke.rows.append([label, len(row), counts[HUMAN], counts[LLM], counts[TIE], outcome])
    order = [HUMAN, LLM, TIE, UNDECIDED]
    wins = Table(
        key="win_rates",
        title="Win rates over jokes",
        columns=["outcome", "jokes", "share"],
        rows=_win_rates(outcome_names, order),
        note="Undecided: no answer has a majority (e.g. the three annotators all chose differently).",
    )
    agreement = Table(key="agreement", title="Agreement among annotators", columns=["measure", "value", "items"])
    if values.size and values.shape[1] >= 2:
        pa = percentage_agreement(values)
        agreement.rows.append(["raw percentage agreement", _r(pa.value), pa.n_items])
        agreement.rows.append(
            ["Krippendorff's α (nominal)", _r(krippendorff_alpha(values, level="nominal")), len(matrix.item_ids)]
        )
        answered = (~np.isnan(values)).sum(axis=1)
        if answered.size and np.all(answered == answered[0]) and answered[0] >= 2:
            agreement.rows.append(
                ["Fleiss' κ", _r(fleiss_kappa_from_matrix(values, [0.0, 0.5, 1.0])), len(matrix.item_ids)]
            )
        else:
            report.notes.append("Fleiss' κ is left out: the jokes do not all have the same number of votes.")
    rates = {r[0]: r[2] for r in wins.rows}
    report.summary = [
        ("Jokes", n_items),
        ("Annotators", len(matrix.raters)),
        ("Votes", matrix.n_judgments),
        ("Human explanation wins", rates.get(HUMAN)),
        ("LLM explanation wins", rates.get(LLM)),
        ("Tie", rates.get(TIE)),
        ("Undecided", rates.get(UNDECIDED)),
        ("Raw percentage agreement", agreement.rows[0][1] if agreement.rows else None),
    ]
    if not matrix.raters:
        report.notes.append("No human votes yet: win rates and agreement need the annotators' choices.")
    elif (short := int(np.sum((~np.isnan(values)).sum(axis=1) < study.quota_per_item))) > 0:
        report.notes.append(f"{short} joke(s) have fewer than {study.quota_per_item} votes.")
    if n_items > len(matrix.item_ids):
        report.notes.append(f"{n_items - len(matrix.item_ids)} joke(s) have no vote yet and are left out.")
    report.sections.append(
        Section(
            title="Which explanation is better",
            text="Each joke's outcome is its annotators' majority: the human explanation, the LLM one, a tie "
            "(equally good), or undecided.",
            tables=[wins, agreement, per_joke],
            figures=[Figure("win-rates", "Win rates", _win_plot(wins.rows))],
        )
    )
    _preference_judges(study, report, matrix.item_ids, outcome_names)
    return report


def _preference_judges(study: Study, report: ProtocolReport, item_ids: list[int], human: list[str]) -> None:
    """Each judge's choices as win rates, and how often they match the human per-joke majority."""
    if not Judgment.objects.filter(study=study, rater__kind__in=JUDGE_KINDS).exists():
        return
    data = study_rating_matrix(study=study, group="judges")
    votes = _outcomes(study, data.item_ids, data.values)
    majority_of = dict(zip(item_ids, human, strict=True))
    table = Table(
        key="judges_preference",
        title="Judges vs human majority",
        columns=["judge", "answers", "human", "llm", "tie", "agreement with majority", "jokes compared"],
        note="Agreement counts the jokes with a decided human majority; a missing answer counts as a disagreement.",
    )
    for c, rater in enumerate(data.raters):
        column = {pk: votes[r, c] for r, pk in enumerate(data.item_ids)}
        counts = Counter(v for v in column.values() if v)
        decided = [pk for pk in item_ids if majority_of[pk] != UNDECIDED]
        agree = sum(1 for pk in decided if column.get(pk, "") == majority_of[pk])
        table.rows.append(
            [
                rater.label,
                sum(counts.values()),
                counts[HUMAN],
                counts[LLM],
                counts[TIE],
                _r(agree / len(decided)) if decided else None,
                len(decided),
            ]
        )
    report.sections.append(Section(title="Judges", tables=[table]))
