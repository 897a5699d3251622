"""Every environment variable the code reads is in the README's table, so operators can find it."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READERS = {"env_str", "env_bool", "env_int", "env_list"}
# Where the application's code lives (tests and benchmarks set variables, they do not define them).
SOURCES = ("funnybone", "annotation", "ratings", "judging")
HELPERS = ROOT / "funnybone" / "env.py"  # the readers themselves pass names through


def env_reads() -> dict[str, list[str]]:
    """Each variable read through funnybone.env's helpers, with where it is read."""
    found: dict[str, list[str]] = {}
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == HELPERS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name not in READERS:
                    continue
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                first = node.args[0] if node.args else None
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    f"{where} reads an environment variable whose name is not a literal; "
                    "name it literally so it can be documented"
                )
                found.setdefault(first.value, []).append(where)
    return found


def readme_table_names() -> set[str]:
    """The variable names in the first column of the README's environment table."""
    names: set[str] = set()
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return names


def test_the_scan_finds_the_settings_reads():
    reads = env_reads()
    # A scan that found nothing would pass vacuously.
    assert {"DATABASE_URL", "SECRET_KEY", "FUNNYBONE_TRUSTED_PROXY_COUNT"} <= reads.keys()


def test_every_environment_variable_read_is_in_the_readme_table():
    documented = readme_table_names()
    missing = {name: where for name, where in env_reads().items() if name not in documented}
    assert not missing, f"add a row for each to the environment table in README.md: {missing}"
