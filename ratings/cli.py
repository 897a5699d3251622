# SPDX-License-Identifier: GPL-3.0-or-later
"""``funnybone analyze KIND FILE``: agreement, rater subsets, rankings and alignment from a file.

The installable analysis tool (``pip install .`` gives the ``funnybone``
command; ``python -m ratings.cli`` runs it from a checkout). It needs no Django
project, settings or database: it reads the file with ``ratings.io`` and
computes with ``ratings.reports`` on top of ``ratings.stats``, none of which
import Django. ``manage.py analyze`` is the same command inside the project and
calls :func:`add_analyze_arguments` and :func:`analyze` below.

KIND is one of ``ratings``, ``subset``, ``pairwise`` and ``alignment``; FILE a
CSV or XLSX table (docs/analyze.md lists the columns each kind reads). With
``--json`` the command prints one JSON object and nothing else; without it, a
table to read. Bad input stops with a message naming the row, exit code 2 and
nothing on standard output.

Start-up is kept short: the statistics (numpy, scipy) are imported only when
an analysis runs, never for ``--help`` or an argument error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

# "pairwise" analyses a table of matches; it is the command's word, not a study's task type.
MATCHES = "pairwise"
KINDS = ("ratings", "subset", MATCHES, "alignment")
#: Bootstrap resamples when --bootstrap is not given: 1,000 for published intervals (HumorRank used 100
#: for BT; pass --bootstrap 100 to reproduce it).
DEFAULT_RESAMPLES = {MATCHES: 1000, "alignment": 1000}
#: Options whose value may start with "-" (a scale such as -2,-1,0,1,2), which argparse would take for an option.
VALUE_OPTIONS = ("--labels",)


class AnalyzeError(Exception):
    """The file cannot be analysed as asked; the message says where and why."""


def add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="What to compute.")
    parser.add_argument("file", help="CSV (UTF-8) or XLSX file.")
    parser.add_argument(
        "--labels",
        help="The scale, comma separated, e.g. 0,1,2,3 or -2,-1,0,1,2 (or text labels in order).",
    )
    parser.add_argument("--k", type=int, help="subset: how many raters to select.")
    parser.add_argument("--bootstrap", type=int, help="Bootstrap resamples (default 1000).")
    parser.add_argument("--orderings", type=int, default=5, help="pairwise: Stable Elo orderings (default 5).")
    parser.add_argument(
        "--seed", type=int, default=None, help="Seed for bootstraps and Elo orderings (default: a fixed seed)."
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of a table.")


def join_option_values(argv: Sequence[str]) -> list[str]:
    """``--labels -2,-1,0`` as ``--labels=-2,-1,0``, so argparse reads a scale that starts with a minus sign.

    argparse treats any word starting with "-" that is not a plain negative number as an option and then
    complains that --labels has no value; joined with "=", the value is unambiguous.
    """
    out: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word in VALUE_OPTIONS and i + 1 < len(words) and words[i + 1].startswith("-") and words[i + 1] != "--":
            out.append(f"{word}={words[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def analyze(options: dict[str, Any]) -> str:
    """Run one analysis (the parsed options of ``analyze``); the text to print. AnalyzeError on bad input."""
    from . import io
    from .reports import AnalysisError, json_ready
    from .stats import DEFAULT_SEED

    kind = options["kind"]
    seed = options.get("seed")
    options = {**options, "seed": DEFAULT_SEED if seed is None else seed}
    try:
        labels = io.parse_labels(options.get("labels"))
        table = io.read_table(options["file"])
        report = _report(kind, table, labels, options)
    except (io.InputError, AnalysisError) as exc:
        raise AnalyzeError(str(exc)) from None
    except ValueError as exc:
        # ratings.stats rejects data it cannot use with a ValueError that says why.
        raise AnalyzeError(f"cannot analyse {options['file']}: {exc}") from None
    report = json_ready(report)
    if options.get("json"):
        return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False)
    return render_text(kind, report)


def _report(kind: str, table: Any, labels: Any, options: dict[str, Any]) -> dict:
    from . import io
    from .reports import alignment_report, pairwise_report, rating_report, subset_report

    resamples = options["bootstrap"] if options.get("bootstrap") is not None else DEFAULT_RESAMPLES.get(kind, 0)
    if kind == MATCHES:
        matches = io.pairwise_from_table(table)
        return pairwise_report(
            matches.a,
            matches.b,
            matches.score,
            n_resamples=resamples,
            n_orderings=options.get("orderings", 5),
            seed=options["seed"],
        )
    if kind == "alignment":
        data = io.alignment_from_table(table, labels)
        categories = labels.codes if labels else io.observed_labels([data.reference, data.predicted])
        if categories.size < 2:
            raise io.InputError("only one label occurs in the file; give the scale with --labels")
        report = alignment_report(
            data.reference, data.predicted, categories=categories, n_resamples=resamples, seed=options["seed"]
        )
        if labels is not None and not labels.numeric:
            report["labels"] = labels.names
            report["warnings"].append(
                "text labels are treated as ordered as listed in --labels for weighted kappa, correlations and RMSE"
            )
        return report
    data = io.ratings_from_table(table, labels)
    categories = labels.codes if labels else io.observed_labels([data.values])
    nominal = labels is not None and not labels.numeric
    if kind == "subset":
        if options.get("k") is None:
            raise io.InputError("subset needs --k, the number of raters to select")
        report = subset_report(
            data.values, k=options["k"], rater_ids=data.rater_ids, categories=categories, nominal=nominal
        )
        if labels is not None:
            _rename_labels(report, labels)
        return report
    report = rating_report(data.values, categories=categories, nominal=nominal)
    report["layout"] = data.layout
    return report


def _rename_labels(report: dict[str, Any], labels: Any) -> None:
    """Show text labels by name in the per-rater distributions."""
    if labels.numeric:
        return
    for rater, shares in report["distributions"].items():
        report["distributions"][rater] = dict(zip(labels.names, shares.values(), strict=True))


# -- the readable table -----------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(entry: dict[str, Any] | None, digits: int = 3) -> str:
    if entry is None:
        return "—"
    value = entry.get("value", entry.get("rating"))
    low, high = entry.get("ci_low"), entry.get("ci_high")
    if low is None or high is None:
        return _fmt(value, digits)
    return f"{_fmt(value, digits)} [{_fmt(low, digits)}, {_fmt(high, digits)}]"


def _rows(pairs: list[tuple[str, str]]) -> list[str]:
    width = max(len(name) for name, _ in pairs)
    return [f"  {name.ljust(width)}  {value}" for name, value in pairs]


def _agreement_lines(report: dict[str, Any]) -> list[str]:
    from .stats import FORM_LABELS

    alpha = report["krippendorff_alpha"]
    pairs = [("items", str(report["n_items"])), ("raters", str(report["n_raters"]))]
    pairs += [(f"Krippendorff alpha ({level})", _fmt(value)) for level, value in alpha.items()]
    pairs += [(FORM_LABELS.get(form, form), _ci(entry)) for form, entry in report["icc"].items()]
    pairs += [
        ("Fleiss kappa", _fmt(report["fleiss_kappa"])),
        ("exact agreement", _fmt(report["exact_agreement"])),
        ("percentage agreement", _fmt(report.get("percentage_agreement"))),
        ("adjacent agreement", _fmt(report["adjacent_agreement"])),
        ("mean item SD", _fmt(report["mean_item_sd"])),
        ("mean pairwise Spearman", _fmt(report["mean_pairwise_spearman"])),
    ]
    return _rows(pairs)


def _warning_lines(report: dict[str, Any]) -> list[str]:
    return [f"  ! {w}" for w in report.get("warnings", [])]


def _alignment_lines(report: dict[str, Any]) -> list[str]:
    kappa = report["cohen_kappa"]
    pairs = [("items", str(report["n"])), ("missing predictions", str(report["n_missing"]))]
    pairs += [(f"Cohen kappa ({name})", _ci(entry)) for name, entry in kappa.items()]
    pairs += [
        ("Spearman rho", _ci(report["spearman"])),
        ("Kendall tau", _ci(report["kendall"])),
        ("accuracy", _fmt(report["accuracy"])),
        ("MCC", f"undefined ({report['mcc_undefined']})" if report.get("mcc_undefined") else _fmt(report["mcc"])),
        ("false-positive rate", _fmt(report.get("fpr"))),
        ("false-negative rate", _fmt(report.get("fnr"))),
        ("RMSE", _fmt(report["rmse"])),
    ]
    return ["Alignment with the reference", *_rows(pairs)]


def render_text(kind: str, report: dict[str, Any]) -> str:
    if kind == "ratings":
        lines = ["Agreement", *_agreement_lines(report)]
    elif kind == "subset":
        before, after = _agreement_lines(report["before"]), _agreement_lines(report["after"])
        width = max(len(line) for line in before)
        lines = [f"Selected raters (k={report['k']}, {report['method']}): {', '.join(report['selected'])}", ""]
        lines.append(f"{'All raters'.ljust(width)}  |  Selected")
        lines += [f"{b.ljust(width)}  |  {a.strip()}" for b, a in zip(before, after, strict=True)]
        lines.append(f"Spearman rho, all-rater mean vs subset mean per item: {_fmt(report['rho_all_vs_subset'])}")
        lines += _warning_lines(report["before"]) + _warning_lines(report["after"])
    elif kind == MATCHES:
        width = max([len("contestant"), *(len(name) for name in report["ranking"])])
        lines = [f"{report['n_matches']} matches, {report['n_contestants']} contestants", ""]
        lines.append(f"  {'#':>3}  {'contestant'.ljust(width)}  {'BT rating [95% CI]':<28}  win rate  Stable Elo (sd)")
        for name in report["ranking"]:
            rank = report["rank"][name]
            bt = report["bradley_terry"][name]
            elo = report["stable_elo"][name]
            rate = report["win_rate"][name]
            lines.append(
                f"  {rank:>3}  {name.ljust(width)}  {_ci(bt, 1):<28}  "
                f"{_fmt(rate * 100 if rate is not None else None, 1):>7}%  {_fmt(elo['mean'], 1)} ({_fmt(elo['sd'], 1)})"
            )
    else:
        lines = _alignment_lines(report)
    lines += _warning_lines(report)
    return "\n".join(lines)


# -- the command --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="funnybone",
        description="Funnybone's analysis tool: agreement, rater subsets, rankings and alignment from a file.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    analyze_parser = commands.add_parser(
        "analyze",
        help="Analyse judgments in a CSV or XLSX file.",
        description=(
            "Analyse judgments in a CSV or XLSX file. KIND: ratings (agreement), subset (choose k raters), "
            "pairwise (Bradley-Terry, Stable Elo, win rates), alignment (a rater against a reference)."
        ),
    )
    add_analyze_arguments(analyze_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``funnybone`` console command; returns the exit code (0 done, 2 bad input or usage)."""
    args = build_parser().parse_args(join_option_values(sys.argv[1:] if argv is None else argv))
    try:
        output = analyze(vars(args))
    except AnalyzeError as exc:
        print(f"funnybone analyze: error: {exc}", file=sys.stderr)
        return 2
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
