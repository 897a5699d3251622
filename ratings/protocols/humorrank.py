"""The HumorRank report (PROTOCOLS.md §1): leaderboards, cross-judge agreement, features, human check.

Built on the contest study (prompts × contestants). Its tournaments' match
studies (template key ``humorrank-matches``) and its human checks (template
``humorrank-human-check``) name the contest study in ``config["source_study"]``;
the report reads their judgments from the annotation models only (the ratings
app never imports the judging app). One leaderboard per judge and tournament:
a judge's verdicts in two tournaments (round robin and Swiss) are two rankings.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.models import Candidate, Judgment, Study
from annotation.protocols.humorrank import ANALYSES, CONTEST, HUMAN_CHECK, MATCHES, SOURCE_LINK
from annotation.task_types import TIE

from .. import plots
from ..selectors import JUDGE_KINDS, study_rating_matrix
from ..services import pairwise_report
from ..stats import (
    intransitive_triads,
    krippendorff_alpha,
    majority_vote,
    percentage_agreement,
    ranking_kendall_tau,
    win_matrix,
    win_rate_matrix,
)
from .base import Figure, ProtocolReport, Section, Table, register_report

WIN_GROUPS = ("humor_mechanisms", "delivery_features")
LOSS_GROUP = "failure_features"


@dataclass
class Verdict:
    prompt_id: str
    first: str
    second: str
    score: float  # 1 first won, 0.5 tie, 0 second won
    features: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pair(self) -> tuple[str, frozenset[str]]:
        return self.prompt_id, frozenset((self.first, self.second))

    @property
    def winner(self) -> str:
        return TIE if self.score == 0.5 else (self.first if self.score == 1.0 else self.second)


@dataclass
class Ranking:
    """One judge's verdicts in one tournament, and the leaderboard they give."""

    label: str
    judge: str
    tournament: str
    verdicts: list[Verdict]
    result: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    wins: np.ndarray | None = None


def _score(choice: str, first: str) -> float:
    return 0.5 if choice == TIE else (1.0 if choice == first else 0.0)


