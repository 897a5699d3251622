# SPDX-License-Identifier: GPL-3.0-or-later
"""How many pages the study workbook prints on: as written, beside the same sheets with no print set-up.

    .venv/bin/python bench/bench_print_pages.py [--items 24] [--raters 20] [--judges 2] [--study SLUG-PREFIX] [--keep PATH]

It loads the demo studies into a scratch SQLite database (``load_demo``) and
builds one ordinal study of ``--items`` items that ``--raters`` crowd raters
and ``--judges`` LLM judges all rated (``bench_export.build``), writes
each one's workbook (``ratings.exports.workbook.write_workbook``) and counts the
printed pages of every sheet twice, in the same run, from the same file:

* ``as written``: the sheet's own print set-up (orientation, paper, margins,
  fit to width, repeated header rows), read back with openpyxl;
* ``reference``: the same columns and rows with a spreadsheet's defaults — portrait
  Letter, 100 %, margins 0.7 in left and right and 0.75 in top and bottom, no header
  repeated — what the workbook printed on before it set anything.

No office suite is installed here, so the pages are counted the way a
spreadsheet paginates: a column of width w characters is trunc(7w + 5) pixels
at 96 per inch (Calibri 11), a row is 15 points; columns are packed into a
page's printable width and rows into its height, breaking only between them;
the pages are across × down; fitting to one page wide scales everything by the
printable width over the sheet's width (never below 10 %). Long text that
overflows its cell is clipped, as it prints, so every row is one line tall.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAPERS = {1: (8.5, 11.0), 9: (8.27, 11.69)}  # Letter, A4 (inches)
DEFAULT_WIDTH = 8.43
ROW_INCHES = 15 / 72


def column_inches(width: float) -> float:
    return math.trunc(width * 7 + 5) / 96


def _packed(sizes: list[float], room: float) -> int:
    """Pages needed to lay ``sizes`` out in order within ``room`` each, breaking only between them."""
    pages, used = 1, 0.0
    for size in sizes:
        if used and used + size > room:
            pages, used = pages + 1, 0.0
        used += size
    return pages


def sheet_pages(sheet, *, as_written: bool) -> int:
    if sheet.max_row == 1 and sheet.max_column == 1 and sheet.cell(1, 1).value is None:
        return 0
    widths = []
    for column in range(1, sheet.max_column + 1):
        letter = sheet.cell(1, column).column_letter
        dimension = sheet.column_dimensions.get(letter)
        widths.append(column_inches(dimension.width if dimension and dimension.width else DEFAULT_WIDTH))
    rows = [ROW_INCHES] * sheet.max_row
    if as_written:
        setup = sheet.page_setup
        paper = PAPERS.get(int(setup.paperSize or 1), PAPERS[1])
        landscape = setup.orientation == "landscape"
        margins = sheet.page_margins
        left, right, top, bottom = margins.left, margins.right, margins.top, margins.bottom
        fit = bool(sheet.sheet_properties.pageSetUpPr and sheet.sheet_properties.pageSetUpPr.fitToPage)
        repeated = 1 if sheet.print_title_rows else 0
    else:
        paper, landscape, fit, repeated = PAPERS[1], False, False, 0
        left = right = 0.7
        top = bottom = 0.75
    page_w, page_h = (paper[1], paper[0]) if landscape else paper
    room_w, room_h = page_w - left - right, page_h - top - bottom
    scale = max(0.1, min(1.0, room_w / sum(widths))) if fit else 1.0
    across = 1 if fit else _packed(widths, room_w)
    header = sum(rows[:repeated]) * scale
    body = [r * scale for r in rows[repeated:]]
    down = _packed(body, room_h - header) if body else 1
    return across * down


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", default="", help="only demo studies whose slug starts with this")
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--keep", default="", help="a folder to keep the workbooks in")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="fb-bench-pages-")
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from openpyxl import load_workbook

    from annotation.demo.builder import load_demo
    from annotation.models import Study
    from ratings.exports.workbook import write_workbook

    call_command("migrate", verbosity=0)
    load_demo()
    from bench.bench_export import build

    build(args.items * (args.raters + args.judges), args.raters, args.judges)
    out = Path(args.keep or scratch)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'study':<36} {'items':>5} {'raters':>6} {'sheet':<14} {'as written':>10} {'reference':>9}")
    totals = [0, 0]
    for study in Study.objects.filter(slug__startswith=args.study).order_by("-slug"):
        path = out / f"{study.slug}.xlsx"
        write_workbook(study, str(path))
        book = load_workbook(path)
        n_items = study.items.filter(is_attention_check=False).count()
        n_raters = study.enrollments.count()
        study_totals = [0, 0]
        for sheet in book:
            written, reference = sheet_pages(sheet, as_written=True), sheet_pages(sheet, as_written=False)
            study_totals[0] += written
            study_totals[1] += reference
            print(f"{study.slug[:36]:<36} {n_items:>5} {n_raters:>6} {sheet.title:<14} {written:>10} {reference:>9}")
        print(
            f"{study.slug[:36]:<36} {n_items:>5} {n_raters:>6} {'ALL SHEETS':<14} {study_totals[0]:>10} {study_totals[1]:>9}"
        )
        totals[0] += study_totals[0]
        totals[1] += study_totals[1]
    print(f"{'every study':<36} {'':>5} {'':>6} {'ALL SHEETS':<14} {totals[0]:>10} {totals[1]:>9}")


if __name__ == "__main__":
    main()
