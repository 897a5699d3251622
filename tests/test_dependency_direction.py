"""Dependencies point one way: judging → ratings → annotation (shared/ARCHITECTURE.md).

Every module of the three apps is parsed and its imports read, including the
ones inside functions, so a late import cannot hide an arrow the wrong way.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What each app may not import: the apps that sit above it.
FORBIDDEN = {"annotation": ("ratings", "judging"), "ratings": ("judging",)}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file; relative imports stay inside the app."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def wrong_way(app: str) -> list[str]:
    problems = []
    for path in sorted((ROOT / app).rglob("*.py")):
        for line, module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN[app]:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return problems


@pytest.mark.parametrize("app", sorted(FORBIDDEN))
def test_the_app_imports_nothing_above_it(app):
    assert wrong_way(app) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from judging.models import JudgeConfig\n    return JudgeConfig\n")
    assert imported_modules(module) == [(2, "judging.models")]
