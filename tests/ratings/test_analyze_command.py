# SPDX-License-Identifier: GPL-3.0-or-later
"""``manage.py analyze``: known values from files, every kind's keys, and bad input."""

import csv
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from openpyxl import Workbook

ROOT = Path(__file__).resolve().parents[2]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4
# observers × 12 units example with missing values; None = not rated.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
KRIPPENDORFF_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}

# Fleiss (1971) as reprinted widely: 10 subjects, 14 raters, 5 categories;
# row i gives how many raters put subject i in each category. Kappa = 0.210.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

AGREEMENT_KEYS = {
    "n_items",
    "n_raters",
    "krippendorff_alpha",
    "icc",
    "fleiss_kappa",
    "exact_agreement",
    "adjacent_agreement",
    "mean_item_sd",
    "mean_pairwise_spearman",
    "warnings",
}
ICC_FORMS = {"ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"}


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def write_xlsx(path, rows):
    book = Workbook()
    sheet = book.active
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


def kripp_wide():
    rows = [["unit", *KRIPPENDORFF_2011]]
    for unit in range(12):
        rows.append([unit + 1, *(KRIPPENDORFF_2011[r][unit] for r in KRIPPENDORFF_2011)])
    return rows


def kripp_long():
    rows = [["item", "rater", "value"]]
    for rater, values in KRIPPENDORFF_2011.items():
        rows += [[f"u{unit + 1}", rater, v] for unit, v in enumerate(values) if v is not None]
    return rows


def fleiss_long():
    rows = [["item", "rater", "value"]]
    for subject, counts in enumerate(FLEISS_COUNTS, start=1):
        rater = 0
        for category, count in enumerate(counts, start=1):
            for _ in range(count):
                rater += 1
                rows.append([f"s{subject}", f"r{rater}", category])
    return rows


def refuse_constant(name):
    raise AssertionError(f"{name} is not valid JSON")


def analyze(*args):
    out = StringIO()
    call_command("analyze", *[str(a) for a in args], "--json", stdout=out)
    return json.loads(out.getvalue())


class TestRatings:
    @pytest.mark.parametrize(
        ("layout", "writer", "suffix"),
        [
            ("wide", write_csv, "csv"),
            ("long", write_csv, "csv"),
            ("wide", write_xlsx, "xlsx"),
            ("long", write_xlsx, "xlsx"),
        ],
    )
    def test_it_reproduces_krippendorffs_2011_example(self, tmp_path, layout, writer, suffix):
        rows = kripp_wide() if layout == "wide" else kripp_long()
        blank = (lambda row: ["" if v is None else v for v in row]) if writer is write_csv else (lambda row: row)
        path = writer(tmp_path / f"kripp.{suffix}", [blank(r) for r in rows])
        result = analyze("ratings", path)
        assert result["layout"] == layout
        assert (result["n_items"], result["n_raters"]) == (12, 4)
        for level, expected in KRIPPENDORFF_ALPHA.items():
            assert result["krippendorff_alpha"][level] == pytest.approx(expected, abs=5e-4)

    def test_it_reproduces_fleiss_kappa_from_long_format(self, tmp_path):
        path = write_csv(tmp_path / "fleiss.csv", fleiss_long())
        result = analyze("ratings", path, "--labels", "1,2,3,4,5")
        assert (result["n_items"], result["n_raters"]) == (10, 14)
        assert result["fleiss_kappa"] == pytest.approx(0.210, abs=5e-4)

    def test_it_reports_every_figure(self, tmp_path):
        path = write_csv(tmp_path / "kripp.csv", [["" if v is None else v for v in r] for r in kripp_wide()])
        result = analyze("ratings", path, "--labels", "1,2,3,4,5")
        assert set(result) >= AGREEMENT_KEYS
        assert set(result["icc"]) == ICC_FORMS
        for entry in result["icc"].values():
            assert set(entry) == {"value", "ci_low", "ci_high"}
            assert entry["ci_low"] <= entry["value"] <= entry["ci_high"]
        # Fleiss needs the same number of ratings per item, which this example lacks.
        assert result["fleiss_kappa"] is None
        assert any("Fleiss" in w for w in result["warnings"])

    def test_undefined_figures_become_null_with_a_warning(self, tmp_path):
        path = write_csv(tmp_path / "same.csv", [["item", "r1", "r2"], ["a", 2, 2], ["b", 2, 2], ["c", 2, 2]])
        out = StringIO()
        call_command("analyze", "ratings", str(path), "--json", stdout=out)
        result = json.loads(out.getvalue(), parse_constant=refuse_constant)
        assert result["krippendorff_alpha"]["nominal"] is None
        assert any("krippendorff_alpha.nominal" in w for w in result["warnings"])

    def test_text_labels_give_only_the_nominal_figures(self, tmp_path):
        rows = [
            ["item", "r1", "r2", "r3"],
            ["a", "yes", "yes", "no"],
            ["b", "no", "no", "no"],
            ["c", "yes", "yes", "yes"],
        ]
        result = analyze("ratings", write_csv(tmp_path / "yn.csv", rows), "--labels", "no,yes")
        assert result["krippendorff_alpha"]["nominal"] is not None
        assert result["krippendorff_alpha"]["interval"] is None
        assert result["fleiss_kappa"] is not None
        assert result["icc"]["ICC2k"] is None

    def test_without_json_it_prints_a_table(self, tmp_path):
        path = write_csv(tmp_path / "fleiss.csv", fleiss_long())
        out = StringIO()
        call_command("analyze", "ratings", str(path), stdout=out)
        text = out.getvalue()
        assert "Fleiss kappa" in text and "0.210" in text
        assert "Krippendorff alpha (ordinal)" in text


