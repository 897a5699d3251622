"""The OOGIRI-MASTER report (PROTOCOLS.md §3): voting filter, top/bottom selection, features, benchmark accuracy.

On the voting study: how many prompts pass the minimum-total-votes filter, the
top-3 / bottom-3 responses of each, and the surface features of high against
low responses (two-sample t-test and Cohen's d with pooled SD). On each
benchmark study: the crowd's majority vote and Dawid–Skene labels scored
against the gold (raters who failed an attention check left out), Fleiss' κ
among the crowd, and each judge's accuracy, where an answer that is missing,
failed or unparseable counts as wrong. Both kinds end with the same table
across the five tasks.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db.models import Count

from annotation.models import Candidate, Enrollment, Item, Judgment, Rater, Study
from annotation.protocols.base import get_template
from annotation.protocols.oogiri import TASK_TITLES, TASKS, VOTING, task_of
from annotation.protocols.oogiri_tasks import Selection, select_responses, sibling_tasks
from annotation.task_types import get_task_type

from .. import stats
from ..plots import RC as PLOT_RC
from ..plots import Plot, _empty, _figure, _render, rc_context
from ..selectors import HUMAN_KINDS, JUDGE_KINDS, study_rating_matrix
from .base import Figure, ProtocolReport, Section, Table, register_report

# -- surface features ----------------------------------------------------------------------------


def _share(text: str, test: Callable[[str], bool]) -> float:
    return sum(1 for ch in text if test(ch)) / len(text) if text else 0.0


def _name_has(word: str) -> Callable[[str], bool]:
    return lambda ch: word in unicodedata.name(ch, "")


def _is_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


FEATURES: list[tuple[str, Callable[[str, str], float]]] = [
    ("length (characters)", lambda r, p: float(len(r))),
    ("unique characters", lambda r, p: float(len(set(r)))),
    ("response / prompt length", lambda r, p: len(r) / len(p) if p else 0.0),
    ("hiragana ratio", lambda r, p: _share(r, _name_has("HIRAGANA"))),
    ("katakana ratio", lambda r, p: _share(r, _name_has("KATAKANA"))),
    ("kanji ratio", lambda r, p: _share(r, _name_has("CJK UNIFIED"))),
    ("latin letter ratio", lambda r, p: _share(r, lambda ch: ch.isascii() and ch.isalpha())),
    ("digit ratio", lambda r, p: _share(r, str.isdigit)),
    ("symbol ratio", lambda r, p: _share(r, _is_symbol)),
]


def feature_table(selection: Selection) -> tuple[Table, list[str]]:
    """High against low responses on each surface feature."""
    high = [(r.text, s.prompt.prompt) for s in selection.kept for r in s.high]
    low = [(r.text, s.prompt.prompt) for s in selection.kept for r in s.low]
    table = Table(
        key="features",
        title="Surface features: high-rated against low-rated responses",
        columns=["feature", "mean high", "mean low", "t", "df", "p", "Cohen's d", "effect"],
        note="Student's two-sample t-test; Cohen's d with pooled SD (0.2 / 0.5 / 0.8 = small / medium / large). "
        "Positive d: high-rated responses score higher.",
    )
    notes = []
    for name, feature in FEATURES:
        a = [feature(r, p) for r, p in high]
        b = [feature(r, p) for r, p in low]
        try:
            c = stats.compare_groups(a, b)
        except ValueError:
            if len(a) >= 2 and len(b) >= 2:
                table.rows.append([name, float(np.mean(a)), float(np.mean(b)), None, None, None, None, "constant"])
            continue
        table.rows.append([name, c.mean_1, c.mean_2, c.t, c.df, c.p_value, c.cohens_d, c.magnitude])
    if len(high) < 2 or len(low) < 2:
        notes.append("The feature comparison needs at least two high and two low responses: none is shown.")
    return table, notes


# -- voting study ----------------------------------------------------------------------------------


def _preset() -> dict:
    return get_template(VOTING).analyses


@register_report(VOTING)
def voting_report(study: Study) -> ProtocolReport:
    preset = _preset()
    selection = select_responses(
        study=study, min_total_votes=preset["min_total_votes"], top=preset["top"], bottom=preset["bottom"]
    )
    prompts = [s.prompt for s in selection.kept] + [p for p, _ in selection.excluded]
    responses = sum(len(p.responses) for p in prompts)
    votes = sum(p.total for p in prompts)
    report = ProtocolReport(study=study, title=f"OOGIRI-MASTER voting: {study.name}")
    report.summary = [
        ("Prompts", len(prompts)),
        ("Responses", responses),
        ("Votes in all", votes),
        ("Mean responses per prompt", responses / len(prompts) if prompts else None),
        ("Mean votes per prompt", votes / len(prompts) if prompts else None),
        (f"Prompts with at least {selection.min_total_votes} votes (kept)", len(selection.kept)),
        ("Prompts left out", len(selection.excluded)),
    ]
    filter_table = Table(
        key="vote_filter",
        title=f"Minimum-total-votes filter (at least {selection.min_total_votes} votes)",
        columns=["prompt", "responses", "voters here", "total votes", "kept", "why left out"],
        rows=[
            [s.prompt.prompt_id, len(s.prompt.responses), s.prompt.voters, s.prompt.total, "yes", ""]
            for s in selection.kept
        ]
        + [[p.prompt_id, len(p.responses), p.voters, p.total, "no", why] for p, why in selection.excluded],
        note="Totals add votes cast in this study to totals imported from a file.",
    )
    chosen = Table(
        key="selection",
        title=f"Top-{selection.top} (high) and bottom-{selection.bottom} (low) responses of each kept prompt",
        columns=["prompt", "group", "rank", "response", "text", "votes"],
    )
    for s in selection.kept:
        for group, responses_ in (("high", s.high), ("low", s.low)):
            for rank, r in enumerate(responses_, start=1):
                chosen.rows.append([s.prompt.prompt_id, group, rank, r.key, r.text, r.votes])
    features, feature_notes = feature_table(selection)
    report.sections = [
        Section(
            "Votes and the filter",
            "Each voter spreads up to three votes per prompt and never sees running totals. Prompts "
            "with too few votes in all are left out of every analysis below.",
            tables=[filter_table],
            figures=[Figure("vote_totals", "Total votes per prompt", _votes_plot(selection))],
        ),
        Section("High- and low-rated responses", tables=[chosen]),
        Section(
            "What sets high-rated responses apart",
            "Surface features measured on the selected responses.",
            tables=[features],
            figures=[Figure("feature_effects", "Cohen's d per feature (high − low)", _effects_plot(features))],
        ),
        _across_tasks_section(sibling_tasks(study=study)),
    ]
    if not prompts:
        report.notes.append("The study has no prompts yet: import a file or add items.")
    elif votes == 0:
        report.notes.append("No votes yet: the filter leaves every prompt out until votes are cast or imported.")
    elif not selection.kept:
        report.notes.append(f"No prompt has {selection.min_total_votes} votes yet, so nothing is selected.")
    report.notes.extend(feature_notes)
    if not sibling_tasks(study=study):
        report.notes.append(
            f"No benchmark tasks built yet: run `manage.py oogiri_tasks {study.slug}` to create the five studies."
        )
    return report


# -- benchmark studies ------------------------------------------------------------------------------


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


def _gold_codes(study: Study) -> dict[int, float]:
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys: dict[int, list[str]] = defaultdict(list)
    for item_id, key in (
        Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id").values_list("item_id", "key")
    ):
        keys[item_id].append(key)
    codes = {}
    for pk, gold in Item.objects.filter(study=study, is_attention_check=False, gold__isnull=False).values_list(
        "pk", "gold"
    ):
        try:
            codes[pk] = float(task_type.to_number(gold, candidate_keys=keys[pk], config=config))
        except (KeyError, ValueError, TypeError):
            continue
    return codes


def _judge_scores(study: Study, gold: dict[int, float]) -> list[tuple[str, str, float, int, int, int]]:
    """Per judge: accuracy averaged over its trials; no answer, a failed or an unparseable one is wrong."""
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    keys: dict[int, list[str]] = defaultdict(list)
    for item_id, key in (
        Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id").values_list("item_id", "key")
    ):
        keys[item_id].append(key)
    rows = (
        Judgment.objects.filter(study=study, rater__kind__in=JUDGE_KINDS, item_id__in=list(gold))
        .values_list("rater_id", "assignment__trial", "item_id", "status", "value")
        .order_by("id")
    )
    answers: dict[int, dict[int, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for rater_id, trial, item_id, status, value in rows:
        code = None
        if status == Judgment.Status.OK and value is not None:
            try:
                code = float(task_type.to_number(value, candidate_keys=keys[item_id], config=config))
            except (KeyError, ValueError, TypeError):
                code = None
        answers[rater_id][trial].setdefault(item_id, code)
    scores = []
    raters = Rater.objects.filter(pk__in=list(answers)).order_by("kind", "name", "pk")
    for rater in raters:
        per_trial, correct_all, answered_all = [], 0, 0
        for given in answers[rater.pk].values():
            correct = sum(1 for item_id, code in gold.items() if given.get(item_id) == code)
            per_trial.append(correct / len(gold))
            correct_all += correct
            answered_all += sum(1 for code in given.values() if code is not None)
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
        _across_tasks_section(sibling_tasks(study=study)),
    ]
    report.notes = scores.notes
    return report


def _across_tasks_section(tasks: dict[str, Study]) -> Section:
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


# -- figures -----------------------------------------------------------------------------------------


def _bars(labels: list[str], values: list[float], *, xlabel: str, title: str, line: float | None = None) -> Plot:
    if not labels:
        return _empty("Nothing to show yet.")
    with rc_context(PLOT_RC):
        fig = _figure(6.0, max(2.2, 0.8 + 0.35 * len(labels)))
        ax = fig.add_subplot()
        ax.barh(range(len(labels)), values, color="#4C72B0")
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        if line is not None:
            ax.axvline(line, color="#999", linewidth=0.8, linestyle=":")
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return _render(fig)


def _votes_plot(selection: Selection) -> Plot:
    prompts = [s.prompt for s in selection.kept] + [p for p, _ in selection.excluded]
    return _bars(
        [p.prompt_id for p in prompts],
        [float(p.total) for p in prompts],
        xlabel="total votes",
        title="Votes per prompt (dotted: the filter)",
        line=float(selection.min_total_votes),
    )


def _effects_plot(features: Table) -> Plot:
    rows = [r for r in features.rows if r[6] is not None]
    return _bars([r[0] for r in rows], [r[6] for r in rows], xlabel="Cohen's d", title="High − low", line=0.0)


def _accuracy_plot(scores: TaskScores, chance: float) -> Plot:
    named = [("crowd, majority vote", scores.majority), ("crowd, Dawid–Skene", scores.dawid_skene)]
    named += [(name, acc) for name, _kind, acc, *_ in scores.judges]
    named = [(n, v) for n, v in named if v is not None]
    return _bars(
        [n for n, _ in named], [v for _, v in named], xlabel="accuracy", title="Accuracy (dotted: chance)", line=chance
    )


__all__ = ["FEATURES", "benchmark_report", "feature_table", "task_scores", "voting_report"]
