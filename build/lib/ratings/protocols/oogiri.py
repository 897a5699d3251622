"""The OOGIRI-MASTER voting report (PROTOCOLS.md §3): voting filter, top/bottom selection, features.

On the voting study: how many prompts pass the minimum-total-votes filter, the
top-3 / bottom-3 responses of each, and the surface features of high against
low responses (two-sample t-test and Cohen's d with pooled SD). The benchmark
studies built from it have their own report (:mod:`.oogiri_benchmark`); both
end with the same table across the five tasks.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import numpy as np

from annotation.models import Study
from annotation.protocols.base import get_template
from annotation.protocols.oogiri import VOTING
from annotation.protocols.oogiri_benchmark import Selection, select_responses, sibling_tasks

from .. import plots, stats
from .base import Figure, ProtocolReport, Section, Table, register_report
from .oogiri_benchmark import across_tasks_section, benchmark_report, failed_attention_raters, task_scores

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
    tasks = sibling_tasks(study=study)
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
        across_tasks_section(tasks),
    ]
    if not prompts:
        report.notes.append("The study has no prompts yet: import a file or add items.")
    elif votes == 0:
        report.notes.append("No votes yet: the filter leaves every prompt out until votes are cast or imported.")
    elif not selection.kept:
        report.notes.append(f"No prompt has {selection.min_total_votes} votes yet, so nothing is selected.")
    report.notes.extend(feature_notes)
    if not tasks:
        report.notes.append(
            f"No benchmark tasks built yet: run `manage.py oogiri_tasks {study.slug}` to create the five studies."
        )
    return report


# -- figures -----------------------------------------------------------------------------------------


def _votes_plot(selection: Selection) -> plots.Plot:
    prompts = [s.prompt for s in selection.kept] + [p for p, _ in selection.excluded]
    return plots.bar_chart(
        [p.prompt_id for p in prompts],
        [float(p.total) for p in prompts],
        title="Votes per prompt (dotted: the filter)",
        xlabel="total votes",
        reference=float(selection.min_total_votes),
        empty="No prompts yet.",
    )


def _effects_plot(features: Table) -> plots.Plot:
    rows = [r for r in features.rows if r[6] is not None]
    return plots.bar_chart(
        [r[0] for r in rows],
        [r[6] for r in rows],
        title="High − low",
        xlabel="Cohen's d",
        reference=0.0,
        empty="No feature comparison yet.",
    )


__all__ = ["FEATURES", "benchmark_report", "failed_attention_raters", "feature_table", "task_scores", "voting_report"]
