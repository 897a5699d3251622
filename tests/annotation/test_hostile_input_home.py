"""Hostile input has one home, ``annotation.json_limits``: no second NUL or surrogate check, no bare parser at a door.

Every module of the apps and the project package is parsed; a NUL literal, a
surrogate pattern or a bare ``json.loads``/``yaml.safe_load`` outside the home
is a second copy of the rule, and copies drift apart (there were two JSON-limit
modules with different limits, and NUL was checked in seven places).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
HOME = "annotation/json_limits.py"
SCANNED = ("annotation", "funnybone", "ratings", "judging")
# Where what a user typed or uploaded comes in: their JSON and YAML go through the home's loaders.
DOORS = ("annotation", "funnybone")
ALLOWED = {
    # The table reader's byte-level sniffing: a NUL byte in a CSV file means UTF-16 without a byte
    # order mark. It is an encoding check on bytes, and the reader must import without Django.
    "annotation/tables/text.py": "NUL byte",
    # Bundled demo data shipped with the code, not anything a user sent.
    "annotation/demo/builder.py": "bare parser",
    # The Python client runs on the researcher's machine and reads their own study file.
    "funnybone/client/funnybone_client/client.py": "bare parser",
}
BARE_PARSERS = {("json", "loads"), ("yaml", "safe_load"), ("yaml", "load"), ("yaml", "full_load")}


def _is_nul(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and node.value in ("\x00", b"\x00"):
        return True
    return (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "chr"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == 0
    )


def second_copies(path: Path, relative: str) -> list[str]:
    """Each NUL literal, surrogate pattern and (at a door) bare JSON/YAML parse in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if _is_nul(node):
            kind = "byte" if getattr(node, "value", None) == b"\x00" else "literal"
            found.append(f"{relative}:{node.lineno} NUL {kind}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "\ud800" in node.value:
            found.append(f"{relative}:{node.lineno} surrogate pattern")
        elif (
            relative.startswith(DOORS)
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) in BARE_PARSERS
        ):
            found.append(f"{relative}:{node.lineno} bare parser {node.func.value.id}.{node.func.attr}")
    allowed = ALLOWED.get(relative)
    return [copy for copy in found if not (allowed and allowed in copy)]


def copies_outside_home(root: Path = ROOT) -> list[str]:
    copies = []
    for app in SCANNED:
        for path in sorted((root / app).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative != HOME and "/migrations/" not in relative:
                copies += second_copies(path, relative)
    return copies


def test_no_nul_surrogate_or_json_limit_check_lives_outside_the_home():
    assert copies_outside_home() == []


@pytest.mark.parametrize(
    ("source", "copy"),
    [
        ('def f(text):\n    return "\\x00" in text\n', "NUL literal"),
        ("def f(text):\n    return chr(0) in text\n", "NUL literal"),
        ("import re\nS = re.compile('[\\ud800-\\udfff]')\n", "surrogate pattern"),
        ("import json\n\ndef f(text):\n    return json.loads(text)\n", "bare parser json.loads"),
    ],
)
def test_the_check_finds_a_planted_copy(tmp_path, source, copy):
    module = tmp_path / "annotation" / "planted.py"
    module.parent.mkdir()
    module.write_text(source, encoding="utf-8")
    assert [found.split(" ", 1)[1] for found in copies_outside_home(tmp_path)] == [copy]
