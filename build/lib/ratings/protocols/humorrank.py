"""The HumorRank report (PROTOCOLS.md §1): leaderboards, cross-judge agreement, features, human check.

Built on the contest study (prompts × contestants). Its tournaments' match
studies (template key ``humorrank-matches``) and its human checks (template
``humorrank-human-check``) name the contest study in ``config["source_study"]``;
the report reads their judgments from the annotation models only (the ratings
app never imports the judging app). One leaderboard per judge and tournament:
a judge's verdicts in two tournaments (round robin and Swiss) are two rankings.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Candidate, Study
from annotation.protocols.humorrank import ANALYSES, CONTEST, HUMAN_CHECK, SOURCE_LINK

from .base import ProtocolReport, register_report
from .humorrank_human import human_checks, human_ranking, human_section
from .humorrank_leaderboard import agreement_section, feature_section, leaderboard_section
from .humorrank_rankings import fit, match_rankings


@register_report(CONTEST, HUMAN_CHECK)
def build(study: Study) -> ProtocolReport:
    notes: list[str] = []
    if study.protocol == CONTEST:
        source: Study | None = study
    else:
        source = Study.objects.filter(slug=study.config.get(SOURCE_LINK) or "").first()
        if source is None:
            notes.append(
                "This human check names no contest study, so there are no tournament verdicts to compare with."
            )
    analyses = dict(ANALYSES)
    rankings = match_rankings(source) if source is not None else []
    usable = [r for r in rankings if r.verdicts]
    for r in usable:
        fit(r, analyses, seed=study.seed)
        notes.extend(f"{r.label}: {w}" for w in r.result["warnings"])
    summary: list[tuple[str, Any]] = []
    if source is not None:
        contestants = Candidate.objects.filter(item__study=source).values("key").distinct().count()
        summary += [("Prompts", source.items.filter(is_attention_check=False).count()), ("Contestants", contestants)]
    summary.append(("Rankings (judge × tournament)", len(usable)))
    if not usable and source is not None:
        notes.append(
            "No judge verdicts yet: run a tournament on the contest study (round robin or Swiss) with an LLM judge."
        )
    for r in usable:
        summary.append((f"Top contestant — {r.label}", r.result["ranking"][0]))
        summary.append((f"Matches judged — {r.label}", r.result["n_matches"]))
    checks = human_checks(study, source)
    people = [r for r in (human_ranking(check) for check in checks) if r is not None]
    for r in people:
        fit(r, analyses, seed=study.seed)
    ranked = [*usable, *people]
    sections = []
    if ranked:
        sections.append(leaderboard_section(ranked))
        agreement, tau_summary = agreement_section(ranked)
        sections.append(agreement)
        summary += tau_summary
        if len(ranked) < 2:
            notes.append("Only one ranking: cross-judge Kendall τ needs a second judge or tournament.")
    if usable:
        sections.append(feature_section(usable, notes))
    human, human_summary = human_section(checks, usable, notes)
    sections.append(human)
    summary += human_summary
    title = f"HumorRank report — {source.name if source is not None else study.name}"
    return ProtocolReport(study=study, title=title, summary=summary, sections=sections, notes=notes)