class TestSubset:
    def test_it_selects_k_raters_and_compares_before_and_after(self, tmp_path):
        rows = [["item", "even", "steady", "close", "flat", "wild"]]
        pattern = [
            (0, 0, 0, 1, 3),
            (1, 1, 2, 1, 0),
            (2, 2, 2, 1, 3),
            (3, 3, 3, 1, 0),
            (0, 1, 0, 1, 2),
            (1, 1, 1, 2, 1),
            (2, 3, 2, 1, 0),
            (3, 2, 3, 1, 3),
        ]
        rows += [[f"i{n}", *values] for n, values in enumerate(pattern)]
        result = analyze("subset", write_csv(tmp_path / "jest.csv", rows), "--k", "3", "--labels", "0,1,2,3")
        assert {"selected", "before", "after", "rho_all_vs_subset"} <= set(result)
        assert len(result["selected"]) == 3
        assert "flat" not in result["selected"]
        assert set(result["before"]) >= AGREEMENT_KEYS and set(result["after"]) >= AGREEMENT_KEYS
        assert result["before"]["n_raters"] == 5 and result["after"]["n_raters"] == 3
        assert -1 <= result["rho_all_vs_subset"] <= 1

    def test_k_must_fit_the_raters(self, tmp_path):
        path = write_csv(tmp_path / "r.csv", [["item", "r1", "r2"], ["a", 1, 2], ["b", 2, 2]])
        with pytest.raises(CommandError, match="k must be between 2 and the number of raters"):
            analyze("subset", path, "--k", "5")


class TestPairwise:
    def rows(self):
        rows = [["item", "a", "b", "winner"]]
        n = 0
        # strong > middle > weak, with some upsets and ties so the MLE exists.
        for a, b, wins_a, wins_b, ties in [
            ("strong", "middle", 7, 2, 1),
            ("middle", "weak", 6, 3, 1),
            ("strong", "weak", 8, 1, 1),
        ]:
            for outcome, count in ((a, wins_a), (b, wins_b), ("tie", ties)):
                for _ in range(count):
                    n += 1
                    rows.append([f"p{n}", a, b, outcome])
        return rows

    def test_it_ranks_the_contestants(self, tmp_path):
        result = analyze("pairwise", write_csv(tmp_path / "m.csv", self.rows()), "--bootstrap", "50", "--seed", "7")
        assert {"bradley_terry", "stable_elo", "win_rate", "ranking", "warnings"} <= set(result)
        assert result["ranking"] == ["strong", "middle", "weak"]
        for name, entry in result["bradley_terry"].items():
            assert set(entry) == {"rating", "ci_low", "ci_high"}
            assert entry["ci_low"] <= entry["rating"] <= entry["ci_high"], name
            assert set(result["stable_elo"][name]) == {"mean", "sd"}
        ratings = [e["rating"] for e in result["bradley_terry"].values()]
        assert sum(ratings) / len(ratings) == pytest.approx(1000)
        assert result["win_rate"]["strong"] == pytest.approx((15 + 1) / 20)

    def test_the_same_seed_gives_the_same_intervals(self, tmp_path):
        path = write_csv(tmp_path / "m.csv", self.rows())
        assert analyze("pairwise", path, "--seed", "3") == analyze("pairwise", path, "--seed", "3")

    def test_a_winner_that_played_neither_side_is_named(self, tmp_path):
        path = write_csv(tmp_path / "m.csv", [["a", "b", "winner"], ["x", "y", "x"], ["x", "y", "z"]])
        with pytest.raises(CommandError, match=r"row 3: winner 'z' is neither 'x', 'y' nor 'tie'"):
            analyze("pairwise", path)


