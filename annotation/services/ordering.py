"""Reproducible orders: each rater's item order and each assignment's candidate order."""

import hashlib
import random

import numpy as np

from ..models import Study

_MASK64 = (1 << 64) - 1
_ROUNDS = 6


def _digest(*parts: object) -> int:
    text = ":".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def _mix(value: int, key: int) -> int:
    """A 64-bit mixing function (splitmix64's finaliser over value ^ key): one Feistel round's scrambler."""
    x = ((value ^ key) * 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class ItemWalk:
    """The order in which one rater meets a study's item positions, one step at a time.

    The study's configured order, as a permutation of the positions ``0 .. span - 1``
    that can be computed at any step without looking at the other items: the rater's
    place in it is one number (``Enrollment.walked``), and the next items are found by
    looking up the next few positions in the item index. As listed: the positions in
    turn. Random: a keyed Feistel network over the smallest even power of two that
    holds ``span``, the same key for everyone (shared random) or one per rater; the
    steps that land beyond ``span`` are skipped. Reproducible from the study's seed,
    the rater and ``span``, which is fixed when the rater's walk starts.
    """

    def __init__(self, *, study: Study, rater_id: int, span: int):
        self.span = span
        # Every rater meets the positions in the same order (as listed, shared random).
        self.shared = study.item_order != Study.ItemOrder.RANDOM_PER_RATER
        self._keys: list[int] = []
        self._half = 0
        if study.item_order == Study.ItemOrder.AS_LISTED:
            self.steps = span
            return
        bits = max(2, (max(span, 1) - 1).bit_length())
        self._half = (bits + 1) // 2
        self.steps = 1 << (2 * self._half)
        key = (
            _digest(study.seed) if study.item_order == Study.ItemOrder.SHARED_RANDOM else _digest(study.seed, rater_id)
        )
        self._keys = [_digest("walk", key, r) for r in range(_ROUNDS)]

    def position_at(self, step: int) -> int:
        """The position met at ``step`` (0-based); may be ``span`` or more, meaning none."""
        if not self._keys:
            return step
        mask = (1 << self._half) - 1
        left, right = step >> self._half, step & mask
        for key in self._keys:
            left, right = right, left ^ (_mix(right, key) & mask)
        return (left << self._half) | right

    def step_of(self, position: int) -> int:
        """The step at which ``position`` is met: the inverse of ``position_at``."""
        if not self._keys:
            return position
        mask = (1 << self._half) - 1
        left, right = position >> self._half, position & mask
        for key in reversed(self._keys):
            left, right = right ^ (_mix(left, key) & mask), left
        return (left << self._half) | right

    def positions(self, start: int, count: int) -> list[tuple[int, int]]:
        """(step, position) for the steps ``start .. start + count - 1`` that land on a position:
        ``position_at`` on an array, so a long stretch of the walk costs array operations, not a loop."""
        stop = min(start + count, self.steps)
        if stop <= start:
            return []
        steps = np.arange(start, stop, dtype=np.uint64)
        if not self._keys:
            return list(zip(range(start, stop), range(start, stop), strict=True))
        half, mask = np.uint64(self._half), np.uint64((1 << self._half) - 1)
        left, right = steps >> half, steps & mask
        with np.errstate(over="ignore"):
            for key in self._keys:
                left, right = right, left ^ (_mix_array(right, key) & mask)
        found = (left << half) | right
        inside = found < np.uint64(self.span)
        return list(zip(steps[inside].tolist(), found[inside].tolist(), strict=True))


def _mix_array(value: np.ndarray, key: int) -> np.ndarray:
    """``_mix`` on an array of uint64 (its products wrap modulo 2**64, as ``_mix`` masks them)."""
    x = (value ^ np.uint64(key)) * np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def candidate_rng(*, study: Study, rater_id: int, item_id: int, trial: int = 0) -> random.Random:
    """A seeded generator for the candidate order one rater sees on one item."""
    return random.Random(_digest("candidates", study.seed, rater_id, item_id, trial))  # noqa: S311 - not crypto


def unit_draw(*parts: object) -> float:
    """A reproducible number in [0, 1) for these parts (e.g. whether a rater's n-th item is a passive one)."""
    return _digest("draw", *parts) / float(1 << 64)
