"""The OOGIRI-MASTER benchmark report (PROTOCOLS.md §3): crowd and judges scored against the gold.

On each benchmark study: the crowd's majority vote and Dawid–Skene labels
scored against the gold (raters who failed an attention check left out),
Fleiss' κ among the crowd, and each judge's accuracy, where an answer that is
missing, failed or unparseable counts as wrong. The voting report and this one
end with the same table across the five tasks (:func:`across_tasks_section`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Count

from annotation.models import Candidate, Enrollment, Item, Judgment, Rater, Study
from annotation.protocols.base import get_template
from annotation.protocols.oogiri import TASK_TITLES, TASKS, task_of
from annotation.protocols.oogiri_benchmark import sibling_tasks
from annotation.task_types import get_task_type

from .. import plots, stats
from ..selectors import HUMAN_KINDS, JUDGE_KINDS, study_rating_matrix
from .base import Figure, ProtocolReport, Section, Table, register_report


@dataclass
class TaskScores:
    task: str
    study: Study
    items: int
    crowd_raters: int
    crowd_excluded: int
    majority: float | None
    majority_ties: int
    dawid_skene: float | None
    mean_rater: float | None
    fleiss: float | None
    fleiss_items: int
    judges: list[tuple[str, str, float, int, int, int]]  # name, kind, accuracy, correct, answered, trials
    notes: list[str]


def failed_attention_raters(study: Study) -> set[int]:
    """Humans the attention-check policy excludes: flagged on enrollment, or too many failed checks."""
    flagged = set(Enrollment.objects.filter(study=study, excluded=True).values_list("rater_id", flat=True))
    failures = (
        Judgment.objects.filter(study=study, attention_passed=False, rater__kind__in=HUMAN_KINDS)
        .values("rater_id")
        .annotate(n=Count("id"))
        .filter(n__gt=study.attention_check_max_failures)
        .values_list("rater_id", flat=True)
    )
    return flagged | set(failures)


def _answer_codes(study: Study) -> Callable[[Any, int], float | None]:
    """Reads an answer to an item (or its gold) as the task type's number, None when it cannot."""
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys: dict[int, list[str]] = defaultdict(list)
    for item_id, key in (
        Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id").values_list("item_id", "key")
    ):
        keys[item_id].append(key)

    def code(value: Any, item_id: int) -> float | None:
        try:
            return float(task_type.to_number(value, candidate_keys=keys[item_id], config=config))
        except (KeyError, ValueError, TypeError):
            return None

    return code


def _gold_codes(study: Study) -> dict[int, float]:
    code = _answer_codes(study)
    golds = Item.objects.filter(study=study, is_attention_check=False, gold__isnull=False).values_list("pk", "gold")
    return {pk: number for pk, gold in golds if (number := code(gold, pk)) is not None}


