# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-item figures for the "Items" sheet (JEST "Dataset A").

Definitions, the same for every task type (written into the Metadata sheet):

* exact-agreement % of an item: the share of its raters who gave the item's
  most frequent value. It is 100 exactly when all raters agree, so the
  study-level exact agreement (share of items on which all raters gave the
  same value) is the share of items whose figure is 100.
* adjacent-agreement % (rating scales): the largest share of the item's raters
  whose ratings fit in a window one point wide ([v, v + 1]). It is 100 exactly
  when all ratings lie within one point (max − min ≤ 1), matching the
  study-level adjacent agreement.
* mean absolute deviation: the mean of |rating − item mean|.

Medians, means, SDs and the all-equal / within-one flags come from
``ratings.stats.agreement.item_summary``; the majority label with ties
resolved toward the higher rating from ``ratings.stats.aggregation``.
Items with fewer than two ratings have no agreement figures.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from annotation.task_types import PICK_BEST, PICK_WORST, Level
from ratings.pairwise import outcome_of
from ratings.stats.aggregation import majority_vote
from ratings.stats.agreement import item_summary

from .study_data import StudyData

BATCH = 4096

EXACT_DEFINITION = (
    "Exact-agreement % (per item): share of the item's raters who gave its most frequent value; "
    "100 means all raters agree. Study-level exact agreement: share of items (with at least two "
    "ratings) on which all raters gave the same value."
)
ADJACENT_DEFINITION = (
    "Adjacent-agreement % (per item, rating scales): largest share of the item's raters whose ratings "
    "lie within one point of each other; 100 means max − min ≤ 1. Study-level adjacent agreement: share "
    "of items whose ratings all lie within one point."
)
MAD_DEFINITION = "Mean absolute deviation (per item): mean of |rating − item mean| over the item's raters."


class CandidateRef(NamedTuple):
    """A candidate whose text the writer looks up when it writes the row (texts are not kept in memory)."""

    item_id: int
    key: str


def _pct(share: float) -> float | None:
    return None if share is None or math.isnan(share) else round(100.0 * share, 2)


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _modal(labels: list[Any]) -> tuple[list[Any], int]:
    counts = Counter(labels)
    top = max(counts.values())
    return sorted((k for k, n in counts.items() if n == top), key=str), top


class ItemFigures(ABC):
    """Collects one item at a time, then yields the rows sorted by descending consensus."""

    columns: list[str] = []
    sort_note = ""

    def __init__(self, data: StudyData):
        self.data = data
        self.rows: list[tuple] = []  # (sort key tuple, item id, figures...)
        self.position = 0

    @abstractmethod
    def add(self, item_id: int, values: list[Any]) -> None:
        """Take one item's values (each task family computes its own figures)."""

    def finish(self) -> None:
        return

    def sorted_rows(self) -> Iterator[tuple[int, list[Any]]]:
        """Each item's figures in sorting order, once: the rows are let go as they are handed out."""
        self.finish()
        rows, self.rows = self.rows, []
        rows.sort(key=lambda r: r[0])
        rows.reverse()
        while rows:
            row = rows.pop()
            yield row[1], list(row[2:])

    def _next_position(self) -> int:
        self.position += 1
        return self.position


