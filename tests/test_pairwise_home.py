"""Pairwise answers and contestants are read in one place: ``ratings/pairwise.py``.

How a pairwise answer becomes an outcome is the task type's (``to_number``,
asked through ``ratings.pairwise.outcome_of``), and who a candidate stands for
is ``ratings.pairwise.contestant_of``. Five modules once decoded answers by hand
and two named contestants by different rules, so pages and exports disagreed.
This scans ``ratings/`` and ``judging/`` (by syntax tree; the task-type packages
and the home itself excepted) for the shapes those copies had:

- an answer's ``choice`` read by hand: ``value["choice"]``, ``value.get("choice")``;
- a tie coded by hand: a comparison with ``TIE``, a dict keyed by it, ``TIE if ... else ...``;
- a contestant named by hand: ``provenance.get("model")`` and the other contestant fields.
"""

import ast
from pathlib import Path

from ratings.pairwise import CONTESTANT_FIELDS

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("ratings", "judging")
EXEMPT = (ROOT / "judging" / "task_types", ROOT / "ratings" / "pairwise.py")


def _sources() -> list[Path]:
    return [
        path
        for name in SOURCE_DIRS
        for path in sorted((ROOT / name).rglob("*.py"))
        if "migrations" not in path.parts and not any(path == e or path.is_relative_to(e) for e in EXEMPT)
    ]


def _key(node: ast.AST) -> str | None:
    """The string a subscript or ``.get(...)`` call reads, and the expression it reads it from."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _read(node: ast.AST) -> tuple[ast.AST, str] | None:
    if isinstance(node, ast.Subscript) and _key(node.slice) is not None:
        return node.value, _key(node.slice)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and _key(node.args[0]) is not None
    ):
        return node.func.value, _key(node.args[0])
    return None


def _imports_the_answer_tie(tree: ast.AST) -> bool:
    """Whether the module imports the task types' ``TIE`` (the tie of a stored answer).

    ``ratings/io.py`` has a ``TIE`` of its own: the word a researcher's match file writes in
    its winner column, read as text, not a stored answer."""
    return any(
        isinstance(node, ast.ImportFrom)
        and (node.module or "").endswith("task_types")
        and any(alias.name == "TIE" for alias in node.names)
        for node in ast.walk(tree)
    )


def hand_decoding(source: str) -> list[tuple[int, str]]:
    """(line, what) of each place in the source that reads a pairwise answer or names a contestant by hand."""
    tree = ast.parse(source)
    tie = _imports_the_answer_tie(tree)

    def _is_tie(node: ast.AST) -> bool:
        return tie and isinstance(node, ast.Name) and node.id == "TIE"

    found = []
    for node in ast.walk(tree):
        read = _read(node)
        if read is not None:
            receiver, key = read
            if key == "choice":
                found.append((node.lineno, "reads an answer's choice"))
            elif key in CONTESTANT_FIELDS and "provenance" in ast.unparse(receiver):
                found.append((node.lineno, f"names a contestant by provenance {key!r}"))
        if isinstance(node, ast.Compare) and any(_is_tie(x) for x in [node.left, *node.comparators]):
            found.append((node.lineno, "compares with TIE"))
        if isinstance(node, ast.Dict) and any(k is not None and _is_tie(k) for k in node.keys):
            found.append((node.lineno, "codes a tie in a dict"))
        if isinstance(node, ast.IfExp) and (_is_tie(node.body) or _is_tie(node.orelse)):
            found.append((node.lineno, "codes a tie in a conditional"))
    return sorted(found)


def test_no_module_outside_the_pairwise_home_decodes_answers_or_names_contestants():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _sources()
        for line, what in hand_decoding(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "ask ratings.pairwise (outcome_of, winner_of, contestant_of):\n" + "\n".join(offenders)


class TestTheScanner:
    """The scanner finds the shapes the five old copies had, so a green run means something."""

    def test_it_finds_the_old_hand_decoding_of_answers(self):
        source = (
            "from annotation.task_types import TIE\n"
            'code = {pair[0]: 1.0, pair[1]: 0.0, TIE: 0.5}.get(value.get("choice"))\n'
            'winner = names[value["choice"]]\n'
            "score = 0.5 if choice == TIE else 1.0\n"
            "winner = TIE if code == 0.5 else first\n"
        )
        assert hand_decoding(source) == [
            (2, "codes a tie in a dict"),
            (2, "reads an answer's choice"),
            (3, "reads an answer's choice"),
            (4, "compares with TIE"),
            (5, "codes a tie in a conditional"),
        ]

    def test_it_finds_contestants_named_from_provenance(self):
        source = 'model = provenance.get("model")\nname = row.provenance["system"]\n'
        assert hand_decoding(source) == [
            (1, "names a contestant by provenance 'model'"),
            (2, "names a contestant by provenance 'system'"),
        ]

    def test_it_leaves_other_reads_alone(self):
        source = 'x = options.get("model")\ny = counts[TIE]\nz = settings["choice_label"]\n'
        assert hand_decoding(source) == []

    def test_a_tie_word_of_its_own_is_not_the_answers_tie(self):
        source = 'TIE = "tie"\nif winner.casefold() == TIE: pass\n'
        assert hand_decoding(source) == []
        assert hand_decoding("from ..task_types import TIE\n" + source) == [(3, "compares with TIE")]