def _first_per_item(rows) -> list:
    """The earliest judgment per (rater, item): repeated trials do not count twice."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for row in rows:
        if (row[0], row[1]) not in seen:
            seen.add((row[0], row[1]))
            kept.append(row)
    return kept


def _match_rankings(source: Study) -> list[Ranking]:
    prompt_ids = dict(source.items.values_list("pk", "external_id"))
    rankings = []
    for match_study in Study.objects.filter(protocol=MATCHES, **{f"config__{SOURCE_LINK}": source.slug}).order_by("pk"):
        rows = _first_per_item(
            Judgment.objects.filter(
                study=match_study,
                status=Judgment.Status.OK,
                rater__kind__in=JUDGE_KINDS,
                item__is_attention_check=False,
            )
            .order_by("rater_id", "item_id", "pk")
            .values_list("rater_id", "item_id", "rater__name", "item__metadata", "value", "provenance")
        )
        by_judge: dict[str, list[Verdict]] = {}
        for _rater, _item, judge, metadata, value, provenance in rows:
            first, second = metadata["contestants"]
            prompt_id = prompt_ids.get(metadata.get("prompt_item"), str(metadata.get("prompt_item")))
            features = (provenance or {}).get("features") or {}
            by_judge.setdefault(judge, []).append(
                Verdict(prompt_id, first, second, _score(value["choice"], first), features)
            )
        schedule = match_study.config.get("schedule", "")
        tournament = match_study.config.get("tournament") or match_study.name
        for judge, verdicts in by_judge.items():
            label = f"{judge} · {tournament}" + (f" ({schedule.replace('_', ' ')})" if schedule else "")
            rankings.append(Ranking(label=label, judge=judge, tournament=tournament, verdicts=verdicts))
    return rankings


def _fit(ranking: Ranking, analyses: dict[str, Any], seed: int) -> None:
    v = ranking.verdicts
    ranking.result = pairwise_report(
        [x.first for x in v],
        [x.second for x in v],
        [x.score for x in v],
        n_resamples=analyses["bootstrap_resamples"],
        n_orderings=analyses["elo_orderings"],
        seed=seed,
    )
    ranking.names = sorted({x.first for x in v} | {x.second for x in v})
    index = {n: i for i, n in enumerate(ranking.names)}
    ranking.wins = win_matrix(
        [index[x.first] for x in v], [index[x.second] for x in v], [x.score for x in v], n_contestants=len(index)
    )


# -- sections ------------------------------------------------------------------------------


def _leaderboard_section(rankings: list[Ranking]) -> Section:
    rows = []
    for r in rankings:
        res = r.result
        for rank, name in enumerate(res["ranking"], start=1):
            bt, elo = res["bradley_terry"][name], res["stable_elo"][name]
            rows.append(
                [
                    r.label,
                    rank,
                    name,
                    round(bt["rating"], 1),
                    round(bt["ci_low"], 1),
                    round(bt["ci_high"], 1),
                    round(res["win_rate"][name], 4),
                    res["games"][name],
                    round(elo["mean"], 1),
                    round(elo["sd"], 1) if math.isfinite(elo["sd"]) else None,
                ]
            )
    series = [
        {
            "label": r.label,
            "names": r.result["ranking"],
            "ratings": [r.result["bradley_terry"][n]["rating"] for n in r.result["ranking"]],
            "ci_low": [r.result["bradley_terry"][n]["ci_low"] for n in r.result["ranking"]],
            "ci_high": [r.result["bradley_terry"][n]["ci_high"] for n in r.result["ranking"]],
        }
        for r in rankings
    ]
    figures = [Figure("leaderboard", "Bradley–Terry ratings with 95% bootstrap intervals", plots.leaderboard(series))]
    for n, r in enumerate(rankings, start=1):
        rates = win_rate_matrix(r.wins)
        order = [r.names.index(name) for name in r.result["ranking"]]
        matrix = [[None if math.isnan(rates[i, j]) else float(rates[i, j]) for j in order] for i in order]
        figures.append(
            Figure(
                f"win_rates_{n}",
                f"Win-rate matrix — {r.label}",
                plots.win_rate_heatmap(r.result["ranking"], matrix, title=f"Win rates — {r.label}"),
            )
        )
    return Section(
        title="Leaderboard",
        text=(
            "One leaderboard per judge and tournament, and one from the people's votes in each human check. Bradley–Terry ratings on the Elo scale (centred on 1000; "
            "ties count half a win each), 95% percentile intervals from resampling the matches, the share of "
            "points won, and Stable Elo (K = 32) as the mean and spread over random replays of the match order."
        ),
        tables=[
            Table(
                key="leaderboard",
                title="Leaderboard per judge",
                columns=[
                    "judge · tournament",
                    "rank",
                    "contestant",
                    "BT rating",
                    "95% CI low",
                    "95% CI high",
                    "win rate",
                    "games",
                    "Stable Elo mean",
                    "Stable Elo SD",
                ],
                rows=rows,
            )
        ],
        figures=figures,
    )


def _agreement_section(rankings: list[Ranking]) -> tuple[Section, list[tuple[str, Any]]]:
    tau_rows = []
    for x, y in itertools.combinations(rankings, 2):
        common = sorted(set(x.names) & set(y.names))
        if len(common) < 2:
            continue
        bx = [x.result["bradley_terry"][n]["rating"] for n in common]
        by = [y.result["bradley_terry"][n]["rating"] for n in common]
        tau, p = ranking_kendall_tau(bx, by)
        tau_rows.append([x.label, y.label, len(common), round(tau, 4), round(p, 4) if math.isfinite(p) else None])
    triad_rows = []
    for r in rankings:
        triads = intransitive_triads(r.wins)
        listed = "; ".join(" > ".join(r.names[i] for i in (a, b, c, a)) for a, b, c in triads.triads[:20])
        triad_rows.append([r.label, triads.count, listed])
    summary = [("Cross-judge Kendall τ (first two rankings)", tau_rows[0][3])] if tau_rows else []
    section = Section(
        title="Agreement between judges and transitivity",
        text=(
            "Kendall's τ-b between two rankings' Bradley–Terry ratings over the contestants both ranked. "
            "A triad is intransitive when, by majority of their matches, A beats B, B beats C and C beats A."
        ),
        tables=[
            Table(
                key="cross_judge_tau",
                title="Kendall τ between rankings",
                columns=["ranking 1", "ranking 2", "contestants", "Kendall τ", "p-value"],
                rows=tau_rows,
                note="" if tau_rows else "Needs two rankings (two judges, or two tournaments).",
            ),
            Table(
                key="intransitive_triads",
                title="Intransitive triads per ranking",
                columns=["judge · tournament", "intransitive triads", "cycles (first 20)"],
                rows=triad_rows,
            ),
        ],
    )
    return section, summary


def _feature_shares(r: Ranking) -> tuple[list[str], list[list[float | None]], int]:
    wins, losses = Counter(), Counter()
    win_feats: dict[str, Counter] = {n: Counter() for n in r.names}
    loss_feats: dict[str, Counter] = {n: Counter() for n in r.names}
    seen: dict[str, set[str]] = {g: set() for g in (*WIN_GROUPS, LOSS_GROUP)}
    with_features = 0
    for v in r.verdicts:
        if any(v.features.get(g) for g in seen):
            with_features += 1
        if v.score == 0.5:
            continue
        winner = v.winner
        loser = v.second if winner == v.first else v.first
        wins[winner] += 1
        losses[loser] += 1
        for g in WIN_GROUPS:
            seen[g].update(v.features.get(g) or [])
        seen[LOSS_GROUP].update(v.features.get(LOSS_GROUP) or [])
        for f in {f for g in WIN_GROUPS for f in v.features.get(g) or []}:
            win_feats[winner][f] += 1
        for f in set(v.features.get(LOSS_GROUP) or []):
            loss_feats[loser][f] += 1
    columns = [f"win: {f}" for g in WIN_GROUPS for f in sorted(seen[g])]
    columns += [f"loss: {f}" for f in sorted(seen[LOSS_GROUP])]
    rows = []
    for name in r.result["ranking"]:
        row: list[float | None] = []
        for col in columns:
            side, _, feature = col.partition(": ")
            counts, total = (win_feats, wins) if side == "win" else (loss_feats, losses)
            row.append(round(counts[name][feature] / total[name], 4) if total[name] else None)
        rows.append(row)
    return columns, rows, with_features


def _feature_section(rankings: list[Ranking], notes: list[str]) -> Section:
    tables, figures = [], []
    for n, r in enumerate(rankings, start=1):
        columns, rows, with_features = _feature_shares(r)
        if not with_features:
            notes.append(f"{r.label}: the verdicts carry no feature lists, so there is no feature table for it.")
            continue
        names = r.result["ranking"]
        tables.append(
            Table(
                key=f"features_{n}",
                title=f"Features — {r.label}",
                columns=["contestant", *columns],
                rows=[[name, *row] for name, row in zip(names, rows, strict=True)],
                note="win: share of the contestant's wins citing the feature; loss: share of its losses.",
            )
        )
        figures.append(
            Figure(
                f"features_{n}",
                f"Feature heatmap — {r.label}",
                plots.feature_heatmap(names, columns, rows, judge=r.judge),
            )
        )
    return Section(
        title="What wins and what loses",
        text=(
            "From the judges' feature lists: for each contestant, the share of its wins whose verdict names "
            "each humour mechanism or delivery feature, and the share of its losses naming each failure."
        ),
        tables=tables,
        figures=figures,
    )


def _human_checks(study: Study, source: Study | None) -> list[Study]:
    if study.protocol == HUMAN_CHECK:
        return [study]
    if source is None:
        return []
    return list(Study.objects.filter(protocol=HUMAN_CHECK, **{f"config__{SOURCE_LINK}": source.slug}).order_by("pk"))


def _item_keys(study: Study) -> dict[int, tuple[str, list[str]]]:
    keys: dict[int, list[str]] = {}
    for item_id, key in (
        Candidate.objects.filter(item__study=study).order_by("item_id", "position", "pk").values_list("item_id", "key")
    ):
        keys.setdefault(item_id, []).append(key)
    return {
        pk: (str((metadata or {}).get("prompt_id") or external_id), keys.get(pk, []))
        for pk, external_id, metadata in study.items.values_list("pk", "external_id", "metadata")
    }


def _winner(code: float, keys: list[str]) -> str:
    return TIE if code == 0.5 else (keys[0] if code == 1.0 else keys[1])


def _human_section(
    checks: list[Study], rankings: list[Ranking], notes: list[str]
) -> tuple[Section, list[tuple[str, Any]]]:
    agreement_rows, pair_rows, align_rows = [], [], []
    summary: list[tuple[str, Any]] = []
    for check in checks:
        matrix = study_rating_matrix(study=check, group="humans")
        notes.extend(f"{check.name}: {w}" for w in matrix.warnings)
        values, raters = matrix.values, [r.label for r in matrix.raters]
        n_votes = int((~np.isnan(values)).sum())
        if len(raters) < 2:
            notes.append(f"{check.name}: {len(raters)} human rater(s) so far; agreement needs at least two.")
            alpha = raw = None
        else:
            alpha = krippendorff_alpha(values, level="nominal", value_domain=[0.0, 0.5, 1.0])
            raw = percentage_agreement(values).value
            for (i, a), (j, b) in itertools.combinations(enumerate(raters), 2):
                both = values[:, [i, j]]
                overlap = int((~np.isnan(both)).all(axis=1).sum())
                pair_alpha = (
                    krippendorff_alpha(both, level="nominal", value_domain=[0.0, 0.5, 1.0]) if overlap else None
                )
                pair_rows.append([check.name, a, b, overlap, _round(pair_alpha)])
        n_pairs = check.items.filter(is_attention_check=False).count()
        agreement_rows.append([check.name, n_pairs, len(raters), n_votes, _round(alpha), _round(raw)])
        if alpha is not None and not any(name.startswith("Human check:") for name, _ in summary):
            summary += [
                ("Human check: Krippendorff α (nominal)", _round(alpha)),
                ("Human check: raw agreement", _round(raw)),
            ]
        # Human majority per pair, against each judge's verdict on the same prompt and pair.
        if not n_votes:
            continue
        keys = _item_keys(check)
        majority = majority_vote(values, categories=[0.0, 0.5, 1.0], tie="undecided")
        human = {}
        for pk, code in zip(matrix.item_ids, majority, strict=True):
            prompt_id, item_keys = keys[pk]
            if len(item_keys) == 2:
                human[(prompt_id, frozenset(item_keys))] = None if math.isnan(code) else _winner(code, item_keys)
        compared = [*rankings, *_direct_judges(check, keys)]
        for ranking in compared:
            verdicts: dict[tuple[str, frozenset[str]], str] = {}
            for v in ranking.verdicts:
                verdicts.setdefault(v.pair, v.winner)
            both = [pair for pair in human if pair in verdicts]
            decided = [pair for pair in both if human[pair] is not None]
            same = sum(human[pair] == verdicts[pair] for pair in decided)
            share = same / len(decided) if decided else None
            align_rows.append([check.name, ranking.label, len(both), len(decided), same, _round(share)])
            if ranking is compared[0]:
                summary.append((f"Human majority vs {ranking.label}", _round(share)))
    if not checks:
        notes.append(
            "No human check yet: sample a tournament's pairs into a human-check study (see docs/protocols/humorrank.md)."
        )
    section = Section(
        title="Human check",
        text=(
            "Blind A/B/tie votes by people on sampled pairs. Krippendorff's α treats the votes as nominal "
            "(first joke, second joke, tie) and allows incomplete overlap; raw agreement is the share of "
            "agreeing rater pairs per pair of jokes. Alignment compares the human majority on each pair "
            "(pairs without a majority left out) with each judge's verdict on the same prompt and contestants."
        ),
        tables=[
            Table(
                key="human_agreement",
                title="Agreement among human raters",
                columns=["study", "pairs", "raters", "votes", "Krippendorff α (nominal)", "raw agreement"],
                rows=agreement_rows,
            ),
            Table(
                key="human_rater_pairs",
                title="α for each two human raters",
                columns=["study", "rater 1", "rater 2", "pairs both voted on", "α (nominal)"],
                rows=pair_rows,
            ),
            Table(
                key="human_judge_alignment",
                title="Human majority vs each judge",
                columns=[
                    "study",
                    "judge · tournament",
                    "pairs judged by both",
                    "with a human majority",
                    "same verdict",
                    "alignment",
                ],
                rows=align_rows,
                note="" if align_rows else "No pair was both voted on by people and judged by an LLM judge.",
            ),
        ],
    )
    return section, summary


def _human_ranking(check: Study) -> Ranking | None:
    """The people's votes in a human check as one more ranking (each vote one match)."""
    matrix = study_rating_matrix(study=check, group="humans")
    keys = _item_keys(check)
    verdicts = [
        Verdict(keys[pk][0], keys[pk][1][0], keys[pk][1][1], float(code))
        for pk, row in zip(matrix.item_ids, matrix.values, strict=True)
        if len(keys[pk][1]) == 2
        for code in row
        if not math.isnan(code)
    ]
    if not verdicts:
        return None
    return Ranking(label=f"people · {check.name}", judge="people", tournament=check.name, verdicts=verdicts)


