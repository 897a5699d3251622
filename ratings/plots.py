# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the alignment and protocol reports, drawn on the server with matplotlib's Agg backend.

Every function takes plain lists (the arrays stored with a report) and returns
a :class:`Plot` holding PNG bytes and SVG text of the same figure; with no data
it returns a one-line figure saying so. The general charts (:func:`bar_chart`,
:func:`scatter`, :func:`line_chart`, :func:`histogram`, :func:`heatmap`) serve the
protocol reports; the named figures below them, the alignment report. Figures
are built with ``matplotlib.figure.Figure`` directly, never ``pyplot``, so no
global state is shared between requests or threads.

Labels are researcher data (rater names, contestant names, metadata values):
:func:`_text` escapes matplotlib's mathtext dollar signs and shortens long
names; the SVG writer keeps text as text (``svg.fonttype: none``) and
escapes ``<``, ``>`` and ``&``, so a name such as ``<script>`` stays inert.
"""

from __future__ import annotations

import io
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib import rc_context  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

MAX_LABEL = 40
# The figures are shown in the report's column (main is 60rem, about 900 px) at 100 dpi: a figure no wider
# than this many inches is shown at its own size, so its 9-point text reads 12.5 px. A wider one would be
# scaled down with its text (the feature heatmap's numbers were 6 px high).
MAX_WIDTH_INCHES = 9.0
# A heatmap writes its values in the cells only when a cell is at least this wide (inches); else the colour bar says.
MIN_CELL_FOR_TEXT = 0.42
NO_DATA = "No data yet."
RC = {"svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "figure.dpi": 100}
PALETTE = ["#2753c9", "#c0392b", "#1d7a3a", "#9a5b00", "#6b3fa0", "#0f7c8c", "#a0306b", "#555566"]


@dataclass(frozen=True)
class Plot:
    png: bytes
    svg: str


def _short(value: object, limit: int | None = MAX_LABEL) -> str:
    text = str(value).replace("\n", " ")
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object, limit: int | None = MAX_LABEL) -> str:
    """A label safe for matplotlib: no mathtext, at most ``limit`` characters (None for titles)."""
    return _short(value, limit).replace("$", r"\$")


def _render(fig: Figure) -> Plot:
    FigureCanvasAgg(fig)
    png, svg = io.BytesIO(), io.BytesIO()
    with rc_context(RC):
        fig.savefig(png, format="png", bbox_inches="tight")
        fig.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None})
    return Plot(png=png.getvalue(), svg=svg.getvalue().decode("utf-8"))


def _figure(width: float, height: float) -> Figure:
    with rc_context(RC):
        return Figure(figsize=(min(width, MAX_WIDTH_INCHES), height), layout="constrained")


def _empty(message: str) -> Plot:
    with rc_context(RC):
        fig = _figure(5, 1.2)
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, _text(message, None), ha="center", va="center")
        return _render(fig)


def _label(ax: Axes, *, title: str, xlabel: str = "", ylabel: str = "") -> None:
    ax.set_title(_text(title, None))
    ax.set_xlabel(_text(xlabel, None))
    ax.set_ylabel(_text(ylabel, None))


def _matrix(values: Sequence[Sequence[float | None]]) -> np.ndarray:
    if not len(values):
        return np.empty((0, 0))
    rows = [[np.nan if v is None else float(v) for v in row] for row in values]
    return np.array(rows, dtype=float).reshape(len(values), -1)


# -- general charts, for the protocol reports ---------------------------------------------------


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    title: str,
    xlabel: str,
    reference: float | None = None,
    value_format: str = "",
    limits: tuple[float, float] | None = None,
    empty: str = NO_DATA,
) -> Plot:
    """Horizontal bars, the first label on top; ``reference`` draws a dotted line across them (a
    filter, chance, zero) and ``value_format`` writes each value beside its bar."""
    if not labels:
        return _empty(empty)
    with rc_context(RC):
        fig = _figure(6.0, max(2.2, 0.8 + 0.35 * len(labels)))
        ax = fig.add_subplot()
        positions = range(len(labels))
        ax.barh(positions, values, color=PALETTE[0])
        ax.set_yticks(positions, [_text(label) for label in labels])
        ax.invert_yaxis()
        if reference is not None:
            ax.axvline(reference, color="#999", linewidth=0.8, linestyle=":")
        if value_format:
            for y, value in enumerate(values):
                ax.text(value, y, f" {value:{value_format}}", va="center")
        if limits:
            ax.set_xlim(*limits)
        _label(ax, title=title, xlabel=xlabel)
        return _render(fig)


def scatter(
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    diagonal: str = "",
    reference: float | None = None,
    reference_label: str = "",
    limits: tuple[float, float] | None = None,
    empty: str = NO_DATA,
) -> Plot:
    """One colour per series ``(name, xs, ys)``. ``diagonal`` names a dotted y = x line,
    ``reference`` is the height of a dashed horizontal one; ``limits`` apply to both axes."""
    if not series:
        return _empty(empty)
    with rc_context(RC):
        fig = _figure(5.5, 4.5)
        ax = fig.add_subplot()
        if diagonal:
            ax.axline((0, 0), slope=1, color="#999", linewidth=0.8, linestyle=":", label=_text(diagonal))
        if reference is not None:
            ax.axhline(reference, color="#555", linewidth=0.8, linestyle="--", label=_text(reference_label))
        for k, (name, xs, ys) in enumerate(series):
            ax.scatter(xs, ys, s=14, alpha=0.7, color=PALETTE[k % len(PALETTE)], label=_text(name))
        if limits:
            ax.set_xlim(*limits)
            ax.set_ylim(*limits)
        _label(ax, title=title, xlabel=xlabel, ylabel=ylabel)
        ax.legend(loc="upper left", fontsize=8)
        return _render(fig)


def line_chart(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    dashed: Collection[str] = (),
    empty: str = NO_DATA,
) -> Plot:
    """One line per series ``(name, values)`` over ordered categories (None: no point); the series
    named in ``dashed`` are drawn dashed (a baseline)."""
    if not categories or not series:
        return _empty(empty)
    with rc_context(RC):
        fig = _figure(6, 3.2)
        ax = fig.add_subplot()
        positions = range(len(categories))
        for k, (name, values) in enumerate(series):
            ys = [np.nan if v is None else float(v) for v in values]
            style = "--" if name in dashed else "-"
            ax.plot(positions, ys, style, marker="o", color=PALETTE[k % len(PALETTE)], label=_text(name))
        ax.set_xticks(positions, [_text(c) for c in categories], rotation=60, ha="right", fontsize=8)
        _label(ax, title=title, xlabel=xlabel, ylabel=ylabel)
        ax.legend(fontsize=8)
        return _render(fig)


def histogram(
    values: Sequence[float], *, bins: Sequence[float], title: str, xlabel: str, ylabel: str, empty: str = NO_DATA
) -> Plot:
    """How many values fall in each bin (``bins`` are the edges)."""
    if not len(values):
        return _empty(empty)
    with rc_context(RC):
        fig = _figure(5.5, 3)
        ax = fig.add_subplot()
        ax.hist(
            np.asarray(values, dtype=float), bins=np.asarray(bins, dtype=float), color=PALETTE[0], edgecolor="white"
        )
        _label(ax, title=title, xlabel=xlabel, ylabel=ylabel)
        return _render(fig)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    title: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
    fmt: str = ".2f",
    cmap: str = "viridis",
    xlabel: str = "",
    ylabel: str = "",
    colorbar: str = "",
    empty: str = NO_DATA,
) -> Plot:
    """Rows × columns, each cell coloured and written in ``fmt``; None is an empty cell (a dash)."""
    matrix = _matrix(values)
    if not rows or not columns or not matrix.size:
        return _empty(empty)
    with rc_context(RC):
        width = max(4.0, 1.2 + 0.55 * len(columns))
        height = max(2.5, 1.0 + 0.4 * len(rows))
        fig = _figure(width, height)
        ax = fig.add_subplot()
        image = ax.imshow(np.ma.masked_invalid(matrix), vmin=vmin, vmax=vmax, cmap=cmap, aspect="auto")
        ax.set_xticks(range(len(columns)), [_text(c) for c in columns], rotation=45, ha="right")
        ax.set_yticks(range(len(rows)), [_text(r) for r in rows])
        _label(ax, title=title, xlabel=xlabel, ylabel=ylabel)
        cell_width = (min(width, MAX_WIDTH_INCHES) - 1.2) / len(columns)
        if matrix.size <= 400 and cell_width >= MIN_CELL_FOR_TEXT:
            mid = (vmin + vmax) / 2
            for (i, j), v in np.ndenumerate(matrix):
                label = "—" if math.isnan(v) else format(v, fmt)
                colour = "white" if not math.isnan(v) and (v > mid if cmap != "RdBu" else abs(v) > 0.6) else "black"
                ax.text(j, i, label, ha="center", va="center", color=colour)
        bar = fig.colorbar(image, ax=ax, shrink=0.8)
        if colorbar:
            bar.set_label(_text(colorbar, None))
        return _render(fig)


# -- the alignment report's figures ---------------------------------------------------------


def leaderboard(series: Sequence[dict]) -> Plot:
    """Bradley–Terry ratings with 95% CI bars; one marker colour per ranking (humans, each judge).

    Each series: ``{"label", "names", "ratings", "ci_low", "ci_high"}``. Contestants
    are ordered by the first series' rating.
    """
    series = [s for s in series if s and s.get("names")]
    if not series:
        return _empty("No pairwise judgments to rank.")
    first = series[0]
    order = sorted(first["names"], key=lambda n: first["ratings"][first["names"].index(n)])
    for s in series[1:]:
        order += sorted(n for n in s["names"] if n not in order)
    with rc_context(RC):
        fig = _figure(6.5, max(2.5, 0.8 + 0.38 * len(order) * max(1, len(series)) ** 0.5))
        ax = fig.add_subplot()
        step = 0.7 / max(len(series), 1)
        for k, s in enumerate(series):
            ys, xs, lo, hi = [], [], [], []
            for n, name in enumerate(order):
                if name in s["names"]:
                    i = s["names"].index(name)
                    ys.append(n - 0.35 + step * (k + 0.5))
                    xs.append(s["ratings"][i])
                    lo.append(max(0.0, s["ratings"][i] - s["ci_low"][i]))
                    hi.append(max(0.0, s["ci_high"][i] - s["ratings"][i]))
            ax.errorbar(
                xs, ys, xerr=[lo, hi], fmt="o", capsize=3, color=PALETTE[k % len(PALETTE)], label=_text(s["label"])
            )
        ax.set_yticks(range(len(order)), [_text(n) for n in order])
        ax.axvline(1000, color="#999", linewidth=0.8, linestyle=":")
        ax.set_xlabel("Bradley–Terry rating (Elo scale, mean 1000) with 95% bootstrap CI")
        ax.set_title("Leaderboard")
        ax.legend(loc="lower right", fontsize=8)
        return _render(fig)


def win_rate_heatmap(names: Sequence[str], rates: Sequence[Sequence[float | None]], *, title: str) -> Plot:
    """Cell (i, j): share of the i-vs-j games that i won (ties count half)."""
    return heatmap(
        names,
        names,
        rates,
        title=title,
        xlabel="opponent",
        ylabel="contestant",
        colorbar="win rate",
        empty="No pairwise judgments.",
    )


def rating_distributions(
    raters: Sequence[str], counts: Sequence[Sequence[int]], scale: Sequence[float], *, kinds: Sequence[str] = ()
) -> Plot:
    """Each rater's ratings as a box plot with the individual ratings jittered on top."""
    if not raters:
        return _empty("No ratings.")
    values = [np.repeat(np.asarray(scale, dtype=float), np.asarray(row, dtype=int)) for row in counts]
    with rc_context(RC):
        fig = _figure(max(4.5, 1.2 + 0.6 * len(raters)), 3.6)
        ax = fig.add_subplot()
        rng = np.random.default_rng(0)
        positions = np.arange(1, len(raters) + 1)
        filled = [(p, v) for p, v in zip(positions, values, strict=True) if v.size]
        if filled:
            ax.boxplot([v for _, v in filled], positions=[p for p, _ in filled], widths=0.5, showfliers=False)
        for n, (p, v) in enumerate(zip(positions, values, strict=True)):
            human = not kinds or kinds[n] in ("expert", "crowd")
            colour = PALETTE[0] if human else PALETTE[1]
            ax.scatter(
                p + rng.uniform(-0.18, 0.18, v.size),
                v + rng.uniform(-0.12, 0.12, v.size),
                s=8,
                alpha=0.45,
                color=colour,
            )
        ax.set_xticks(positions, [_text(r) for r in raters], rotation=45, ha="right")
        ax.set_yticks(list(scale))
        ax.set_ylabel("rating")
        ax.set_title("Ratings per rater (blue: humans, red: judges)")
        return _render(fig)