class TestAlignment:
    def test_it_scores_a_judge_against_the_reference(self, tmp_path):
        pairs = [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1), (1, 1), (2, 3), (3, 3), (0, 0), (2, 2)]
        rows = [["item", "reference", "predicted"], *[[f"i{n}", r, p] for n, (r, p) in enumerate(pairs)]]
        result = analyze("alignment", write_csv(tmp_path / "a.csv", rows), "--labels", "0,1,2,3", "--bootstrap", "200")
        assert {"n", "cohen_kappa", "spearman", "kendall", "accuracy", "mcc", "rmse"} <= set(result)
        assert result["n"] == 10
        assert set(result["cohen_kappa"]) == {"none", "linear", "quadratic"}
        for entry in [*result["cohen_kappa"].values(), result["spearman"], result["kendall"]]:
            assert set(entry) == {"value", "ci_low", "ci_high", "p_value"}
            # The one-sided share of resamples at or below 0: this judge is far above chance.
            assert 0.0 <= entry["p_value"] < 0.05
        assert result["accuracy"] == pytest.approx(0.8)
        assert result["rmse"] == pytest.approx((2 / 10) ** 0.5)
        assert result["mcc"] is None  # four labels: MCC is for binary labels only
        assert result["cohen_kappa"]["quadratic"]["value"] > result["cohen_kappa"]["none"]["value"]

    def test_binary_labels_get_mcc_and_a_missing_answer_counts_as_wrong(self, tmp_path):
        rows = [["item", "reference", "predicted"], ["a", 1, 1], ["b", 0, 0], ["c", 1, ""], ["d", 0, 0], ["e", 1, 1]]
        result = analyze("alignment", write_csv(tmp_path / "b.csv", rows), "--labels", "0,1", "--bootstrap", "100")
        assert result["accuracy"] == pytest.approx(0.8)
        # tp=2, tn=2, fp=0 and the missing answer is a false negative: MCC = 4 / sqrt(2·3·2·3).
        assert result["mcc"] == pytest.approx(2 / 3)
        assert result["n_missing"] == 1
        assert result["mcc_undefined"] is None
        # No negative called positive; one of three positives (the missing answer) called negative.
        assert (result["fpr"], result["fnr"]) == (0.0, pytest.approx(1 / 3))

    def test_mcc_is_undefined_with_the_reason_when_every_answer_is_missing(self, tmp_path):
        rows = [["item", "reference", "predicted"], ["a", 1, ""], ["b", 0, ""], ["c", 1, ""]]
        result = analyze("alignment", write_csv(tmp_path / "m.csv", rows), "--labels", "0,1", "--bootstrap", "100")
        assert result["mcc"] is None  # not the −1 that counting every missing answer as wrong gives
        assert result["mcc_undefined"] == "the judge gave no usable answers"
        assert "MCC is undefined: the judge gave no usable answers" in result["warnings"]

    def test_more_than_two_labels_have_no_fpr_or_fnr(self, tmp_path):
        rows = [["item", "reference", "predicted"], *[[f"i{n}", n % 3, n % 3] for n in range(9)]]
        result = analyze("alignment", write_csv(tmp_path / "c.csv", rows), "--bootstrap", "50")
        assert (result["mcc"], result["fpr"], result["fnr"]) == (None, None, None)

    def test_the_p_value_is_the_share_of_resamples_at_or_below_zero(self, tmp_path):
        from ratings.stats import cohen_kappa_bootstrap

        pairs = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 0), (1, 0), (0, 1), (1, 1), (1, 1), (0, 1)]
        rows = [["item", "reference", "predicted"], *[[f"i{n}", r, p] for n, (r, p) in enumerate(pairs)]]
        result = analyze("alignment", write_csv(tmp_path / "p.csv", rows), "--bootstrap", "300", "--seed", "5")
        boot = cohen_kappa_bootstrap(
            [r for r, _ in pairs], [p for _, p in pairs], labels=[0, 1], n_resamples=300, seed=5
        )
        share = float((boot.samples[np.isfinite(boot.samples)] <= 0).mean())
        assert result["cohen_kappa"]["none"]["p_value"] == pytest.approx(share)
        assert 0.1 < share < 0.9  # a judge near chance: about half the resamples fall at or below 0


