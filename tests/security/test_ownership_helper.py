# SPDX-License-Identifier: GPL-3.0-or-later
"""The ownership rule lives in one place, ``annotation.access``, and says what it should.

The scan below reads every module that answers requests (views, API, forms, selectors) and
fails on an owner check written by hand there: a lookup on ``owner``/``owner_id``/``…__owner``
(``filter(owner=request.user)``, ``get_object_or_404(Study, owner=…)``, ``Q(study__owner=…)``)
or a comparison of an ``owner``/``owner_id`` attribute (``run.study.owner_id != request.user.pk``).
Passing ``owner=`` to a service that creates something is not a check and is allowed.
"""

import ast
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from annotation.access import get_owned_or_404, get_readable_or_404, owned_by, owner_path, readable_by
from annotation.models import ItemImport, Study
from judging.models import GenerationRun, GeneratorConfig, JudgeConfig, JudgeRun, PromptTemplate, Tournament
from judging.services.judges import ensure_baseline_judges
from judging.services.templates import ensure_builtin_templates, template_save
from ratings.models import AlignmentReport, Export

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
APPS = ("annotation", "ratings", "judging")
HELPER = ROOT / "annotation" / "access.py"
# Calls that look rows up (rather than create them).
LOOKUPS = {"filter", "exclude", "get", "get_object_or_404", "get_list_or_404", "Q", "get_or_create", "update_or_create"}
OWNER_ATTRIBUTES = {"owner", "owner_id"}


def _is_owner_lookup(keyword: str) -> bool:
    # owner=, owner_id=, study__owner=, owner__in=, study__owner__username= ...
    return any(part in OWNER_ATTRIBUTES for part in keyword.split("__"))


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def hand_written_owner_checks(source: str) -> list[str]:
    """Where ``source`` checks ownership itself: ``line: code`` for each place."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _call_name(node) in LOOKUPS:
            if any(k.arg and _is_owner_lookup(k.arg) for k in node.keywords):
                found.append(node)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr in OWNER_ATTRIBUTES for o in operands):
                found.append(node)
    return [f"{n.lineno}: {ast.get_source_segment(source, n)}" for n in found]


def request_modules() -> list[Path]:
    """The modules that serve pages and API endpoints, or build what they show."""
    modules = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT / app)
            if "migrations" in relative.parts or path == HELPER:
                continue
            name = path.stem
            if (
                "views" in relative.parts
                or "api" in relative.parts
                or "selectors" in relative.parts
                or name in ("api", "forms", "selectors")
                or name.endswith(("views", "_selectors"))
            ):
                modules.append(path)
    return modules


class TestOneHomeForTheOwnershipCheck:
    def test_the_scan_finds_the_modules_that_answer_requests(self):
        scanned = {str(p.relative_to(ROOT)) for p in request_modules()}
        expected = {
            "annotation/views/researcher.py",
            "annotation/views/protocol_pages.py",
            "annotation/api/views.py",
            "annotation/selectors/researcher.py",
            "annotation/selectors/annotator.py",
            "ratings/views.py",
            "ratings/alignment/views.py",
            "ratings/export_views.py",
            "ratings/protocol_views.py",
            "ratings/api.py",
            "judging/views.py",
            "judging/generation_views.py",
            "judging/forms.py",
            "judging/api/views.py",
            "judging/api/bases.py",
            "judging/api/generation_views.py",
        }
        assert expected <= scanned, sorted(expected - scanned)

    @pytest.mark.parametrize(
        "code",
        [
            "get_object_or_404(Study, slug=slug, owner=request.user)",
            "Study.objects.filter(owner=user, pk=pk).first()",
            "JudgeRun.objects.filter(study__owner=request.user)",
            "Export.objects.get(pk=pk, study__owner_id=request.user.pk)",
            "Q(owner_id=user.pk)",
            "run.study.owner_id != request.user.pk",
            "if study.owner == request.user: pass",
            "GeneratorConfig.objects.filter(owner__username=name)",
        ],
    )
    def test_the_scan_recognises_a_hand_written_check(self, code):
        assert hand_written_owner_checks(code) != []

    @pytest.mark.parametrize(
        "code",
        [
            "study_create(owner=request.user, actor=request.user, name=name)",
            "RunForm(request.POST or None, owner=request.user)",
            "get_owned_or_404(Tournament, user=request.user, pk=pk)",
            "owned_by(JudgeConfig, user=request.user).filter(name=name)",
        ],
    )
    def test_the_scan_lets_creation_and_the_helper_through(self, code):
        assert hand_written_owner_checks(code) == []

    def test_no_view_api_form_or_selector_checks_ownership_itself(self):
        places = [
            f"{path.relative_to(ROOT)}:{place}"
            for path in request_modules()
            for place in hand_written_owner_checks(path.read_text())
        ]
        assert places == [], "Use annotation.access (owned_by, get_owned_or_404, ...) instead:\n" + "\n".join(places)


class TestWhatTheHelperSays:
    def test_every_owned_model_knows_its_owner(self):
        paths = {
            m: owner_path(m)
            for m in (Study, JudgeConfig, GeneratorConfig, Tournament, PromptTemplate, JudgeRun, GenerationRun)
        }
        paths |= {m: owner_path(m) for m in (ItemImport, Export, AlignmentReport)}
        assert {m.__name__: p for m, p in paths.items()} == {
            "Study": "owner",
            "JudgeConfig": "owner",
            "GeneratorConfig": "owner",
            "Tournament": "owner",
            "PromptTemplate": "owner",
            "JudgeRun": "study__owner",
            "GenerationRun": "study__owner",
            "ItemImport": "study__owner",
            "Export": "study__owner",
            "AlignmentReport": "study__owner",
        }

    def test_another_researchers_object_is_a_404_and_absent_from_lists(self, researcher, other_researcher):
        judge = ensure_baseline_judges(owner=researcher)[0]
        assert get_owned_or_404(JudgeConfig, user=researcher, pk=judge.pk) == judge
        with pytest.raises(Http404):
            get_owned_or_404(JudgeConfig, user=other_researcher, pk=judge.pk)
        assert not owned_by(JudgeConfig, user=other_researcher).exists()

    def test_nobody_signed_in_owns_nothing(self, researcher):
        ensure_baseline_judges(owner=researcher)
        assert not owned_by(JudgeConfig, user=AnonymousUser()).exists()
        assert not owned_by(JudgeConfig, user=None).exists()
        assert not readable_by(PromptTemplate, user=AnonymousUser()).exists()

    def test_staff_see_only_their_own_on_the_pages_too(self, researcher):
        judge = ensure_baseline_judges(owner=researcher)[0]
        admin = get_user_model().objects.create_superuser("ada", "ada@example.org", "ada-password-123")
        with pytest.raises(Http404):
            get_owned_or_404(JudgeConfig, user=admin, pk=judge.pk)

    def test_shared_templates_are_readable_by_all_and_owned_by_none(self, researcher, other_researcher):
        ensure_builtin_templates()
        builtin = PromptTemplate.objects.filter(builtin=True).first()
        mine = template_save(owner=researcher, name="mine", task_type="ordinal", user_text="{{ text }}")
        assert get_readable_or_404(PromptTemplate, user=other_researcher, pk=builtin.pk) == builtin
        assert not owned_by(PromptTemplate, user=other_researcher).filter(pk=builtin.pk).exists()
        with pytest.raises(Http404):
            get_readable_or_404(PromptTemplate, user=other_researcher, pk=mine.pk)
