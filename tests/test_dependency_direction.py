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


# -- What a worker runs never imports a page or API module -------------------------------------
# A worker loads each app's ``ready`` (which registers the stored reports' computations) and the
# task modules; if either reached a view module, the worker would carry the request layer along
# and the computation would again live in a page. Followed through every import, late ones too.

APPS = ("annotation", "ratings", "judging")


def module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(path: Path) -> set[str]:
    """Modules of the three apps a file imports, relative imports resolved, ``from m import sub`` included."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in APPS and module_path(name)}


def is_view_module(name: str) -> bool:
    """Pages and API views: a ``views`` package or module, ``*_views``, an ``api`` module, URL modules."""
    *packages, last = name.split(".")
    in_views = any(part == "views" or part.endswith("_views") for part in packages)
    return in_views or last in ("views", "api", "urls") or last.endswith(("_views", "_urls"))


#: Apps whose ``ready`` registers work a worker runs (stored reports' computations, job recovery).
#: annotation's ``ready`` only connects login signals, which run in requests.
WORKER_READY = ("ratings.apps", "judging.apps")


def worker_roots() -> list[str]:
    """The task modules of every app and the ``ready`` hooks that register a worker's computations."""
    roots = [
        module_name(path)
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if path.name in ("tasks.py", "job_tasks.py")
    ]
    return roots + [name for name in WORKER_READY if module_path(name)]


def view_imports_reached(roots: list[str]) -> list[str]:
    """Each view module reachable from ``roots``, with the chain of imports that reaches it."""
    chains = {root: [root] for root in roots}
    todo = list(roots)
    problems = []
    while todo:
        current = todo.pop()
        for imported in sorted(project_imports(module_path(current))):
            if imported in chains:
                continue
            chains[imported] = [*chains[current], imported]
            if is_view_module(imported):
                problems.append(" → ".join(chains[imported]))
            else:
                todo.append(imported)
    return sorted(problems)


def test_what_a_worker_runs_never_imports_a_view_module():
    assert "ratings.tasks" in worker_roots() and "ratings.apps" in worker_roots()
    assert view_imports_reached(worker_roots()) == []


def test_the_worker_check_follows_imports_through_other_modules(tmp_path, monkeypatch):
    app = tmp_path / "ratings"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "tasks.py").write_text("def run():\n    from .analysis import compute\n    return compute()\n")
    (app / "analysis.py").write_text("from ratings.views import page_helper\n")
    (app / "views.py").write_text("def page_helper():\n    pass\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert view_imports_reached(["ratings.tasks"]) == ["ratings.tasks → ratings.analysis → ratings.views"]