def _judge_scores(study: Study, gold: dict[int, float]) -> list[tuple[str, str, float, int, int, int]]:
    """Per judge: accuracy averaged over its trials; no answer, a failed or an unparseable one is wrong."""
    code = _answer_codes(study)
    rows = (
        Judgment.objects.filter(study=study, rater__kind__in=JUDGE_KINDS, item_id__in=list(gold))
        .values_list("rater_id", "assignment__trial", "item_id", "status", "value")
        .order_by("id")
    )
    answers: dict[int, dict[int, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for rater_id, trial, item_id, status, value in rows:
        ok = status == Judgment.Status.OK and value is not None
        answers[rater_id][trial].setdefault(item_id, code(value, item_id) if ok else None)
    scores = []
    raters = Rater.objects.filter(pk__in=list(answers)).order_by("kind", "name", "pk")
    for rater in raters:
        per_trial, correct_all, answered_all = [], 0, 0
        for given in answers[rater.pk].values():
            correct = sum(1 for item_id, number in gold.items() if given.get(item_id) == number)
            per_trial.append(correct / len(gold))
            correct_all += correct
            answered_all += sum(1 for number in given.values() if number is not None)
        scores.append(
            (
                rater.name or rater.external_id or f"judge {rater.pk}",
                rater.kind,
                float(np.mean(per_trial)),
                correct_all,
                answered_all,
                len(per_trial),
            )
        )
    return scores


def task_scores(study: Study) -> TaskScores:
    task = task_of(study)
    notes: list[str] = []
    gold = _gold_codes(study)
    n_items = study.items.filter(is_attention_check=False).count()
    if n_items and len(gold) < n_items:
        notes.append(f"{n_items - len(gold)} item(s) have no gold answer and are not scored.")
    humans = set(
        Judgment.objects.filter(study=study, rater__kind__in=HUMAN_KINDS).values_list("rater_id", flat=True).distinct()
    )
    excluded = failed_attention_raters(study) & humans
    kept = humans - excluded
    majority = ds = mean_rater = fleiss = None
    ties = fleiss_items = 0
    if kept and gold:
        matrix = study_rating_matrix(study=study, group="humans", rater_ids=kept)
        rows = [i for i, pk in enumerate(matrix.item_ids) if pk in gold]
        values = matrix.values[rows]
        truth = np.array([gold[matrix.item_ids[i]] for i in rows])
        cats = matrix.scale.codes
        unscored = len(gold) - len(rows)
        if unscored:
            notes.append(f"{unscored} item(s) have no crowd answer yet; they count as wrong for the crowd.")
        full_truth = np.array(list(gold.values()))
        if values.size:
            vote = stats.majority_vote(values, categories=cats, tie="undecided")
            ties = int(np.isnan(vote).sum() - (np.isnan(values).all(axis=1)).sum())
            majority = float(np.sum(vote == truth)) / len(full_truth)
            fitted = stats.dawid_skene(values, categories=cats)
            notes.extend(fitted.warnings)  # constant raters left out, an unidentified fit, no convergence
            ds = float(np.sum(fitted.labels == truth)) / len(full_truth)
            per_rater = [
                float(np.mean(col[~np.isnan(col)] == truth[~np.isnan(col)]))
                for col in values.T
                if (~np.isnan(col)).any()
            ]
            mean_rater = float(np.mean(per_rater)) if per_rater else None
            counts = (~np.isnan(values)).sum(axis=1)
            common = int(np.bincount(counts).argmax()) if counts.size else 0
            same = counts == common
            if common >= 2 and same.any():
                fleiss = stats.fleiss_kappa_from_matrix(values[same], cats)
                fleiss_items = int(same.sum())
                if fleiss_items < len(rows):
                    notes.append(
                        f"Fleiss' κ uses the {fleiss_items} item(s) with {common} crowd answers each; "
                        f"{len(rows) - fleiss_items} item(s) with another number of answers are left out."
                    )
            else:
                notes.append("Fleiss' κ needs at least two crowd answers per item.")
    elif not humans:
        notes.append("No crowd answers yet: open the study or import a file with rater and answer columns.")
    elif not kept:
        notes.append("Every crowd rater failed an attention check: there is no human baseline.")
    if excluded:
        notes.append(f"{len(excluded)} crowd rater(s) failed an attention check and are left out of every figure.")
    judges = _judge_scores(study, gold) if gold else []
    if not judges:
        notes.append("No judge has answered yet: start a run on the study's Runs page or with `manage.py judge`.")
    return TaskScores(
        task=task,
        study=study,
        items=len(gold),
        crowd_raters=len(kept),
        crowd_excluded=len(excluded),
        majority=majority,
        majority_ties=ties,
        dawid_skene=ds,
        mean_rater=mean_rater,
        fleiss=fleiss,
        fleiss_items=fleiss_items,
        judges=judges,
        notes=notes,
    )


@register_report(*TASKS.values())
def benchmark_report(study: Study) -> ProtocolReport:
    scores = task_scores(study)
    preset = get_template(study.protocol).analyses
    report = ProtocolReport(study=study, title=f"OOGIRI-MASTER benchmark: {study.name}")
    report.summary = [
        ("Items scored", scores.items),
        ("Chance accuracy", preset["chance"]),
        ("Crowd raters kept", scores.crowd_raters),
        ("Crowd raters left out (attention checks)", scores.crowd_excluded),
        ("Human accuracy, majority vote", scores.majority),
        ("Human accuracy, Dawid–Skene", scores.dawid_skene),
        ("Fleiss' κ among the crowd", scores.fleiss),
        *((f"Accuracy: {name}", acc) for name, _kind, acc, *_ in scores.judges),
    ]
    crowd = Table(
        key="crowd_baseline",
        title="Crowd baseline",
        columns=["measure", "value"],
        rows=[
            ["crowd raters kept", scores.crowd_raters],
            ["crowd raters left out (failed an attention check)", scores.crowd_excluded],
            ["accuracy of the majority vote", scores.majority],
            ["items where the vote tied (counted wrong)", scores.majority_ties],
            ["accuracy of the Dawid–Skene labels", scores.dawid_skene],
            ["mean accuracy of one crowd rater", scores.mean_rater],
            ["Fleiss' κ among the crowd", scores.fleiss],
            ["items in Fleiss' κ", scores.fleiss_items],
        ],
        note="Accuracy is the share of gold items answered correctly; an item with no crowd answer counts as wrong.",
    )
    accuracy = Table(
        key="accuracy",
        title="Accuracy per rater",
        columns=["rater", "kind", "accuracy", "correct", "answered", "trials"],
        rows=[
            ["crowd, majority vote", "crowd", scores.majority, None, None, None],
            ["crowd, Dawid–Skene", "crowd", scores.dawid_skene, None, None, None],
            *(
                [name, kind, acc, correct, answered, trials]
                for name, kind, acc, correct, answered, trials in scores.judges
            ),
        ],
        note="A judge's accuracy is averaged over its trials; a missing, failed or unparseable answer counts as wrong.",
    )
    report.sections = [
        Section(
            "Human baseline and judges",
            "Raters who missed an attention check are left out before the vote. Dawid–Skene weighs "
            "each rater by how reliable the model finds them, so it recovers more when some raters are noisy.",
            tables=[crowd, accuracy],
            figures=[Figure("accuracy", "Accuracy per rater", _accuracy_plot(scores, preset["chance"]))],
        ),
        across_tasks_section(sibling_tasks(study=study)),
    ]
    report.notes = scores.notes
    return report


def across_tasks_section(tasks: dict[str, Study]) -> Section:
    table = Table(
        key="across_tasks",
        title="Summary across the benchmark tasks",
        columns=[
            "task",
            "study",
            "items",
            "crowd kept",
            "majority vote",
            "Dawid–Skene",
            "Fleiss' κ",
            "rater",
            "accuracy",
        ],
        note="One row per judge and task; the human columns repeat on each row of a task.",
    )
    for task, study in tasks.items():
        s = task_scores(study)
        head = [TASK_TITLES[task], study.slug, s.items, s.crowd_raters, s.majority, s.dawid_skene, s.fleiss]
        if not s.judges:
            table.rows.append([*head, "", None])
        for name, _kind, acc, *_ in s.judges:
            table.rows.append([*head, name, acc])
    text = "" if tasks else "No benchmark studies have been built from this voting study yet."
    return Section("Across the tasks", text, tables=[table])


def _accuracy_plot(scores: TaskScores, chance: float) -> plots.Plot:
    named = [("crowd, majority vote", scores.majority), ("crowd, Dawid–Skene", scores.dawid_skene)]
    named += [(name, acc) for name, _kind, acc, *_ in scores.judges]
    named = [(n, v) for n, v in named if v is not None]
    return plots.bar_chart(
        [n for n, _ in named],
        [v for _, v in named],
        title="Accuracy (dotted: chance)",
        xlabel="accuracy",
        reference=chance,
        empty="No accuracy to show yet.",
    )