class TestBadInput:
    @pytest.mark.parametrize(
        ("rows", "message"),
        [
            (
                [["item", "rater", "value"], ["a", "r1", "1"], ["a", "r2", "three"]],
                r"row 3, column 'value': 'three' is not a number",
            ),
            (
                [["item", "rater", "value"], ["a", "r1", "1"], ["a", "r2", "7"]],
                r"row 3, column 'value': 7 is outside the labels",
            ),
            ([["item", "rater", "score"], ["a", "r1", "1"]], r"long format needs the columns item, rater and value"),
            ([["item", "r1", "r2"], ["a", "1", "2"], ["a", "2", "2"]], r"row 3: item 'a' already appears on row 2"),
            (
                [["item", "rater", "value"], ["a", "r1", "1"], ["a", "r1", "2"]],
                r"row 3: rater 'r1' already rated item 'a' on row 2",
            ),
        ],
    )
    def test_rating_errors_name_the_row(self, tmp_path, rows, message):
        path = write_csv(tmp_path / "bad.csv", rows)
        with pytest.raises(CommandError, match=message):
            analyze("ratings", path, "--labels", "0,1,2,3")

    def test_missing_pairwise_columns_are_named(self, tmp_path):
        path = write_csv(tmp_path / "m.csv", [["a", "b", "result"], ["x", "y", "x"]])
        with pytest.raises(CommandError, match="missing column"):
            analyze("pairwise", path)

    def test_missing_alignment_columns_are_named(self, tmp_path):
        path = write_csv(tmp_path / "m.csv", [["item", "gold", "predicted"], ["a", "1", "1"]])
        with pytest.raises(CommandError, match="missing column.*reference"):
            analyze("alignment", path)

    def test_an_empty_file_is_refused(self, tmp_path):
        path = tmp_path / "empty.csv"
        path.write_bytes(b"")
        with pytest.raises(CommandError, match="empty"):
            analyze("ratings", path)

    def test_a_header_without_rows_is_refused(self, tmp_path):
        path = write_csv(tmp_path / "h.csv", [["item", "rater", "value"]])
        with pytest.raises(CommandError, match="no data rows"):
            analyze("ratings", path)

    def test_undecodable_bytes_name_the_row(self, tmp_path):
        path = tmp_path / "latin1.csv"
        path.write_bytes("item,rater,value\na,r1,1\nb,r\xe9,2\n".encode("latin-1"))
        # The one table reader's wording, the same as an item import's: line and byte offset.
        with pytest.raises(CommandError, match=r"Line 3, byte offset 27: byte 0xe9 is not valid UTF-8"):
            analyze("ratings", path)

    def test_a_broken_xlsx_is_refused(self, tmp_path):
        path = tmp_path / "broken.xlsx"
        path.write_bytes(b"PK\x03\x04 this is not really a workbook")
        with pytest.raises(CommandError, match="not a readable XLSX"):
            analyze("ratings", path)

    def test_the_process_exits_non_zero_with_nothing_on_stdout(self, tmp_path):
        path = write_csv(tmp_path / "bad.csv", [["item", "rater", "value"], ["a", "r1", "x"]])
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "analyze", "ratings", str(path), "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
        assert done.returncode != 0
        assert done.stdout == ""
        assert "row 2, column 'value': 'x' is not a number" in done.stderr