class ScaleFigures(ItemFigures):
    columns = [
        "Ratings (n)",
        "Median (consensus)",
        "Mean",
        "SD",
        "Exact agreement %",
        "Adjacent agreement %",
        "Mean absolute deviation",
        "All raters equal",
        "All within one point",
        "Majority rating (ties to higher)",
    ]
    sort_note = "Sorted by descending median, then descending mean, then the item's listed position."

    def __init__(self, data: StudyData):
        super().__init__(data)
        self.pending: list[tuple[int, int, list[float]]] = []
        # Figures of flushed batches, column by column in numpy arrays: a study's 50,000 items
        # cost a few MB here, where a tuple of Python floats per item cost ~20 MB that stayed
        # resident (scattered among the streamed rows) long after the rows were written.
        self.batches: list[dict[str, np.ndarray]] = []
        points = data.scale_points()
        self.points = np.asarray(points) if len(points) >= 2 else None

    def add(self, item_id: int, values: list[Any]) -> None:
        numbers = [n for v in values if (n := self.data.number(item_id, v)) is not None]
        self.pending.append((self._next_position(), item_id, numbers))
        if len(self.pending) >= BATCH:
            self._flush()

    def finish(self) -> None:
        self._flush()

    def _flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        size = len(batch)
        width = max(1, max(len(numbers) for _, _, numbers in batch))
        matrix = np.full((size, width), np.nan)
        n = np.zeros(size, dtype=np.int64)
        top = np.zeros(size, dtype=np.int64)
        window = np.zeros(size, dtype=np.int64)
        for i, (_, _, numbers) in enumerate(batch):
            if numbers:
                matrix[i, : len(numbers)] = numbers
                n[i] = len(numbers)
                top[i] = _modal(numbers)[1]
                window[i] = max(sum(1 for x in numbers if v <= x <= v + 1) for v in set(numbers))
        rated = n > 0
        columns = {
            "position": np.fromiter((b[0] for b in batch), dtype=np.int64, count=size),
            "item_id": np.fromiter((b[1] for b in batch), dtype=np.int64, count=size),
            "n": n,
            "top": top,
            "window": window,
        }
        for name in ("median", "mean", "sd", "mad", "exact", "adjacent", "majority"):
            columns[name] = np.full(size, np.nan)
        if rated.any():
            summary = item_summary(matrix[rated])
            for name in ("median", "mean", "sd", "mad", "exact", "adjacent"):
                columns[name][rated] = getattr(summary, name)
            columns["majority"][rated] = majority_vote(matrix[rated], categories=self.points, tie="higher")
        self.batches.append(columns)

    def sorted_rows(self) -> Iterator[tuple[int, list[Any]]]:
        """Rated items by descending median, then descending mean, then position; unrated items last."""
        self.finish()
        batches, self.batches = self.batches, []
        if not batches:
            return
        c = {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}
        del batches
        unrated = c["n"] == 0
        median = np.where(unrated, 0.0, c["median"])
        mean = np.where(unrated, 0.0, c["mean"])
        for i in np.lexsort((c["position"], -mean, -median, unrated)):
            n = int(c["n"][i])
            if n == 0:
                yield int(c["item_id"][i]), [0, *([None] * 9)]
                continue
            several = n >= 2
            yield (
                int(c["item_id"][i]),
                [
                    n,
                    float(c["median"][i]),
                    float(c["mean"][i]),
                    _num(c["sd"][i]),
                    _pct(int(c["top"][i]) / n) if several else None,
                    _pct(int(c["window"][i]) / n) if several else None,
                    _num(c["mad"][i]),
                    ("yes" if c["exact"][i] == 1 else "no") if several else None,
                    ("yes" if c["adjacent"][i] == 1 else "no") if several else None,
                    _num(c["majority"][i]),
                ],
            )


class LabelFigures(ItemFigures):
    """Nominal answers (binary label, pick one, pairwise choice): the majority label and its share."""

    def __init__(self, data: StudyData):
        super().__init__(data)
        self.pairwise = data.level == Level.PAIRWISE
        self.binary = data.task_type.dichotomous
        self.columns = ["Ratings (n)", "Consensus (majority)", "Exact agreement % (majority share)", "All raters agree"]
        if self.binary:
            positive = data.config.get("positive")
            self.columns.append(f"Share answering {positive!s} %")
            self.sort_note = f"Sorted by descending share answering {positive}, then the item's listed position."
        elif self.pairwise:
            self.columns += [
                "First candidate",
                "Second candidate",
                "First wins",
                "Second wins",
                "Ties",
                "First-candidate win share %",
                "Winner's win share %",
            ]
            self.sort_note = (
                "Sorted by the winner's win share (wins plus half the ties), descending, then the listed position."
            )
        else:
            self.sort_note = "Sorted by descending majority share, then the item's listed position."
        if data.candidate_keys:
            self.columns += ["Consensus candidate text", "Consensus candidate provenance"]

    def add(self, item_id: int, values: list[Any]) -> None:
        position = self._next_position()
        labels = [self.data.label(v) for v in values if v is not None]
        n = len(labels)
        if not n:
            blanks = len(self.columns) - 1
            self.rows.append(((1, 0.0, position), item_id, 0, *([None] * blanks)))
            return
        winners, top = _modal(labels)
        consensus = winners[0] if len(winners) == 1 else "undecided: " + " / ".join(str(w) for w in winners)
        several = n >= 2
        figures: list[Any] = [
            n,
            consensus,
            _pct(top / n) if several else None,
            ("yes" if top == n else "no") if several else None,
        ]
        sort_value = top / n
        if self.binary:
            share = sum(1 for label in labels if label == self.data.config.get("positive")) / n
            figures.append(_pct(share))
            sort_value = share
        elif self.pairwise:
            keys = self.data.candidate_keys.get(item_id, [])
            first, second = (keys + ["", ""])[:2]
            # Each answer's outcome as the task type reads it (``ratings.pairwise``), not its label decoded here.
            outcomes = [outcome_of(self.data.task_type, v, keys) for v in values if v is not None]
            first_wins, second_wins, ties = outcomes.count(1.0), outcomes.count(0.0), outcomes.count(0.5)
            share = (first_wins + 0.5 * ties) / n
            sort_value = max(share, 1.0 - share)
            figures += [first, second, first_wins, second_wins, ties, _pct(share), _pct(sort_value)]
        if self.data.candidate_keys:
            figures += self._candidate(item_id, consensus if len(winners) == 1 else None)
        self.rows.append(((0, -sort_value, position), item_id, *figures))

    def _candidate(self, item_id: int, key: Any) -> list[Any]:
        if key is None or str(key) not in self.data.candidate_keys.get(item_id, []):
            return [None, None]  # no candidate: undecided, a tie, or a value that names none
        return [CandidateRef(item_id, str(key)), self.data.candidate_provenance.get((item_id, str(key)))]