def _direct_judges(check: Study, keys: dict[int, tuple[str, list[str]]]) -> list[Ranking]:
    """Judges run on the human-check study itself (not through a tournament)."""
    rows = _first_per_item(
        Judgment.objects.filter(study=check, status=Judgment.Status.OK, rater__kind__in=JUDGE_KINDS)
        .order_by("rater_id", "item_id", "pk")
        .values_list("rater_id", "item_id", "rater__name", "value")
    )
    by_judge: dict[str, list[Verdict]] = {}
    for _rater, item_id, judge, value in rows:
        prompt_id, item_keys = keys[item_id]
        if len(item_keys) == 2:
            by_judge.setdefault(judge, []).append(
                Verdict(prompt_id, item_keys[0], item_keys[1], _score(value["choice"], item_keys[0]))
            )
    return [
        Ranking(label=f"{judge} · on this check", judge=judge, tournament="", verdicts=v)
        for judge, v in by_judge.items()
    ]


def _round(value: Any, digits: int = 4) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return round(float(value), digits)


# -- the report -------------------------------------------------------------------------------


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
    rankings = _match_rankings(source) if source is not None else []
    usable = [r for r in rankings if r.verdicts]
    for r in usable:
        _fit(r, analyses, seed=study.seed)
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
    checks = _human_checks(study, source)
    people = [r for r in (_human_ranking(check) for check in checks) if r is not None]
    for r in people:
        _fit(r, analyses, seed=study.seed)
    ranked = [*usable, *people]
    sections = []
    if ranked:
        sections.append(_leaderboard_section(ranked))
        agreement, tau_summary = _agreement_section(ranked)
        sections.append(agreement)
        summary += tau_summary
        if len(ranked) < 2:
            notes.append("Only one ranking: cross-judge Kendall τ needs a second judge or tournament.")
    if usable:
        sections.append(_feature_section(usable, notes))
    human, human_summary = _human_section(checks, usable, notes)
    sections.append(human)
    summary += human_summary
    title = f"HumorRank report — {source.name if source is not None else study.name}"
    return ProtocolReport(study=study, title=title, summary=summary, sections=sections, notes=notes)
