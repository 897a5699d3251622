"""SemEval-2020 Task 7's report: mean grades, Task 1 (predict the grade) and Task 2 (funnier of two).

The gold grade of an edited headline is the mean of the human grades it got
(raters excluded by the attention-check policy left out). A judge's
prediction is its 0–3 answer, or the mean of its answers when it judged the
headline more than once (trials). Task 1 scores predictions by RMSE, RMSE on
the funniest and least funny X% and MAE per grade bin, against the baseline
that predicts the mean grade of all headlines. Task 2 pairs every two edits of
the same original headline; pairs whose mean grades are equal are skipped, a
judge picks the edit it graded higher (equal predictions count as wrong), and
the baseline always picks the first edit listed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from annotation.models import Rater, Study
from annotation.protocols.base import template_of
from annotation.protocols.semeval import ANALYSES, EDITING, GRADING

from .. import plots
from ..selectors import analysable_judgments
from ..stats import funnier_of_two, mae_by_grade_bin, rmse, rmse_by_tail
from .base import Figure, ProtocolReport, Section, Table, register_report

MEAN_BASELINE = "Mean baseline"
FIRST_EDIT_BASELINE = "First-edit baseline"


@dataclass
class Headline:
    """One edited headline of the grading study with its human grades."""

    id: int
    external_id: str
    original: str
    edited: str
    group: str
    grades: list[int] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(np.mean(self.grades)) if self.grades else float("nan")


@dataclass
class Judge:
    name: str
    kind: str
    answers: dict[int, list[float]]  # item id -> the ratings of every trial

    def prediction(self, item_id: int) -> float:
        got = self.answers.get(item_id)
        return float(np.mean(got)) if got else float("nan")

    @property
    def trials(self) -> int:
        return max((len(v) for v in self.answers.values()), default=0)


def _headlines(study: Study) -> list[Headline]:
    items = study.items.filter(is_attention_check=False).order_by("position", "pk")
    headlines = {
        pk: Headline(
            id=pk,
            external_id=external_id,
            original=prompt,
            edited=text,
            group=str((metadata or {}).get("headline_id") or prompt),
        )
        for pk, external_id, prompt, text, metadata in items.values_list(
            "pk", "external_id", "prompt", "text", "metadata"
        )
    }
    for item_id, value in analysable_judgments(study=study, group="passers").values_list("item_id", "value"):
        if item_id in headlines and isinstance(value, dict) and "rating" in value:
            headlines[item_id].grades.append(int(value["rating"]))
    return list(headlines.values())


def _judges(study: Study) -> list[Judge]:
    answers: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = analysable_judgments(study=study, group="judges").order_by("rater_id", "item_id", "pk")
    for rater_id, item_id, value in rows.values_list("rater_id", "item_id", "value"):
        if isinstance(value, dict) and "rating" in value:
            answers[rater_id][item_id].append(float(value["rating"]))
    raters = Rater.objects.in_bulk(list(answers))
    judges = [
        Judge(name=raters[pk].name or f"judge {pk}", kind=raters[pk].get_kind_display(), answers=dict(answers[pk]))
        for pk in sorted(answers)
    ]
    return sorted(judges, key=lambda j: j.name)


# -- Task 1 -------------------------------------------------------------------------------------


@dataclass
class Predictor:
    name: str
    kind: str
    trials: int | str
    gold: np.ndarray
    predicted: np.ndarray
    #: The mean baseline's prediction (the mean grade of all graded headlines), to score it on these headlines.
    baseline: float


def _predictors(graded: list[Headline], judges: list[Judge]) -> tuple[list[Predictor], list[str]]:
    notes = []
    gold = np.array([h.mean for h in graded])
    mean = float(gold.mean())
    predictors = [Predictor(MEAN_BASELINE, "baseline (computed)", "—", gold, np.full(gold.size, mean), mean)]
    for judge in judges:
        predicted = np.array([judge.prediction(h.id) for h in graded])
        covered = ~np.isnan(predicted)
        if not covered.any():
            notes.append(f"{judge.name} answered none of the graded headlines; it is left out of Task 1 and 2.")
            continue
        if not covered.all():
            notes.append(
                f"{judge.name} answered {int(covered.sum())} of the {gold.size} graded headlines; "
                "its Task 1 scores are over those only."
            )
        predictors.append(Predictor(judge.name, judge.kind, judge.trials, gold[covered], predicted[covered], mean))
    return predictors, notes


def _task1_tables(predictors: list[Predictor], percents: list[int], width: float) -> list[Table]:
    scores = Table(
        key="task1_rmse",
        title="Task 1 RMSE",
        columns=[
            "judge",
            "kind",
            "trials",
            "headlines",
            "RMSE",
            "mean baseline RMSE on these headlines",
            "beats the mean baseline",
        ],
        note=(
            "A judge's prediction is its 0-3 answer (the mean over trials when it answered more than once). "
            "The mean baseline predicts the mean grade of all graded headlines for every one of them. A judge "
            "that answered only some headlines is compared with the baseline's RMSE on those same headlines."
        ),
    )
    for p in predictors:
        value = rmse(p.gold, p.predicted)
        base = rmse(p.gold, np.full(p.gold.size, p.baseline))
        beats = "—" if p.name == MEAN_BASELINE else ("yes" if value < base else "no")
        scores.rows.append([p.name, p.kind, p.trials, int(p.gold.size), value, base, beats])
    tails = Table(
        key="task1_tails",
        title="Task 1 RMSE on the funniest and least funny X%",
        columns=["judge", "X%", "headlines in each tail", "RMSE top X%", "RMSE bottom X%"],
        note=(
            "Headlines are ranked by their mean grade; each tail holds round(X% of the headlines), at least one. "
            "Headlines tied at a tail's edge grade share its remaining places equally, so row order never matters."
        ),
    )
    for p in predictors:
        for percent in percents:
            tail = rmse_by_tail(p.gold, p.predicted, percent=percent)
            tails.rows.append([p.name, percent, tail.n, tail.top, tail.bottom])
    bins = Table(
        key="task1_mae_bins",
        title="Task 1 MAE per grade bin",
        columns=["mean grade bin", "headlines", *[f"MAE {p.name}" for p in predictors]],
        note=(
            f"Bins of width {width:g} over the mean grade, half-open [low, high); the last one includes 3. "
            "A bin with no headline shows no error."
        ),
    )
    per_bin = [mae_by_grade_bin(p.gold, p.predicted, width=width) for p in predictors]
    for b, first in enumerate(per_bin[0]):
        label = f"{first.low:.1f}–{first.high:.1f}"
        bins.rows.append([label, first.n, *[None if np.isnan(errs[b].mae) else errs[b].mae for errs in per_bin]])
    return [scores, tails, bins]


# -- Task 2 -------------------------------------------------------------------------------------


def _pairs(graded: list[Headline]) -> list[tuple[Headline, Headline]]:
    groups: dict[str, list[Headline]] = defaultdict(list)
    for h in graded:
        groups[h.group].append(h)
    return [pair for members in groups.values() for pair in combinations(members, 2)]


def _choice(first: float, second: float) -> float:
    if np.isnan(first) or np.isnan(second) or first == second:
        return float("nan")
    return 1.0 if first > second else 2.0


def _task2(graded: list[Headline], judges: list[Judge], notes: list[str]) -> tuple[list[Table], list[tuple[str, Any]]]:
    pairs = _pairs(graded)
    g1 = np.array([a.mean for a, _ in pairs])
    g2 = np.array([b.mean for _, b in pairs])
    scored = g1 != g2
    skipped = int((~scored).sum())
    listing = Table(
        key="task2_pairs",
        title="Task 2 pairs",
        columns=["original headline", "edit 1", "edit 2", "grade 1", "grade 2", "funnier"],
        note="Every two edits of one original headline form a pair; pairs with equal mean grades are skipped.",
    )
    for (a, b), x, y in zip(pairs, g1, g2, strict=True):
        funnier = "skipped: equal grades" if x == y else ("edit 1" if x > y else "edit 2")
        listing.rows.append([a.original, a.edited, b.edited, float(x), float(y), funnier])
    scores = Table(
        key="task2_scores",
        title="Task 2 accuracy and reward",
        columns=["judge", "kind", "pairs", "pairs without a choice", "accuracy", "reward"],
        note=(
            "A judge picks the edit it graded higher; where it graded both the same (or missed one) it made "
            "no choice, which counts as wrong. Reward = mean over pairs of (+1 right, -1 wrong) × |grade 1 - "
            "grade 2|. The first-edit baseline always picks edit 1."
        ),
    )
    summary: list[tuple[str, Any]] = [("Task 2 pairs scored", int(scored.sum())), ("Task 2 pairs skipped", skipped)]
    if not pairs:
        notes.append("No original headline has two graded edits, so there are no Task 2 pairs.")
        return [listing, scores], summary
    if skipped:
        notes.append(f"{skipped} of the {len(pairs)} Task 2 pairs have equal mean grades and are skipped.")
    if not scored.any():
        notes.append("Every Task 2 pair has equal mean grades; there is nothing to score.")
        return [listing, scores], summary
    first = funnier_of_two(g1, g2, np.ones(len(pairs)))
    scores.rows.append([FIRST_EDIT_BASELINE, "baseline (computed)", first.n_pairs, 0, first.accuracy, first.reward])
    summary.append((f"Task 2 accuracy, {FIRST_EDIT_BASELINE.lower()}", first.accuracy))
    for judge in judges:
        predicted = np.array([_choice(judge.prediction(a.id), judge.prediction(b.id)) for a, b in pairs])
        result = funnier_of_two(g1, g2, predicted)
        no_choice = int(np.isnan(predicted[scored]).sum())
        scores.rows.append([judge.name, judge.kind, result.n_pairs, no_choice, result.accuracy, result.reward])
    return [listing, scores], summary


# -- figures ------------------------------------------------------------------------------------


def _grade_histogram(means: np.ndarray) -> plots.Plot:
    return plots.histogram(
        means,
        bins=np.arange(0, 3.2, 0.2),
        title="Distribution of mean grades",
        xlabel="Mean grade (0 Not funny – 3 Funny)",
        ylabel="Edited headlines",
        empty="No graded headlines yet.",
    )


def _scatter(predictors: list[Predictor]) -> plots.Plot:
    return plots.scatter(
        [(p.name, p.gold, p.predicted) for p in predictors[1:]],
        title="Task 1: predicted against human mean grade",
        xlabel="Mean human grade",
        ylabel="Judge's predicted grade",
        diagonal="perfect prediction",
        reference=float(predictors[0].predicted[0]),
        reference_label=MEAN_BASELINE,
        limits=(-0.1, 3.1),
        empty="No judge has graded the headlines yet.",
    )


def _mae_plot(bins: Table, names: list[str]) -> plots.Plot:
    return plots.line_chart(
        [row[0] for row in bins.rows],
        [(name, [row[2 + k] for row in bins.rows]) for k, name in enumerate(names)],
        title="Task 1: error per grade bin",
        xlabel="Mean grade bin",
        ylabel="Mean absolute error",
        dashed={MEAN_BASELINE},
    )


# -- the reports --------------------------------------------------------------------------------


@register_report(GRADING)
def grading_report(study: Study) -> ProtocolReport:
    template = template_of(study)
    analyses = {**ANALYSES, **(template.analyses if template else {})}
    percents = list(analyses["tail_percents"])
    width = float(analyses["grade_bin_width"])
    wanted = int(study.quota_per_item)
    report = ProtocolReport(study=study, title="SemEval-2020 Task 7: grading edited headlines")
    headlines = _headlines(study)
    graded = [h for h in headlines if h.grades]
    ungraded = len(headlines) - len(graded)
    short = sum(1 for h in graded if len(h.grades) < wanted)
    means = np.array([h.mean for h in graded])
    report.summary += [
        ("Edited headlines", len(headlines)),
        ("Edited headlines with grades", len(graded)),
        ("Human grades", sum(len(h.grades) for h in graded)),
        ("Mean of the mean grades", float(means.mean()) if means.size else None),
    ]
    if not headlines:
        report.notes.append(
            "The study has no edited headlines yet: import a file or add the edits of an editing study."
        )
    if ungraded:
        report.notes.append(f"{ungraded} edited headline(s) have no human grade yet and are left out.")
    if short:
        report.notes.append(
            f"{short} graded headline(s) have fewer than {wanted} grades; their mean is over the grades they have."
        )
    grades = Table(
        key="mean_grades",
        title="Mean grade per headline",
        columns=["id", "original headline", "edited headline", "grades", "mean grade"],
        rows=[[h.external_id, h.original, h.edited, len(h.grades), h.mean] for h in graded],
    )
    report.sections.append(
        Section(
            title="Grades",
            text=f"Each edited headline is graded 0-3 by {wanted} people; its grade is the mean of their grades.",
            tables=[grades],
            figures=[Figure("grade_histogram", "Distribution of mean grades", _grade_histogram(means))],
        )
    )
    if not graded:
        report.notes.append("No human grades yet, so Task 1 and Task 2 cannot be scored.")
        return report
    judges = _judges(study)
    if not judges:
        report.notes.append(
            "No LLM or baseline judge has graded this study yet; only the computed baselines are shown. "
            "Run a judge on the study to score it."
        )
    predictors, notes = _predictors(graded, judges)
    report.notes += notes
    task1 = _task1_tables(predictors, percents, width)
    base = task1[0].rows[0][4]
    report.summary.append(("Task 1 RMSE, mean baseline", base))
    if len(predictors) > 1:
        best = min(task1[0].rows[1:], key=lambda row: row[4])
        report.summary.append(("Task 1 best judge", f"{best[0]} (RMSE {best[4]:.3f})"))
    report.sections.append(
        Section(
            title="Task 1: predict the mean grade",
            tables=task1,
            figures=[
                Figure("task1_scatter", "Predicted against human mean grade", _scatter(predictors)),
                Figure(
                    "task1_mae_bins",
                    "Mean absolute error per grade bin",
                    _mae_plot(task1[2], [p.name for p in predictors]),
                ),
            ],
        )
    )
    covering = [j for j in judges if any(j.answers.get(h.id) for h in graded)]
    task2, summary = _task2(graded, covering, report.notes)
    report.summary += summary
    report.sections.append(Section(title="Task 2: which of two edits is funnier", tables=task2))
    return report


@register_report(EDITING)
def editing_report(study: Study) -> ProtocolReport:
    report = ProtocolReport(study=study, title="SemEval-2020 Task 7: editing headlines")
    edits: dict[int, list[str]] = defaultdict(list)
    editors = set()
    for rater_id, item_id, value in analysable_judgments(study=study, group="passers").values_list(
        "rater_id", "item_id", "value"
    ):
        if isinstance(value, dict) and value.get("replacement"):
            edits[item_id].append(str(value["replacement"]))
            editors.add(rater_id)
    table = Table(
        key="edits",
        title="Edits per headline",
        columns=["id", "headline", "edits", "distinct words", "words"],
        note="Each distinct word becomes one edited headline of the grading study.",
    )
    items = study.items.filter(is_attention_check=False).order_by("position", "pk")
    for pk, external_id, text in items.values_list("pk", "external_id", "text"):
        words = edits.get(pk, [])
        distinct = sorted({w.casefold() for w in words})
        table.rows.append([external_id, text, len(words), len(distinct), ", ".join(distinct)])
    report.summary += [
        ("Headlines", len(table.rows)),
        ("Edits written", sum(len(v) for v in edits.values())),
        ("Editors", len(editors)),
    ]
    if not edits:
        report.notes.append("No edits yet: open the study and share its link with editors.")
    report.sections.append(Section(title="Edits", tables=[table]))
    return report