class VoteFigures(ItemFigures):
    columns = [
        "Ratings (n)",
        "Votes cast",
        "Most-voted candidate",
        "Its share of the votes %",
        "Votes per candidate",
        "Most-voted candidate text",
        "Most-voted candidate provenance",
    ]
    sort_note = "Sorted by the most-voted candidate's share of the votes, descending, then the listed position."

    def add(self, item_id: int, values: list[Any]) -> None:
        position = self._next_position()
        totals: Counter = Counter()
        n = 0
        for value in values:
            if isinstance(value, dict) and isinstance(value.get("votes"), dict):
                n += 1
                totals.update({str(k): int(c) for k, c in value["votes"].items()})
        cast = sum(totals.values())
        if not cast:
            self.rows.append(((1, 0.0, position), item_id, n, 0, *([None] * 5)))
            return
        winners, top = _modal(list(totals.elements()))
        key = winners[0] if len(winners) == 1 else None
        label = key if key is not None else "undecided: " + " / ".join(winners)
        share = top / cast
        self.rows.append(
            (
                (0, -share, position),
                item_id,
                n,
                cast,
                label,
                _pct(share),
                dict(sorted(totals.items())),
                CandidateRef(item_id, key) if key else None,
                self.data.candidate_provenance.get((item_id, key)) if key else None,
            )
        )


class BestWorstFigures(ItemFigures):
    columns = [
        "Ratings (n)",
        "Top candidate",
        "Its best–worst score",
        "Best–worst score per candidate",
        "Top candidate text",
        "Top candidate provenance",
    ]
    sort_note = (
        "Sorted by the top candidate's best–worst score (times chosen best − times chosen worst, over the "
        "item's judgments), descending, then the listed position."
    )

    def add(self, item_id: int, values: list[Any]) -> None:
        position = self._next_position()
        keys = self.data.candidate_keys.get(item_id, [])
        net: Counter = Counter(dict.fromkeys(keys, 0))
        n = 0
        for value in values:
            try:
                picks = self.data.task_type.picks(value)
                best, worst = picks[PICK_BEST], picks[PICK_WORST]
            except (KeyError, TypeError):
                continue
            n += 1
            net[str(best)] += 1
            net[str(worst)] -= 1
        if not n:
            self.rows.append(((1, 0.0, position), item_id, 0, *([None] * 5)))
            return
        scores = {key: count / n for key, count in sorted(net.items())}
        top = max(scores.values())
        leaders = sorted(key for key, score in scores.items() if score == top)
        key = leaders[0] if len(leaders) == 1 else None
        label = key if key is not None else "undecided: " + " / ".join(leaders)
        self.rows.append(
            (
                (0, -top, position),
                item_id,
                n,
                label,
                round(top, 4),
                {k: round(v, 4) for k, v in scores.items()},
                CandidateRef(item_id, key) if key else None,
                self.data.candidate_provenance.get((item_id, key)) if key else None,
            )
        )


class TextFigures(ItemFigures):
    columns = ["Answers (n)"]
    sort_note = (
        "Written answers have no consensus; items keep their listed order. The answers are on the Ratings sheet."
    )

    def add(self, item_id: int, values: list[Any]) -> None:
        self.rows.append(((self._next_position(),), item_id, len(values)))


def figures_for(data: StudyData) -> ItemFigures:
    if data.is_scale:
        return ScaleFigures(data)
    if data.level == Level.COUNTS:
        return VoteFigures(data)
    if data.level == Level.BEST_WORST:
        return BestWorstFigures(data)
    if data.level == Level.TEXT:
        return TextFigures(data)
    return LabelFigures(data)
