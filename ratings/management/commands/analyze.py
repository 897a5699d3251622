# SPDX-License-Identifier: GPL-3.0-or-later
"""``manage.py analyze KIND FILE``: agreement, rater subsets, rankings and alignment from a file.

KIND is one of ``ratings``, ``subset``, ``pairwise`` and ``alignment``; FILE a
CSV or XLSX table (see docs/analyze.md for the columns each kind reads). With
``--json`` the command prints one JSON object and nothing else; without it, a
table to read. Bad input stops with a message naming the row, a non-zero exit
code and nothing on standard output.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ratings import io
from ratings.reports import (
    AnalysisError,
    alignment_report,
    json_ready,
    pairwise_report,
    rating_report,
    subset_report,
)
from ratings.stats import DEFAULT_SEED, FORM_LABELS

# "pairwise" analyses a table of matches; it is the command's word, not a study's task type.
MATCHES = "pairwise"
KINDS = ("ratings", "subset", MATCHES, "alignment")
#: Bootstrap resamples when --bootstrap is not given: 1,000 for published intervals (HumorRank used 100
#: for BT; pass --bootstrap 100 to reproduce it).
DEFAULT_RESAMPLES = {MATCHES: 1000, "alignment": 1000}


class Command(BaseCommand):
    help = (
        "Analyse judgments in a CSV or XLSX file. KIND: ratings (agreement), subset (choose k raters), "
        "pairwise (Bradley-Terry, Stable Elo, win rates), alignment (a rater against a reference)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=KINDS, help="What to compute.")
        parser.add_argument("file", help="CSV (UTF-8) or XLSX file.")
        parser.add_argument("--labels", help="The scale, comma separated, e.g. 0,1,2,3 (or text labels in order).")
        parser.add_argument("--k", type=int, help="subset: how many raters to select.")
        parser.add_argument("--bootstrap", type=int, help="Bootstrap resamples (default 1000).")
        parser.add_argument("--orderings", type=int, default=5, help="pairwise: Stable Elo orderings (default 5).")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="Seed for bootstraps and Elo orderings.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of a table.")

    def handle(self, *args: Any, **options: Any) -> None:
        kind = options["kind"]
        try:
            labels = io.parse_labels(options["labels"])
            table = io.read_table(options["file"])
            report = self._report(kind, table, labels, options)
        except (io.InputError, AnalysisError) as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            # ratings.stats rejects data it cannot use with a ValueError that says why.
            raise CommandError(f"cannot analyse {options['file']}: {exc}") from None
        report = json_ready(report)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
        else:
            self.stdout.write(render_text(kind, report))

    def _report(self, kind: str, table: io.Table, labels: io.Labels | None, options: dict[str, Any]) -> dict:
        resamples = options["bootstrap"] if options["bootstrap"] is not None else DEFAULT_RESAMPLES.get(kind, 0)
        if kind == MATCHES:
            matches = io.pairwise_from_table(table)
            return pairwise_report(
                matches.a,
                matches.b,
                matches.score,
                n_resamples=resamples,
                n_orderings=options["orderings"],
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
            if options["k"] is None:
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


def _rename_labels(report: dict[str, Any], labels: io.Labels) -> None:
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
        for rank, name in enumerate(report["ranking"], start=1):
            bt = report["bradley_terry"][name]
            elo = report["stable_elo"][name]
            rate = report["win_rate"][name]
            lines.append(
                f"  {rank:>3}  {name.ljust(width)}  {_ci(bt, 1):<28}  "
                f"{_fmt(rate * 100 if rate is not None else None, 1):>7}%  {_fmt(elo['mean'], 1)} ({_fmt(elo['sd'], 1)})"
            )
    else:
        kappa = report["cohen_kappa"]
        pairs = [("items", str(report["n"])), ("missing predictions", str(report["n_missing"]))]
        pairs += [(f"Cohen kappa ({name})", _ci(entry)) for name, entry in kappa.items()]
        pairs += [
            ("Spearman rho", _ci(report["spearman"])),
            ("Kendall tau", _ci(report["kendall"])),
            ("accuracy", _fmt(report["accuracy"])),
            ("MCC", f"undefined ({report['mcc_undefined']})" if report.get("mcc_undefined") else _fmt(report["mcc"])),
            ("RMSE", _fmt(report["rmse"])),
        ]
        lines = ["Alignment with the reference", *_rows(pairs)]
    lines += _warning_lines(report)
    return "\n".join(lines)
