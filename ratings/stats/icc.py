# SPDX-License-Identifier: GPL-3.0-or-later
"""Intraclass correlations: the six Shrout & Fleiss (1979) forms.

All six come from one two-way ANOVA of the items × raters table (items are
Shrout & Fleiss's "targets", raters their "judges"):

* MSR: between-items mean square, ``k · Σ(item mean − grand mean)² / (n − 1)``
* MSC: between-raters mean square, ``n · Σ(rater mean − grand mean)² / (k − 1)``
* MSE: residual mean square, ``SSE / ((n − 1)(k − 1))``
* MSW: within-items mean square, ``(SSC + SSE) / (n (k − 1))``

Forms (k raters, n items):

* ICC(1,1) = (MSR − MSW) / (MSR + (k − 1) MSW)            one-way random
* ICC(2,1) = (MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n)
                                                   two-way random, absolute agreement
* ICC(3,1) = (MSR − MSE) / (MSR + (k − 1) MSE)             two-way mixed, consistency
* ICC(1,k) = (MSR − MSW) / MSR
* ICC(2,k) = (MSR − MSE) / (MSR + (MSC − MSE) / n)
* ICC(3,k) = (MSR − MSE) / MSR

Confidence intervals use the F distribution as in Shrout & Fleiss and McGraw &
Wong (1996); ICC(2,·) uses Satterthwaite's approximate degrees of freedom and
ICC(2,k)'s limits are the Spearman–Brown step-up of ICC(2,1)'s.

The ANOVA needs a complete table.  Items with any missing rating are dropped
(after first dropping raters who rated nothing); the result says how many
items were kept and dropped, and carries warnings.  When fewer than
``min_items`` complete items remain, no ICC is returned and ``reason`` says why.
"""

from __future__ import annotations

import warnings as _warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ._validation import as_rating_matrix, check_confidence

FORMS: tuple[str, ...] = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
#: Human-readable Shrout & Fleiss names of the forms above.
FORM_LABELS: dict[str, str] = {
    "ICC1": "ICC(1,1)",
    "ICC2": "ICC(2,1)",
    "ICC3": "ICC(3,1)",
    "ICC1k": "ICC(1,k)",
    "ICC2k": "ICC(2,k)",
    "ICC3k": "ICC(3,k)",
}


class IncompleteRatingsWarning(UserWarning):
    """Raised through :mod:`warnings` when an ICC had to drop incomplete items."""


@dataclass(frozen=True)
class ICCEstimate:
    form: str
    value: float
    ci_low: float
    ci_high: float
    f_stat: float
    df1: float
    df2: float
    p_value: float


@dataclass
class ICCResult:
    """All six ICC forms, or ``estimates=None`` with a ``reason``."""

    estimates: dict[str, ICCEstimate] | None
    n_items_used: int
    n_items_dropped: int
    n_raters_used: int
    n_raters_dropped: int
    confidence: float
    warnings: list[str] = field(default_factory=list)
    reason: str | None = None
    mean_squares: dict[str, float] | None = None

    def __getitem__(self, form: str) -> ICCEstimate:
        if self.estimates is None:
            raise KeyError(f"no ICC was computed: {self.reason}")
        return self.estimates[form]


def _anova(x: np.ndarray) -> dict[str, float]:
    n, k = x.shape
    grand = x.mean()
    row_means = x.mean(axis=1)
    col_means = x.mean(axis=0)
    ss_rows = k * np.sum((row_means - grand) ** 2)
    ss_cols = n * np.sum((col_means - grand) ** 2)
    ss_total = np.sum((x - grand) ** 2)
    ss_error = max(ss_total - ss_rows - ss_cols, 0.0)
    return {
        "MSR": ss_rows / (n - 1),
        "MSC": ss_cols / (k - 1),
        "MSE": ss_error / ((n - 1) * (k - 1)),
        "MSW": (ss_cols + ss_error) / (n * (k - 1)),
    }


def _div(a: float, b: float) -> float:
    return float(a / b) if b != 0 else float("nan")


