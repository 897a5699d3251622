"""The Chumor 2.0 explanation-preference report (PROTOCOLS.md §4).

Each vote names the human explanation, the LLM one, or a tie. The per-joke
majority is "undecided" when no answer has a strict majority (three annotators
who all differ); win rates are shares of jokes. Raw percentage agreement is the
mean share of agreeing annotator pairs. The explanation-label report is in
:mod:`.chumor`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from annotation.models import Judgment, Study
from annotation.task_types import TIE

from .. import plots
from ..pairwise import item_candidates, winner_of
from ..selectors import JUDGE_KINDS, NoNumericCoding, study_rating_matrix
from ..stats import fleiss_kappa_from_matrix, krippendorff_alpha, majority_vote, percentage_agreement
from .base import Figure, ProtocolReport, Section, Table, register_report, rounded

PREFERENCE = "chumor-preference"
HUMAN, LLM, UNDECIDED = "human", "llm", "undecided"


def _outcomes(study: Study, item_ids: list[int], values: np.ndarray) -> np.ndarray:
    """Coded votes (1 first candidate, 0 second, 0.5 tie) as 'human' / 'llm' / 'tie' per cell ('' = no vote).

    A candidate's side is its contestant (``ratings.pairwise.contestant_of``: the importer sets its ``source``).
    """
    sides = item_candidates(study=study)
    out = np.full(values.shape, "", dtype=object)
    for i, pk in enumerate(item_ids):
        first, second = ([name for _key, name in sides.get(pk, [])] + ["first", "second"])[:2]
        for j, v in enumerate(values[i]):
            if not math.isnan(v):
                out[i, j] = winner_of(v, first, second)
    return out


def _win_plot(rows: list[list[Any]]) -> plots.Plot:
    decided = any(r[1] for r in rows)
    return plots.bar_chart(
        [r[0] for r in rows] if decided else [],
        [r[2] or 0.0 for r in rows],
        title="Per-joke majority: which explanation wins",
        xlabel="share of jokes",
        value_format=".0%",
        limits=(0.0, 1.0),
        empty="No per-joke majority yet.",
    )


def _win_rates(outcomes: list[str], order: list[str]) -> list[list[Any]]:
    counts = Counter(outcomes)
    total = len(outcomes)
    return [[name, counts[name], rounded(counts[name] / total) if total else None] for name in order]


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
        agreement.rows.append(["raw percentage agreement", rounded(pa.value), pa.n_items])
        agreement.rows.append(
            ["Krippendorff's α (nominal)", rounded(krippendorff_alpha(values, level="nominal")), len(matrix.item_ids)]
        )
        answered = (~np.isnan(values)).sum(axis=1)
        if answered.size and np.all(answered == answered[0]) and answered[0] >= 2:
            agreement.rows.append(
                ["Fleiss' κ", rounded(fleiss_kappa_from_matrix(values, [0.0, 0.5, 1.0])), len(matrix.item_ids)]
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
                rounded(agree / len(decided)) if decided else None,
                len(decided),
            ]
        )
    report.sections.append(Section(title="Judges", tables=[table]))
