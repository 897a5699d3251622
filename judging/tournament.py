"""HumorRank scheduling: which contestants meet on which prompt. Plain Python and numpy, no Django.

Contestants are indices 0…K−1; prompt p offers a candidate from each contestant
in ``available[p]``. A match is (prompt, i, j).

- Round robin: every pair of contestants on every prompt where both have a
  candidate, i.e. C(K, 2) × P matches (fewer if a budget cuts it short).
- Adaptive Swiss pairing under a budget C_max: repeat rounds. Refit the
  Bradley–Terry ratings, then pair contestants greedily, most informative pair
  first, each contestant at most once per round; judge the round, refit, and
  stop when C_max matches have been scheduled. A pair is the more informative
  the less its current order is settled: the rating gap in standard errors of
  that gap, ``z = |R_i − R_j| / se(R_i − R_j)``, with the standard error taken
  from the Bradley–Terry information of every game scheduled so far (direct
  and through third contestants, plus a small prior of virtual games so it is
  finite from the start). Close ratings and under-sampled pairs both give a
  small z, so the first rounds (all ratings equal) spread over the table like
  a classic Swiss system and later rounds concentrate on neighbours whose
  order is still in doubt; a contestant cut off from the rest (a cluster that
  only met itself) has large standard errors towards the others and is linked
  back. Equal z goes to the pair with fewer games, then to the pair higher in
  the table. A round takes only pairs within one standard error of its most
  doubtful pair, so a leftover far pair does not fill it with a foregone match
  (rounds can be smaller than K / 2). A pair never meets twice on the same prompt; each pairing uses the
  prompt used least so far among those the pair has not met on, and shows the
  two contestants in a random order.

  (The first version capped every pair at the average count plus one, which
  kept the schedule close to uniform: neighbours were 22–29% of the matches in
  every quarter of a run, as with random pairs.)

Every scheduled match counts against the budget whether or not the judge
answered it, since the budget bounds the calls made.
"""

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

Match = tuple[int, int, int]  # prompt, contestant i, contestant j


def _pair(i: int, j: int) -> tuple[int, int]:
    return (i, j) if i < j else (j, i)


@dataclass
class Schedule:
    n_contestants: int
    available: list[frozenset[int]]
    played: dict[tuple[int, int], set[int]] = field(default_factory=dict)
    prompt_use: Counter = field(default_factory=Counter)
    scheduled: int = 0

    @classmethod
    def full(cls, n_contestants: int, n_prompts: int) -> "Schedule":
        everyone = frozenset(range(n_contestants))
        return cls(n_contestants, [everyone] * n_prompts)

    def record(self, matches: Sequence[Match]) -> None:
        for prompt, i, j in matches:
            self.played.setdefault(_pair(i, j), set()).add(prompt)
            self.prompt_use[prompt] += 1
            self.scheduled += 1

    def open_prompts(self, i: int, j: int) -> list[int]:
        used = self.played.get(_pair(i, j), set())
        return [p for p, who in enumerate(self.available) if i in who and j in who and p not in used]

    def pair_count(self, i: int, j: int) -> int:
        return len(self.played.get(_pair(i, j), ()))

    @property
    def capacity(self) -> int:
        """Matches a full round robin holds."""
        return sum(math.comb(len(who), 2) for who in self.available)


def round_robin(schedule: Schedule, *, budget: int | None = None) -> list[Match]:
    """Every pair on every prompt not yet played, prompt by prompt, up to the budget."""
    room = _room(schedule, budget)
    matches = []
    for prompt, who in enumerate(schedule.available):
        for i in sorted(who):
            for j in sorted(who):
                if i < j and prompt not in schedule.played.get((i, j), set()):
                    matches.append((prompt, i, j))
    return matches[:room]


def _room(schedule: Schedule, budget: int | None) -> int:
    limit = schedule.capacity if budget is None else min(budget, schedule.capacity)
    return max(0, limit - schedule.scheduled)


#: Below this many prompts the round robin is the better schedule: on a 20-prompt study adaptive Swiss at a
#: quarter of the round robin's budget ranks the true strengths clearly worse than the round robin does
#: (bench/bench_swiss.py, docs/judging.md), so the tournament page recommends the round robin there.
SWISS_MIN_PROMPTS = 100


def swiss_recommended(n_prompts: int) -> bool:
    """Whether adaptive Swiss is worth its saving on a study of ``n_prompts`` prompts (else: round robin)."""
    return n_prompts >= SWISS_MIN_PROMPTS


