"""The HumorRank human check: people's blind votes on sampled pairs, and how the judges agree with them.

A human check (template ``humorrank-human-check``) names its contest study in
``config["source_study"]``. The people's votes are one more ranking
(:func:`human_ranking`); judges run on the check itself count beside the
tournament judges.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from annotation.models import Rater, Study
from annotation.protocols.humorrank import HUMAN_CHECK, SOURCE_LINK

from ..leaderboards import judge_verdicts
from ..pairwise import item_candidates, winner_of
from ..selectors import study_rating_matrix
from ..stats import krippendorff_alpha, majority_vote, percentage_agreement
from .base import Section, Table, rounded
from .humorrank_rankings import Ranking, Verdict, prompt_verdicts


def human_checks(study: Study, source: Study | None) -> list[Study]:
    if study.protocol == HUMAN_CHECK:
        return [study]
    if source is None:
        return []
    return list(Study.objects.filter(protocol=HUMAN_CHECK, **{f"config__{SOURCE_LINK}": source.slug}).order_by("pk"))


def _item_pairs(study: Study) -> dict[int, tuple[str, list[str]]]:
    """Per item: its prompt id and its candidates' contestants (``ratings.pairwise.contestant_of``)."""
    contestants = item_candidates(study=study)
    return {
        pk: (str((metadata or {}).get("prompt_id") or external_id), [name for _key, name in contestants.get(pk, [])])
        for pk, external_id, metadata in study.items.values_list("pk", "external_id", "metadata")
    }


def human_section(
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
                pair_rows.append([check.name, a, b, overlap, rounded(pair_alpha, 4)])
        n_pairs = check.items.filter(is_attention_check=False).count()
        agreement_rows.append([check.name, n_pairs, len(raters), n_votes, rounded(alpha, 4), rounded(raw, 4)])
        if alpha is not None and not any(name.startswith("Human check:") for name, _ in summary):
            summary += [
                ("Human check: Krippendorff α (nominal)", rounded(alpha, 4)),
                ("Human check: raw agreement", rounded(raw, 4)),
            ]
        # Human majority per pair, against each judge's verdict on the same prompt and pair.
        if not n_votes:
            continue
        keys = _item_pairs(check)
        majority = majority_vote(values, categories=[0.0, 0.5, 1.0], tie="undecided")
        human = {}
        for pk, code in zip(matrix.item_ids, majority, strict=True):
            prompt_id, item_keys = keys[pk]
            if len(item_keys) == 2:
                human[(prompt_id, frozenset(item_keys))] = None if math.isnan(code) else winner_of(code, *item_keys)
        compared = [*rankings, *_direct_judges(check, keys)]
        for ranking in compared:
            verdicts: dict[tuple[str, frozenset[str]], str] = {}
            for v in ranking.verdicts:
                verdicts.setdefault(v.pair, v.winner)
            both = [pair for pair in human if pair in verdicts]
            decided = [pair for pair in both if human[pair] is not None]
            same = sum(human[pair] == verdicts[pair] for pair in decided)
            share = same / len(decided) if decided else None
            align_rows.append([check.name, ranking.label, len(both), len(decided), same, rounded(share, 4)])
            if ranking is compared[0]:
                summary.append((f"Human majority vs {ranking.label}", rounded(share, 4)))
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


def human_ranking(check: Study) -> Ranking | None:
    """The people's votes in a human check as one more ranking (each vote one match)."""
    matrix = study_rating_matrix(study=check, group="humans")
    keys = _item_pairs(check)
    verdicts = [
        Verdict(keys[pk][0], keys[pk][1][0], keys[pk][1][1], float(code))
        for pk, row in zip(matrix.item_ids, matrix.values, strict=True)
        if len(keys[pk][1]) == 2
        for code in row
        if not math.isnan(code)
    ]
    if not verdicts:
        return None
    return Ranking(
        label=f"people · {check.name}", judge="people", tournament=check.name, verdicts=verdicts, seed=check.seed
    )


def _direct_judges(check: Study, keys: dict[int, tuple[str, list[str]]]) -> list[Ranking]:
    """Judges run on the human-check study itself (not through a tournament), their verdicts counted
    as every leaderboard counts them (``ratings.leaderboards.judge_verdicts``)."""
    by_rater = judge_verdicts(study=check)
    names = dict(Rater.objects.filter(pk__in=list(by_rater)).values_list("pk", "name"))
    prompt_of = {pk: prompt_id for pk, (prompt_id, _names) in keys.items()}
    return [
        Ranking(
            label=f"{names[rater_id]} · on this check",
            judge=names[rater_id],
            tournament="",
            verdicts=prompt_verdicts(found, prompt_of),
            seed=check.seed,
        )
        for rater_id, found in sorted(by_rater.items())
    ]
