"""HumorRank scheduling: which contestants meet on which prompt. Plain Python, no Django.

Contestants are indices 0…K−1; prompt p offers a candidate from each contestant
in ``available[p]``. A match is (prompt, i, j).

- Round robin: every pair of contestants on every prompt where both have a
  candidate, i.e. C(K, 2) × P matches (fewer if a budget cuts it short).
- Adaptive Swiss pairing under a budget C_max: repeat rounds. Sort contestants
  by their current Bradley–Terry rating; take the top unmatched contestant and
  pair it with the unmatched contestant closest in rating whose pair is
  under-sampled; repeat down the table. Judge the round, refit, and stop when
  C_max matches have been scheduled. A pair is under-sampled while it has met
  fewer times than the average pair plus one (and still has an unused prompt),
  so early rounds spread over the table and later rounds concentrate on
  neighbours; a pair never meets twice on the same prompt. Each pairing uses
  the prompt used least so far among those the pair has not met on.

Every scheduled match counts against the budget whether or not the judge
answered it, since the budget bounds the calls made.
"""

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


def swiss_round(
    schedule: Schedule, ratings: Sequence[float], *, rng: random.Random, budget: int | None = None
) -> list[Match]:
    """One round of adaptive Swiss pairings (see module docstring); empty when nothing is left."""
    room = _room(schedule, budget)
    if room == 0:
        return []
    k = schedule.n_contestants
    n_pairs = max(1, math.comb(k, 2))
    cap = schedule.scheduled // n_pairs + 1
    for _widen in range(max(1, len(schedule.available))):
        matches = _pair_table(schedule, ratings, rng=rng, cap=cap)
        if matches:
            return matches[:room]
        cap += 1
    return []


def _pair_table(schedule: Schedule, ratings: Sequence[float], *, rng: random.Random, cap: int) -> list[Match]:
    k = schedule.n_contestants
    jitter = [rng.random() for _ in range(k)]
    unmatched = sorted(range(k), key=lambda c: (-ratings[c], jitter[c]))
    use = Counter(schedule.prompt_use)
    matches: list[Match] = []
    while len(unmatched) >= 2:
        top = unmatched.pop(0)
        options = [c for c in unmatched if schedule.pair_count(top, c) < cap and schedule.open_prompts(top, c)]
        if not options:
            continue
        rival = min(options, key=lambda c: (abs(ratings[c] - ratings[top]), schedule.pair_count(top, c), jitter[c]))
        unmatched.remove(rival)
        prompt = min(schedule.open_prompts(top, rival), key=lambda p: (use[p], rng.random()))
        use[prompt] += 1
        matches.append((prompt, top, rival))
    return matches


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