#: Elo points per natural-log unit of strength.
ELO_PER_LOGIT = 400 / math.log(10)
#: Virtual games between every two contestants in the standard errors only (never in the ratings),
#: so that a pair nobody has played yet has a large but finite error.
PRIOR_GAMES = 0.1


#: A round takes only pairs within this many standard errors of its most doubtful pair, so the far
#: pairs left over once the near ones are taken do not fill the round with foregone matches.
SETTLED_MARGIN = 1.0


def gap_doubt(schedule: Schedule, ratings: Sequence[float]) -> np.ndarray:
    """K × K: each rating gap in standard errors of the gap (small = the pair's order is in doubt)."""
    k = schedule.n_contestants
    r = np.asarray(ratings, dtype=float) / ELO_PER_LOGIT
    p = 1.0 / (1.0 + np.exp(r[None, :] - r[:, None]))  # P(i beats j)
    games = np.full((k, k), PRIOR_GAMES)
    for (i, j), prompts in schedule.played.items():
        games[i, j] += len(prompts)
        games[j, i] += len(prompts)
    weight = games * p * (1 - p)
    np.fill_diagonal(weight, 0.0)
    information = np.diag(weight.sum(axis=1)) - weight  # the Fisher information of BT strengths (a Laplacian)
    cov = np.linalg.pinv(information)
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    se = ELO_PER_LOGIT * np.sqrt(np.maximum(var, 1e-12))
    return np.abs(r[:, None] - r[None, :]) * ELO_PER_LOGIT / se


def swiss_round(
    schedule: Schedule, ratings: Sequence[float], *, rng: random.Random, budget: int | None = None
) -> list[Match]:
    """One round of adaptive Swiss pairings (see module docstring); empty when nothing is left."""
    room = _room(schedule, budget)
    if room == 0:
        return []
    k = schedule.n_contestants
    jitter = [rng.random() for _ in range(k)]
    table = {c: place for place, c in enumerate(sorted(range(k), key=lambda c: (-ratings[c], jitter[c])))}
    doubt_of = gap_doubt(schedule, ratings)
    options = []
    for i in range(k):
        for j in range(i + 1, k):
            if not schedule.open_prompts(i, j):
                continue
            games = schedule.pair_count(i, j)
            doubt = round(float(doubt_of[i, j]), 6)  # rounded so that equal gaps tie exactly
            options.append((doubt, games, min(table[i], table[j]), max(table[i], table[j]), i, j))
    if not options:
        return []
    options.sort()
    # The rest are settled next to the round's most doubtful pair: leave them for later rounds.
    eligible = [(i, j) for doubt, *_rank, i, j in options if doubt <= options[0][0] + SETTLED_MARGIN]
    use = Counter(schedule.prompt_use)
    matches: list[Match] = []
    for i, j in _pairing(eligible, k)[:room]:
        prompt = min(schedule.open_prompts(i, j), key=lambda p: (use[p], rng.random()))
        use[prompt] += 1
        first, second = (i, j) if rng.random() < 0.5 else (j, i)
        matches.append((prompt, first, second))
    return matches


def _pairing(ranked: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """Pairs from ``ranked`` (most wanted first), taken greedily, each contestant at most once.

    Greedy on purpose: an exhaustive search for the most pairs per round fills
    rounds with the leftover, less doubtful pairs and concentrates less on the
    neighbours that decide the ranking (bench/bench_swiss.py).
    """
    taken: set[int] = set()
    pairs = []
    for i, j in ranked:
        if i not in taken and j not in taken:
            taken.update((i, j))
            pairs.append((i, j))
            if len(taken) >= k - 1:
                break
    return pairs


@dataclass(frozen=True)
class Outcome:
    prompt: int
    i: int
    j: int
    score: float  # 1: i won, 0.5: tie, 0: j won


def simulate(
    *,
    schedule: Schedule,
    judge: Callable[[Match], float | None],
    fit: Callable[[list[Outcome]], list[float]],
    mode: str,
    budget: int | None,
    rng: random.Random,
) -> list[Outcome]:
    """Play a whole tournament in memory with a judge function (for tests and planning)."""
    outcomes: list[Outcome] = []
    while True:
        if mode == "round_robin":
            matches = round_robin(schedule, budget=budget)
        else:
            ratings = fit(outcomes) if outcomes else [0.0] * schedule.n_contestants
            matches = swiss_round(schedule, ratings, rng=rng, budget=budget)
        if not matches:
            return outcomes
        schedule.record(matches)
        for match in matches:
            score = judge(match)
            if score is not None:
                outcomes.append(Outcome(*match, score))
