# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pieces of the percentile bootstrap used across the package."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

#: Upper bound on the number of resampled indices held in memory at once.
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class BootstrapResult:
    """A point estimate with a percentile bootstrap interval.

    ``p_value`` is filled only by functions that document a bootstrap test;
    ``n_valid`` counts resamples whose statistic was defined (a resample can
    be degenerate, e.g. every item got the same label, and is then skipped).
    ``samples`` holds every resample's statistic (NaN where undefined).
    """

    estimate: float
    ci_low: float
    ci_high: float
    confidence: float
    n_resamples: int
    n_valid: int
    seed: int | None
    p_value: float | None = None
    n: int = 0
    warnings: list[str] = field(default_factory=list)
    samples: np.ndarray | None = field(default=None, repr=False)


def resample_blocks(rng: np.random.Generator, n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Yield blocks of resampled index rows (shape: block × n), drawn with replacement."""
    per_block = max(1, _CHUNK_CELLS // max(n, 1))
    done = 0
    while done < n_resamples:
        size = min(per_block, n_resamples - done)
        yield rng.integers(0, n, size=(size, n))
        done += size


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float, int]:
    """Percentile interval of the finite samples, and how many were finite."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan"), 0
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high), int(finite.size)


def summarise(
    estimate: float,
    samples: np.ndarray,
    *,
    confidence: float,
    seed: int | None,
    n: int,
    p_value_at_or_below: float | None = None,
) -> BootstrapResult:
    """Build a BootstrapResult; optionally the share of resamples ≤ a null value."""
    low, high, n_valid = percentile_interval(samples, confidence)
    warnings: list[str] = []
    if n_valid < samples.size:
        warnings.append(
            f"{samples.size - n_valid} of {samples.size} resamples gave an undefined "
            "statistic and were left out of the interval"
        )
    p_value = None
    if p_value_at_or_below is not None and n_valid:
        finite = samples[np.isfinite(samples)]
        p_value = float(np.mean(finite <= p_value_at_or_below))
    return BootstrapResult(
        estimate=float(estimate),
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        n_resamples=int(samples.size),
        n_valid=n_valid,
        seed=seed,
        p_value=p_value,
        n=n,
        warnings=warnings,
        samples=samples,
    )
