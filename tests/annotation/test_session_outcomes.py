"""The end-of-session outcomes live in one registry (annotation.outcomes); no view or template decides them again."""

import ast
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from annotation.models import Enrollment, Study
from annotation.outcomes import SESSION_OUTCOMES, session_outcome

ROOT = Path(settings.BASE_DIR)
# The outcomes' names, and the misleading ones they replaced ("ended" was failed checks, "empty" no work).
OUTCOME_NAMES = set(SESSION_OUTCOMES) | {"ended", "empty", "complete"}
STUDY_FIELDS = {f.name for f in Study._meta.get_fields()}


def _views() -> list[Path]:
    return sorted((ROOT / "annotation" / "views").glob("*.py"))


def _templates() -> list[Path]:
    return sorted((ROOT / "templates" / "annotation").rglob("*.html"))


def _mentions_outcome(node: ast.AST) -> bool:
    return any("outcome" in (getattr(n, "id", "") or getattr(n, "attr", "") or "") for n in ast.walk(node))


def outcome_literals_in_view(path: Path) -> list[str]:
    """Each place a view compares, assigns or passes an outcome by its name as a string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Assign):
            parts = [*node.targets, node.value]
        elif isinstance(node, ast.keyword) and node.arg and "outcome" in node.arg:
            parts = [ast.Name(id="outcome"), node.value]
        literals = [p.value for p in parts if isinstance(p, ast.Constant) and p.value in OUTCOME_NAMES]
        if literals and any(_mentions_outcome(p) for p in parts):
            found.append(f"{path.name}:{node.lineno}: {literals}")
    return found


TEMPLATE_COMPARISON = re.compile(
    r"outcome[\w.]*\s*(?:==|!=)\s*[\"'](\w+)[\"']|[\"'](\w+)[\"']\s*(?:==|!=)\s*\w*outcome"
)


class TestNoOutcomeIsNamedOutsideTheRegistry:
    def test_no_annotator_view_names_an_outcome_by_a_literal(self):
        assert len(_views()) >= 3  # the walk finds the views
        found = [hit for path in _views() for hit in outcome_literals_in_view(path)]
        assert not found, f"outcomes are decided in annotation.outcomes, not in views: {found}"

    def test_the_guard_catches_the_old_way_of_deciding_in_a_view(self, tmp_path):
        old = tmp_path / "old.py"
        old.write_text(
            'if enrollment.ended_early:\n    outcome = "ended"\nshown = outcome_for(study=s, outcome="empty")\n'
        )
        assert len(outcome_literals_in_view(old)) == 2

    def test_no_annotator_template_compares_an_outcome_with_a_literal(self):
        found = [
            f"{path.relative_to(ROOT)}: {match.group(0)}"
            for path in _templates()
            for match in TEMPLATE_COMPARISON.finditer(path.read_text())
        ]
        assert not found, f"the end pages take their words from the outcome: {found}"
        assert TEMPLATE_COMPARISON.search('{% if outcome == "ended" %}')  # and the pattern still sees the old way


class TestTheRegistry:
    @pytest.mark.parametrize("outcome", [o for o in SESSION_OUTCOMES.values() if o.fields])
    def test_each_outcome_with_a_code_names_study_fields_that_exist(self, outcome):
        assert {outcome.code_field, outcome.message_field, outcome.redirect_field} <= STUDY_FIELDS

    def test_the_outcome_names_say_what_happened(self):
        assert set(SESSION_OUTCOMES) == {
            "completed",
            "failed_checks",
            "closed",
            "no_work",
            "declined",
            "screened_out",
            "not_admitted",
        }
        for code in ("failed_checks", "no_work", "declined"):
            assert SESSION_OUTCOMES[code].fields == code  # the name and the study's fields agree

    @pytest.mark.parametrize(
        ("ended_early", "completed", "enough", "code"),
        [
            (True, True, True, "failed_checks"),
            (False, False, False, "closed"),
            (False, True, True, "completed"),
            (False, True, False, "no_work"),
        ],
    )
    def test_an_enrollment_reaches_one_outcome(self, ended_early, completed, enough, code):
        enrollment = Enrollment(ended_early=ended_early, completed_at=datetime.now(UTC) if completed else None)
        assert session_outcome(enrollment=enrollment, done_enough=lambda: enough).code == code