def spearman_heatmap(raters: Sequence[str], rho: Sequence[Sequence[float | None]]) -> Plot:
    """Rater × rater Spearman correlation (pairwise-complete items)."""
    return heatmap(
        raters,
        raters,
        rho,
        title="Spearman ρ between raters",
        vmin=-1.0,
        cmap="RdBu",
        colorbar="ρ",
        empty="No ratings.",
    )


def confusion_matrix(
    table: Sequence[Sequence[int]], labels: Sequence[str], *, judge: str, reference: str, unit: str = "items"
) -> Plot:
    """Reference label (rows) against the judge's answer (columns; the last one is "missing").

    ``unit`` names what a cell counts: items, or verdicts for a pairwise judge asked in both orders.
    """
    values = _matrix(table)
    if values.size == 0:
        return _empty("No items to compare.")
    return heatmap(
        list(labels),
        [*labels, "missing"],
        values,
        title=f"{_short(reference)} vs {_short(judge)}",
        vmax=max(float(np.nanmax(values)), 1.0),
        cmap="Blues",
        fmt=".0f",
        xlabel=f"judge: {_short(judge)}",
        ylabel="human consensus",
        colorbar=unit,
    )


def feature_heatmap(
    contestants: Sequence[str], features: Sequence[str], shares: Sequence[Sequence[float | None]], *, judge: str
) -> Plot:
    """Share of each contestant's wins (``win:``) or losses (``loss:``) carrying each feature.

    The features are the rows: there are many more of them than contestants, and rows
    make the figure taller, never wider than the page (so its numbers stay legible).
    """
    by_feature = [[row[j] if j < len(row) else None for row in shares] for j in range(len(features))]
    return heatmap(
        features,
        contestants,
        by_feature,
        title=f"Features in {_short(judge)}'s verdicts",
        cmap="magma_r",
        colorbar="share of wins / losses",
        empty="No feature lists in the judge's verdicts.",
    )
