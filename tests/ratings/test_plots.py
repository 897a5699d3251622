# SPDX-License-Identifier: GPL-3.0-or-later
"""Every figure comes out as a real PNG and well-formed SVG, and names stay inert text."""

import xml.etree.ElementTree as ET

import pytest

from ratings import plots

SVG_NS = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert(1)</script>"
MARKUP = "<b>$x$"  # markup for the SVG and mathtext for matplotlib: must come out as these six characters


def check(plot: plots.Plot) -> ET.Element:
    assert plot.png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(plot.png) > 1000
    root = ET.fromstring(plot.svg)  # noqa: S314 - our own renderer's output, parsed to prove it is well-formed
    assert root.tag == f"{SVG_NS}svg"
    return root


def texts(root: ET.Element) -> str:
    return " ".join("".join(el.itertext()) for el in root.iter(f"{SVG_NS}text"))


FIGURES = {
    "leaderboard": lambda: plots.leaderboard(
        [
            {
                "label": "humans",
                "names": ["a", "b", "c"],
                "ratings": [1100, 1000, 900],
                "ci_low": [1050, 950, 850],
                "ci_high": [1150, 1050, 950],
            },
            {
                "label": "judge",
                "names": ["a", "b"],
                "ratings": [1020, 980],
                "ci_low": [990, 940],
                "ci_high": [1060, 1010],
            },
        ]
    ),
    "win_rates": lambda: plots.win_rate_heatmap(["a", "b"], [[None, 0.75], [0.25, None]], title="Win rates"),
    "distributions": lambda: plots.rating_distributions(
        ["ann", "gpt"], [[1, 2, 3, 0], [0, 0, 4, 2]], [0, 1, 2, 3], kinds=["crowd", "llm"]
    ),
    "spearman": lambda: plots.spearman_heatmap(["ann", "gpt"], [[1.0, 0.4], [0.4, None]]),
    "confusion": lambda: plots.confusion_matrix(
        [[3, 1, 0], [0, 2, 1]], ["bad", "good"], judge="gpt", reference="humans"
    ),
    "features": lambda: plots.feature_heatmap(
        ["m0", "m1"], ["win:wordplay", "loss:cliché"], [[0.5, None], [0.25, 1.0]], judge="gpt"
    ),
    "bar_chart": lambda: plots.bar_chart(["gpt", "crowd"], [0.8, 0.6], title="Accuracy", xlabel="accuracy"),
    "scatter": lambda: plots.scatter(
        [("gpt", [0.5, 1.5, 2.5], [1.0, 1.2, 2.0])], title="Task 1", xlabel="gold", ylabel="predicted"
    ),
    "line_chart": lambda: plots.line_chart(
        ["0–1", "1–2"], [("gpt", [0.4, None])], title="MAE", xlabel="bin", ylabel="MAE"
    ),
    "histogram": lambda: plots.histogram([0.4, 1.2, 1.3], bins=[0, 1, 2, 3], title="Grades", xlabel="g", ylabel="n"),
    "heatmap": lambda: plots.heatmap(["gpt"], ["pun", "irony"], [[0.5, None]], title="Accuracy by joke type"),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_figure_is_valid_png_and_svg(name):
    check(FIGURES[name]())


# The report's column shows a figure at most this wide (main is 60rem); a wider PNG is scaled down with its text.
SHOWN_WIDTH_PX = 900
MIN_TEXT_PX = 10


def smallest_text_shown(plot: plots.Plot) -> float:
    """The smallest text of the figure in CSS pixels, as the report page shows it."""
    import re

    from PIL import Image

    root = check(plot)
    svg_width = float(root.get("width").removesuffix("pt"))
    png_width = Image.open(__import__("io").BytesIO(plot.png)).size[0]
    px_per_unit = min(png_width, SHOWN_WIDTH_PX) / svg_width
    sizes = [float(m) for m in re.findall(r"font-size: ([\d.]+)px", plot.svg)]
    assert sizes, "no text found"
    return min(sizes) * px_per_unit


BIG_FEATURES = [f"win: feature number {i}" for i in range(30)]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_figures_text_is_legible_at_page_size(name):
    assert smallest_text_shown(FIGURES[name]()) >= MIN_TEXT_PX


def test_a_feature_heatmap_of_many_features_grows_down_and_stays_legible():
    contestants = [f"model-{i}" for i in range(6)]
    shares = [[(i * j % 10) / 10 for j in range(len(BIG_FEATURES))] for i in range(len(contestants))]
    plot = plots.feature_heatmap(contestants, BIG_FEATURES, shares, judge="gpt")
    assert smallest_text_shown(plot) >= MIN_TEXT_PX
    assert "feature number 29" in texts(check(plot))


def test_an_empty_figure_says_why():
    root = check(plots.leaderboard([]))
    assert "No pairwise judgments" in texts(root)


class TestUntrustedNames:
    def test_a_script_name_is_escaped_text_in_the_svg(self):
        plot = plots.win_rate_heatmap([EVIL, "b"], [[None, 1.0], [0.0, None]], title="Win rates")
        root = check(plot)
        assert not [el for el in root.iter() if el.tag.lower().endswith("script")]
        assert "<script>" not in plot.svg
        assert "&lt;script&gt;" in plot.svg
        assert "<script>alert(1)" in texts(root)

    def test_a_script_name_in_the_leaderboard_stays_inert(self):
        plot = plots.leaderboard(
            [
                {
                    "label": EVIL,
                    "names": [EVIL, "x"],
                    "ratings": [1010, 990],
                    "ci_low": [1000, 980],
                    "ci_high": [1020, 1000],
                }
            ]
        )
        root = check(plot)
        assert not [el for el in root.iter() if el.tag.lower().endswith("script")]
        assert "<script>" not in plot.svg

    def test_dollar_signs_are_not_read_as_mathtext(self):
        root = check(plots.spearman_heatmap(["costs $5", "$x^2$ model"], [[1.0, 0.1], [0.1, 1.0]]))
        assert "$x^2$ model" in texts(root)


# The general charts the protocol reports draw: each with a label that is markup and mathtext at once.
CHARTS = {
    "bar_chart": lambda label: plots.bar_chart(
        [label, "b"], [0.5, 0.25], title=label, xlabel=label, reference=0.3, value_format=".0%", limits=(0, 1)
    ),
    "scatter": lambda label: plots.scatter(
        [(label, [0.0, 1.0], [0.5, 1.5])],
        title=label,
        xlabel=label,
        ylabel="y",
        diagonal="perfect prediction",
        reference=1.0,
        reference_label=label,
        limits=(-0.1, 3.1),
    ),
    "line_chart": lambda label: plots.line_chart(
        [label, "1–2"],
        [(label, [0.5, 0.4]), ("baseline", [0.6, None])],
        title=label,
        xlabel="x",
        ylabel="y",
        dashed={"baseline"},
    ),
    "histogram": lambda label: plots.histogram(
        [0.2, 0.4, 2.9], bins=[0, 1, 2, 3], title=label, xlabel=label, ylabel="n"
    ),
    "heatmap": lambda label: plots.heatmap([label], [label, "b"], [[0.5, None]], title=label, colorbar=label),
}
EMPTY = {
    "bar_chart": lambda **kw: plots.bar_chart([], [], title="t", xlabel="x", **kw),
    "scatter": lambda **kw: plots.scatter([], title="t", xlabel="x", ylabel="y", **kw),
    "line_chart": lambda **kw: plots.line_chart([], [], title="t", xlabel="x", ylabel="y", **kw),
    "histogram": lambda **kw: plots.histogram([], bins=[0, 1], title="t", xlabel="x", ylabel="y", **kw),
    "heatmap": lambda **kw: plots.heatmap([], [], [], title="t", **kw),
}


class TestCharts:
    @pytest.mark.parametrize("name", sorted(CHARTS))
    def test_a_label_with_markup_and_dollars_is_inert_literal_text(self, name):
        plot = CHARTS[name](MARKUP)
        root = check(plot)
        assert "<b>" not in plot.svg
        assert "&lt;b&gt;" in plot.svg
        assert MARKUP in texts(root)
        assert "\\$" not in texts(root)

    @pytest.mark.parametrize("name", sorted(EMPTY))
    def test_no_data_gives_the_no_data_figure(self, name):
        assert plots.NO_DATA in texts(check(EMPTY[name]()))

    @pytest.mark.parametrize("name", sorted(EMPTY))
    def test_the_no_data_figure_says_what_the_caller_says_in_full(self, name):
        message = "No judge has graded the headlines of this study yet."  # longer than a label may be
        assert message in texts(check(EMPTY[name](empty=message)))

    def test_a_long_title_is_kept_whole_and_a_long_label_is_shortened(self):
        title = "Accuracy against the majority label, by joke type and source"
        name = "a judge whose name is much longer than forty characters"
        found = texts(check(plots.bar_chart([name], [0.5], title=title, xlabel="accuracy")))
        assert title in found
        assert name not in found and name[: plots.MAX_LABEL - 1] + "…" in found

    def test_a_heatmap_writes_each_value_and_a_dash_for_none(self):
        found = texts(check(plots.heatmap(["gpt"], ["pun", "irony"], [[0.5, None]], title="t", fmt=".1f")))
        assert "0.5" in found and "—" in found


def test_a_confusion_matrix_title_shows_a_judges_dollar_sign_once():
    root = check(plots.confusion_matrix([[1, 0, 0], [0, 1, 0]], ["bad", "good"], judge="$5 model", reference="humans"))
    assert "humans vs $5 model" in texts(root)
    assert "\\$" not in texts(root)
