# SPDX-License-Identifier: GPL-3.0-or-later
"""``funnybone analyze``: the installable analysis tool, run with no Django project, settings or database."""

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from ratings import cli

ROOT = Path(__file__).resolve().parents[2]
RATINGS = [
    ["item", "rater", "value"],
    *[
        [f"i{i}", r, v]
        for i, row in enumerate([[-2, -2, -1], [0, 0, 1], [2, 2, 2], [-1, 0, -1], [1, 1, 2]])
        for r, v in zip(("ann", "bob", "cat"), row, strict=True)
    ],
]


def write_csv(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def bare_env() -> dict[str, str]:
    """The environment of a researcher's shell: no Django settings, no database, not run from the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE", "FUNNYBONE", "REDIS"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=bare_env(), capture_output=True, text=True, check=False
    )


def funnybone(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``funnybone ARGS`` as the console script runs it (``ratings.cli:main``), reporting whether Django was loaded."""
    code = (
        "import sys\n"
        "from ratings.cli import main\n"
        f"code = main({list(args)!r})\n"
        "print('DJANGO LOADED' if 'django' in sys.modules else '', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    return run_python(code, tmp_path)


class TestWithoutDjango:
    def test_ratings_stats_imports_without_django(self, tmp_path):
        done = run_python(
            "import sys, ratings.stats, ratings.reports, ratings.io, ratings.cli\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'rest_framework', 'celery'}))",
            tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]"

    def test_analyze_runs_on_a_file_with_no_settings_or_database(self, tmp_path):
        path = write_csv(tmp_path / "scale.csv", RATINGS)
        done = funnybone(tmp_path, "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2", "--json")
        assert done.returncode == 0, done.stderr
        assert "DJANGO LOADED" not in done.stderr
        report = json.loads(done.stdout)
        assert (report["n_items"], report["n_raters"]) == (5, 3)
        assert report["krippendorff_alpha"]["ordinal"] > 0.8

    def test_help_loads_no_statistics(self, tmp_path):
        done = run_python(
            "import sys\nfrom ratings.cli import main\n"
            "try:\n    main(['analyze', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in ('numpy', 'scipy', 'django') if m in sys.modules))",
            tmp_path,
        )
        assert "--labels" in done.stdout
        assert "LOADED []" in done.stdout

    def test_bad_input_exits_2_with_the_row_and_nothing_on_stdout(self, tmp_path):
        path = write_csv(tmp_path / "bad.csv", [["item", "rater", "value"], ["a", "r1", "1"], ["a", "r2", "x"]])
        done = funnybone(tmp_path, "analyze", "ratings", str(path), "--json")
        assert done.returncode == 2
        assert done.stdout == ""
        assert "row 3, column 'value': 'x' is not a number" in done.stderr


class TestEqualRatingsShareARank:
    """Three contestants that all tie are one rank, not 1, 2, 3 by name (the leaderboard's rule)."""

    def test_every_contestant_of_an_all_tie_table_is_ranked_first(self, tmp_path):
        rows = [["a", "b", "winner"], *[[x, y, "tie"] for x, y in (("ann", "bob"), ("bob", "cat"), ("ann", "cat"))]]
        path = write_csv(tmp_path / "matches.csv", rows)
        done = funnybone(tmp_path, "analyze", "pairwise", str(path), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["rank"] == {"ann": 1, "bob": 1, "cat": 1}
        printed = funnybone(tmp_path, "analyze", "pairwise", str(path)).stdout.splitlines()
        rows_printed = [line.split()[:2] for line in printed if line.split()[1:2] in (["ann"], ["bob"], ["cat"])]
        assert rows_printed == [["1", "ann"], ["1", "bob"], ["1", "cat"]]


class TestWideAndLongAgree:
    """A wide file with a blank row (an item nobody rated) once gave a null Fleiss' κ and more items than
    the long layout of the same ratings."""

    def test_a_blank_row_in_the_wide_layout_gives_the_long_layouts_figures(self, tmp_path):
        raters = ("ann", "bob", "cat")
        by_item = {row[0]: {} for row in RATINGS[1:]}
        for item, rater, value in RATINGS[1:]:
            by_item[item][rater] = value
        wide = [["item", *raters], *([item, *(by_item[item][r] for r in raters)] for item in by_item)]
        wide.insert(3, ["nobody-rated", "", "", ""])
        reports = {}
        for layout, rows in (("long", RATINGS), ("wide", wide)):
            path = write_csv(tmp_path / f"{layout}.csv", rows)
            done = funnybone(tmp_path, "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2", "--json")
            assert done.returncode == 0, done.stderr
            reports[layout] = json.loads(done.stdout)
        long, wide_report = reports["long"], reports["wide"]
        assert wide_report["fleiss_kappa"] is not None
        assert (wide_report["n_items"], wide_report["n_raters"]) == (long["n_items"], long["n_raters"]) == (5, 3)
        del long["layout"], wide_report["layout"]
        assert wide_report == long


class TestNegativeLabels:
    """``--labels -2,-1,0,1,2`` used to stop at argument parsing: argparse took the scale for an option."""

    def test_the_split_form_reads_as_the_joined_form(self):
        assert cli.join_option_values(["ratings", "f.csv", "--labels", "-2,-1,0"]) == [
            "ratings",
            "f.csv",
            "--labels=-2,-1,0",
        ]
        assert cli.join_option_values(["--labels", "0,1", "--json"]) == ["--labels", "0,1", "--json"]

    def test_manage_py_analyze_takes_a_scale_starting_below_zero(self, tmp_path):
        path = write_csv(tmp_path / "scale.csv", RATINGS)
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2"]
            + ["--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["n_items"] == 5

    def test_a_rating_outside_a_negative_scale_is_named(self, tmp_path):
        path = write_csv(tmp_path / "scale.csv", [*RATINGS, ["i9", "ann", "-3"]])
        done = funnybone(tmp_path, "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2")
        assert done.returncode == 2
        assert "-3 is outside the labels -2, -1, 0, 1, 2" in done.stderr


class TestSameFiguresEverywhere:
    def test_manage_py_analyze_and_funnybone_print_the_same_json(self, tmp_path):
        path = write_csv(tmp_path / "scale.csv", RATINGS)
        out = StringIO()
        call_command("analyze", "ratings", str(path), "--labels=-2,-1,0,1,2", "--json", stdout=out)
        done = funnybone(tmp_path, "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2", "--json")
        assert json.loads(out.getvalue()) == json.loads(done.stdout)


class TestPackaging:
    @pytest.fixture
    def project(self):
        return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def test_the_console_command_is_declared(self, project):
        assert project["scripts"]["funnybone"] == "ratings.cli:main"

    def test_the_analysis_needs_no_django_to_install(self, project):
        names = {
            d.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower() for d in project["dependencies"]
        }
        assert {"numpy", "scipy", "openpyxl"} <= names
        assert "django" not in names

    def test_pip_install_gives_a_funnybone_command_that_analyses_without_the_project(self, tmp_path):
        """Install the project as a researcher would (a copy of the sources, its own venv) and run the command."""
        source = tmp_path / "funnybone-src"
        skip = shutil.ignore_patterns(".*", "var", "tests", "bench", "docs", "build", "*.egg-info", "__pycache__")
        shutil.copytree(ROOT, source, ignore=skip)
        target = tmp_path / "site"
        # Installed beside this interpreter's packages (numpy, scipy, openpyxl) with --no-deps: nothing comes
        # from the network, and the test above checks what the project declares.
        isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *isolation, "--target", str(target)]
            + [str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert install.returncode == 0, install.stderr
        path = write_csv(tmp_path / "scale.csv", RATINGS)
        env = {**bare_env(), "PYTHONPATH": str(target)}
        done = subprocess.run(
            [str(target / "bin" / "funnybone"), "analyze", "ratings", str(path), "--labels", "-2,-1,0,1,2", "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["n_items"] == 5 and report["n_raters"] == 3
        # The installed copy answered, not the checkout.
        where = subprocess.run(
            [sys.executable, "-c", "import ratings.cli; print(ratings.cli.__file__)"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert where.stdout.startswith(str(target))