def _forms(ms: dict[str, float], n: int, k: int, confidence: float) -> dict[str, ICCEstimate]:
    msr, msc, mse, msw = ms["MSR"], ms["MSC"], ms["MSE"], ms["MSW"]
    tail = 1.0 - (1.0 - confidence) / 2.0
    df_rows, df_within, df_error = n - 1, n * (k - 1), (n - 1) * (k - 1)

    icc1 = _div(msr - msw, msr + (k - 1) * msw)
    icc2 = _div(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n)
    icc3 = _div(msr - mse, msr + (k - 1) * mse)
    icc1k = _div(msr - msw, msr)
    icc2k = _div(msr - mse, msr + (msc - mse) / n)
    icc3k = _div(msr - mse, msr)

    # One-way model (forms 1): F = MSR / MSW on (n-1, n(k-1)) df.
    f1 = _div(msr, msw)
    f1_low = f1 / stats.f.ppf(tail, df_rows, df_within)
    f1_high = f1 * stats.f.ppf(tail, df_within, df_rows)
    p1 = float(stats.f.sf(f1, df_rows, df_within))
    # Two-way model (forms 2 and 3): F = MSR / MSE on (n-1, (n-1)(k-1)) df.
    f3 = _div(msr, mse)
    f3_low = f3 / stats.f.ppf(tail, df_rows, df_error)
    f3_high = f3 * stats.f.ppf(tail, df_error, df_rows)
    p3 = float(stats.f.sf(f3, df_rows, df_error))

    # ICC(2,1): Satterthwaite degrees of freedom for the denominator mix of
    # MSC and MSE (McGraw & Wong 1996, Table 7).
    a = _div(k * icc2, n * (1.0 - icc2))
    b = 1.0 + _div(k * icc2 * (n - 1), n * (1.0 - icc2))
    v = _div((a * msc + b * mse) ** 2, (a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / df_error)
    if np.isfinite(v) and v > 0:
        fs_low = stats.f.ppf(tail, df_rows, v)
        fs_high = stats.f.ppf(tail, v, df_rows)
        base = k * msc + (k * n - k - n) * mse
        l2 = _div(n * (msr - fs_low * mse), fs_low * base + n * msr)
        u2 = _div(n * (fs_high * msr - mse), base + n * fs_high * msr)
    else:
        l2 = u2 = float("nan")

    def one_to_k(low: float, high: float) -> tuple[float, float]:
        return (low * k / (1 + low * (k - 1)), high * k / (1 + high * (k - 1)))

    l2k, u2k = one_to_k(l2, u2)
    rows = {
        "ICC1": (icc1, (f1_low - 1) / (f1_low + k - 1), (f1_high - 1) / (f1_high + k - 1), f1, df_within, p1),
        "ICC2": (icc2, l2, u2, f3, df_error, p3),
        "ICC3": (icc3, (f3_low - 1) / (f3_low + k - 1), (f3_high - 1) / (f3_high + k - 1), f3, df_error, p3),
        "ICC1k": (icc1k, 1 - 1 / f1_low, 1 - 1 / f1_high, f1, df_within, p1),
        "ICC2k": (icc2k, l2k, u2k, f3, df_error, p3),
        "ICC3k": (icc3k, 1 - 1 / f3_low, 1 - 1 / f3_high, f3, df_error, p3),
    }
    return {
        form: ICCEstimate(
            form=form,
            value=float(value),
            ci_low=float(low),
            ci_high=float(high),
            f_stat=float(f),
            df1=float(df_rows),
            df2=float(df2),
            p_value=p,
        )
        for form, (value, low, high, f, df2, p) in rows.items()
    }


def icc(
    matrix,
    *,
    confidence: float = 0.95,
    min_items: int = 3,
    warn: bool = True,
    left_out: int = 0,
) -> ICCResult:
    """All six Shrout & Fleiss ICCs of an items × raters matrix (NaN = missing).

    Raters who rated no item are dropped first, then items missing any rating
    (listwise deletion, as the ANOVA needs a complete table).  Every drop is
    reported in ``warnings``; with ``warn=True`` it is also issued as an
    :class:`IncompleteRatingsWarning`.  If fewer than ``min_items`` complete
    items or fewer than two raters remain, ``estimates`` is None and
    ``reason`` explains why.

    ``left_out`` counts items with a single rating that the caller left out
    of ``matrix`` (``ratings.selectors.study_rating_matrix``, paired): they
    are counted as the whole matrix would count them, dropped as incomplete
    when two raters or more remain and complete otherwise. The matrix must
    keep one such item per rater who rated one, so the raters kept are the same.
    """
    arr = as_rating_matrix(matrix)
    confidence = check_confidence(confidence)
    if min_items < 2:
        raise ValueError(f"min_items must be at least 2, got {min_items}")
    notes: list[str] = []
    rater_has_any = ~np.isnan(arr).all(axis=0)
    n_raters_dropped = int((~rater_has_any).sum())
    if n_raters_dropped:
        notes.append(f"dropped {n_raters_dropped} rater(s) who rated no item")
    arr = arr[:, rater_has_any]
    complete = ~np.isnan(arr).any(axis=1)
    n_total = arr.shape[0] + left_out
    n_used = int(complete.sum()) + (left_out if arr.shape[1] < 2 else 0)
    n_dropped = n_total - n_used
    if n_dropped:
        share = n_dropped / n_total
        level = "MOST ITEMS DROPPED: " if share > 0.5 else ""
        notes.append(
            f"{level}dropped {n_dropped} of {n_total} items ({share:.0%}) with a missing rating; "
            f"ICC uses the {n_used} complete items only"
        )
    k = arr.shape[1]

    def done(estimates, reason=None, ms=None) -> ICCResult:
        if warn:
            for note in notes:
                _warnings.warn(note, IncompleteRatingsWarning, stacklevel=3)
        return ICCResult(
            estimates=estimates,
            n_items_used=n_used,
            n_items_dropped=n_dropped,
            n_raters_used=k,
            n_raters_dropped=n_raters_dropped,
            confidence=confidence,
            warnings=notes,
            reason=reason,
            mean_squares=ms,
        )

    if k < 2:
        reason = f"ICC needs at least two raters; {k} rater(s) have ratings"
        notes.append(reason)
        return done(None, reason)
    if n_used < min_items:
        reason = f"only {n_used} complete item(s) remain; at least {min_items} are needed"
        notes.append(reason)
        return done(None, reason)
    x = arr[complete]
    ms = _anova(x)
    if ms["MSR"] == 0 and ms["MSE"] == 0:
        notes.append("no between-item and no residual variance: some ICC forms are undefined (NaN)")
    with np.errstate(divide="ignore", invalid="ignore"):
        estimates = _forms(ms, x.shape[0], k, confidence)
    return done(estimates, None, {key: float(v) for key, v in ms.items()})
