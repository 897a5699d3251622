# SPDX-License-Identifier: GPL-3.0-or-later
"""Best–worst scaling by counting: each option's best picks minus its worst picks over its appearances.

The counting score (Orme 2009; Kiritchenko and Mohammad 2017) of an option is
``(times chosen best − times chosen worst) / times shown``, from −1 (always
the worst) to +1 (always the best). It needs no model fit and agrees closely
with multinomial-logit estimates when every option appears about equally
often, which a balanced design gives.

Appearances are counted per candidate shown, not per distinct option: when two
of a set's candidates stand for the same option (two jokes by one model), that
option appears twice in the set. A rater who picks one of them as the best and
the other as the worst has made a valid judgment: the option gets one best and
one worst pick over two appearances, so the set leaves its score where its
other sets put it (its jokes spanned the set's range, neither better nor worse
on balance). Only the same single candidate as both best and worst is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BestWorstScores:
    """Per option, best first: the counting score and the counts behind it."""

    names: list[str]
    scores: list[float]
    best: list[int]
    worst: list[int]
    appearances: list[int]
    n_judgments: int


def best_worst_scores(judgments: Iterable[tuple[Sequence[str], str, str]]) -> BestWorstScores:
    """Counting scores from ``(options shown, best, worst)`` per judgment.

    Raises ValueError when a judgment's best or worst option was not among
    those shown, or names an option shown once for both (see the module docstring
    for an option shown twice).
    """
    shown_n: Counter = Counter()
    best_n: Counter = Counter()
    worst_n: Counter = Counter()
    n = 0
    for shown, best, worst in judgments:
        appearances = Counter(shown)
        if best not in appearances or worst not in appearances:
            raise ValueError(f"the best ({best!r}) and worst ({worst!r}) picks must be among the options shown")
        if best == worst and appearances[best] < 2:
            raise ValueError(f"{best!r} is shown once and cannot be both the best and the worst pick")
        shown_n.update(appearances)
        best_n[best] += 1
        worst_n[worst] += 1
        n += 1
    score = {name: (best_n[name] - worst_n[name]) / shown_n[name] for name in shown_n}
    names = sorted(shown_n, key=lambda name: (-score[name], name))
    return BestWorstScores(
        names=names,
        scores=[score[name] for name in names],
        best=[best_n[name] for name in names],
        worst=[worst_n[name] for name in names],
        appearances=[shown_n[name] for name in names],
        n_judgments=n,
    )
