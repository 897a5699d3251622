# SPDX-License-Identifier: GPL-3.0-or-later
"""Published worked examples and data generators shared by the statistics tests."""

import numpy as np

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": four
# observers (A–D) × twelve units, '.' = missing.  Stored items × raters.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T

# Shrout & Fleiss (1979), Table 2: six targets rated by four judges.
SHROUT_FLEISS = np.array(
    [
        [9, 2, 5, 8],
        [6, 1, 3, 2],
        [8, 4, 6, 8],
        [7, 1, 2, 6],
        [10, 5, 6, 9],
        [6, 2, 4, 7],
    ],
    dtype=float,
)


def random_ratings(
    seed: int, n_items: int = 60, n_raters: int = 5, n_cats: int = 4, missing: float = 0.0, signal: float = 1.0
) -> np.ndarray:
    """Ordinal 0..n_cats-1 ratings sharing a latent item score, with optional gaps."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n_items, 1)) * signal
    noisy = latent + rng.normal(size=(n_items, n_raters))
    cuts = np.quantile(noisy, np.linspace(0, 1, n_cats + 1)[1:-1])
    values = np.digitize(noisy, cuts).astype(float)
    if missing:
        values[rng.random(values.shape) < missing] = NAN
    return values
