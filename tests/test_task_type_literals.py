"""No code outside the task-type packages compares anything to a task type's name.

A task type owns its behaviour (annotation/task_types/ and judging/task_types/);
everywhere else asks the type (its statistics family, its flags, its methods).
This scans the Python source (by syntax tree) and the Django templates for a
comparison with a string literal that is a registered task type's name:
``x == "pairwise"``, ``"ordinal" != x``, ``x in ("binary", ...)``, and in
templates ``{% if x == "pick_one" %}`` and the like. Tests are not scanned.
"""

import ast
import re
from pathlib import Path

from annotation.task_types import TASK_TYPES

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("annotation", "judging", "ratings", "funnybone", "templates")
OWNERS = (ROOT / "annotation" / "task_types", ROOT / "judging" / "task_types")
NAMES = frozenset(TASK_TYPES)
COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
# A template comparison: == / != / in / not in with a quoted literal on either side.
TEMPLATE_TAG = re.compile(r"{%-?\s*(?:if|elif)\b(.*?)-?%}", re.S)
TEMPLATE_LITERAL = re.compile(r"""(?:==|!=|\bin)\s*["']([^"']+)["']|["']([^"']+)["']\s*(?:==|!=|\bnot in\b|\bin\b)""")


def _owned(path: Path) -> bool:
    return any(path.is_relative_to(owner) for owner in OWNERS)


def _sources(suffix: str) -> list[Path]:
    files = []
    for name in SOURCE_DIRS:
        for path in sorted((ROOT / name).rglob(f"*{suffix}")):
            if "migrations" in path.parts or _owned(path):
                continue
            files.append(path)
    return files


def _literal_names(node: ast.AST) -> list[str]:
    """Task-type names written as string literals in an operand (a constant or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [name for element in node.elts for name in _literal_names(element)]
    return []


def python_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, name) of each comparison with a task-type literal in Python source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            if not isinstance(op, COMPARISONS):
                continue
            for operand in operands[index : index + 2]:
                found += [(node.lineno, name) for name in _literal_names(operand)]
    return found


def template_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, name) of each ``{% if %}`` / ``{% elif %}`` comparison with a task-type literal."""
    found = []
    for tag in TEMPLATE_TAG.finditer(source):
        line = source.count("\n", 0, tag.start()) + 1
        for match in TEMPLATE_LITERAL.finditer(tag.group(1)):
            name = match.group(1) or match.group(2)
            if name in NAMES:
                found.append((line, name))
    return found


def test_no_python_module_outside_the_task_types_compares_a_task_type_name():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: compares with {name!r}"
        for path in _sources(".py")
        for line, name in python_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "ask the task type instead:\n" + "\n".join(offenders)


def test_no_template_compares_a_task_type_name():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: compares with {name!r}"
        for path in _sources(".html")
        for line, name in template_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "pass the template a flag from the task type instead:\n" + "\n".join(offenders)


class TestTheScanner:
    """The scanner itself finds the shapes the old code used, so a green run means something."""

    def test_it_finds_equality_inequality_and_membership_in_python(self):
        source = (
            'if study.task_type == "pairwise": pass\n'
            'if "ordinal" != kind.name: pass\n'
            'if task_type in ("micro_edit", "explanation"): pass\n'
            'if name not in ["pick_one"]: pass\n'
        )
        assert python_comparisons(source) == [
            (1, "pairwise"),
            (2, "ordinal"),
            (3, "micro_edit"),
            (3, "explanation"),
            (4, "pick_one"),
        ]

    def test_it_leaves_other_literals_and_names_alone(self):
        source = 'if level == "nominal": pass\nif family == Family.CHOICE: pass\nx = {"binary": 1}\n'
        assert python_comparisons(source) == []

    def test_it_finds_comparisons_in_template_conditions(self):
        source = (
            '<p>\n{% if study.task_type == "pick_one" or study.task_type == "vote_allocation" %}x{% endif %}\n'
            "{% elif 'binary' == result.family %}\n"
            '<p data-task="pairwise">{{ "ordinal" }}</p>\n'
        )
        assert template_comparisons(source) == [(2, "pick_one"), (2, "vote_allocation"), (3, "binary")]

    def test_the_owned_packages_are_where_the_names_live(self):
        assert all(owner.is_dir() for owner in OWNERS)
        assert not any(_owned(path) for path in _sources(".py"))
