# SPDX-License-Identifier: GPL-3.0-or-later
"""Every figure comes out as a real PNG and well-formed SVG, and names stay inert text."""

import xml.etree.ElementTree as ET

import pytest

from ratings import plots

SVG_NS = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert(1)</script>"


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
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_figure_is_valid_png_and_svg(name):
    check(FIGURES[name]())


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
