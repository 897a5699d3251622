# SPDX-License-Identifier: GPL-3.0-or-later
"""Who may open what: every URL of the site, requested as five kinds of visitor.

The roles are an anonymous visitor, a crowdworker (a browser session that entered
the study by its link, no account), an expert (an account with an expert rater that
accepted an invitation), the researcher who owns everything in the world fixture,
and another researcher. Each URL pattern is classified below; a pattern the table
does not know fails ``test_every_url_pattern_is_classified``, so a new page cannot
ship without saying who may open it.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import AuditEntry, Judgment, Study
from judging.models import JudgeConfig, JudgeRun, PromptTemplate, Tournament

from .conftest import World

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "crowd", "expert", "other", "owner")

# Kinds of URL.
PAGE = "researcher page"  # HTML for logged-in researchers
API = "researcher API"  # DRF: token or session
ANNOTATOR = "annotator page"  # bound to an enrollment held in the session
INVITE = "invitation link"  # an expert's personal link; once accepted, only its expert's account opens it
ACCOUNT = "any account"  # a page for whoever is signed in (an expert's list of studies)
PUBLIC = "public"  # anyone, by design
MEDIA = "media file"  # the study's owner, or a session holding an item the file is on; 404 for anyone else

# Scopes of researcher URLs.
OWN = "own"  # about one of the owner's objects: anyone else gets 404
GLOBAL = "global"  # a researcher's own list or a form for a new object; any researcher may open it


@dataclass(frozen=True)
class Route:
    kind: str
    methods: tuple[str, ...]
    kwargs: Callable[[World], dict] = field(default=lambda w: {})
    scope: str = OWN
    # Public routes: the statuses anyone gets (the page works without an account).
    public_statuses: tuple[int, ...] = ()
    why: str = ""


def study(w: World) -> dict:
    return {"pk": w.study.pk}


def slug(w: World) -> dict:
    return {"slug": w.study.slug}


def token(w: World) -> dict:
    return {"entry_token": w.study.entry_token}


def generator(w: World) -> dict:
    """The owner's generator, made the first time it is asked for."""
    from judging.models import GeneratorConfig
    from judging.services.generation import generator_create

    found = GeneratorConfig.objects.filter(owner=w.owner).first()
    # It sees images: the media route puts a picture on the study's items, and a text-only one would be refused.
    found = found or generator_create(
        owner=w.owner, name="owners-gen", base_url="http://127.0.0.1:9/v1", model="m", sees_images=True
    )
    return {"pk": found.pk}


def generation(w: World) -> dict:
    """A generation run on the owner's study, made the first time it is asked for."""
    from judging.models import GenerationRun, GeneratorConfig
    from judging.services.generation import generation_run_create

    found = GenerationRun.objects.filter(study=w.study).first()
    if found is None:
        gen = GeneratorConfig.objects.get(pk=generator(w)["pk"])
        found = generation_run_create(study=w.study, generators=[gen], enqueue=False)
    return {"pk": found.pk}


# A figure the JEST report draws whenever it has ratings.
PROTOCOL_FIGURE = "spearman-heatmap"


def protocol_study(w: World) -> dict:
    """The owner's study made from the JEST template, with a few imported ratings; made when first asked for."""
    from annotation.protocols import study_from_template
    from annotation.services.imported_judgments import ImportedJudgment, judgments_import
    from annotation.services.studies import ItemSpec, items_create

    found = Study.objects.filter(owner=w.owner, protocol="jest").first()
    if found is None:
        found = study_from_template(owner=w.owner, template="jest", name="Owner's JEST study")
        items_create(
            study=found, items=[ItemSpec(external_id=f"t{i}", prompt="Setup", text=f"Response {i}") for i in range(4)]
        )
        judgments_import(
            study=found,
            judgments=[
                ImportedJudgment(rater=f"R{r}", item=f"t{i}", value={"rating": (i + r) % 4})
                for r in range(3)
                for i in range(4)
            ],
        )
    return {"slug": found.slug}


def held_media(w: World) -> dict:
    """A picture on the items the crowdworker and the expert hold, made the first time it is asked for."""
    from annotation.media.checks import check_media
    from annotation.media.store import StoredFiles, media_store
    from annotation.models import Assignment, MediaAttachment
    from tests.hostile_files import png

    checked = check_media(png(), "picture.png")
    media = media_store(study=w.study, checked=checked, original_name="picture.png", written=StoredFiles())
    if not media.attachments.exists():
        held = Assignment.objects.filter(pk__in=w.assignments.values()).values_list("item_id", flat=True)
        MediaAttachment.objects.bulk_create(MediaAttachment(media=media, item_id=item_id) for item_id in held)
    return {"public_id": media.public_id}


def qualified(w: World) -> dict:
    """The owner's study, given a qualification test (again, if a PUT of its rater steps took it away)."""
    from annotation.models import Qualification

    w.study.refresh_from_db()
    if w.study.qualification_id is None:
        item = {"id": "q1", "text": "Rate this: a test joke.", "gold": {"rating": 2}}
        test, _ = Qualification.objects.get_or_create(
            owner=w.owner,
            name="owners-test",
            defaults={"task_type": w.study.task_type, "items": [item], "min_correct": 1},
        )
        Study.objects.filter(pk=w.study.pk).update(qualification=test)
    return {"pk": w.study.pk}


def webhook(w: World) -> dict:
    from judging.models import Webhook

    found = Webhook.objects.filter(owner=w.owner).first()
    found = found or Webhook.objects.create(owner=w.owner, url="http://127.0.0.1:9/hook", secret="s", events=[])
    return {"pk": found.pk}


def delivery(w: World) -> dict:
    from judging.models import Webhook, WebhookDelivery

    hook = Webhook.objects.get(pk=webhook(w)["pk"])
    found = WebhookDelivery.objects.filter(webhook=hook).first()
    found = found or WebhookDelivery.objects.create(webhook=hook, event="study.opened", payload={}, status="failed")
    return {"pk": found.pk}


MATRIX: dict[str, Route] = {
    "annotator:media": Route(MEDIA, ("GET",), held_media),
    # The annotator's side.
    "annotator:entry": Route(
        PUBLIC, ("GET",), token, public_statuses=(400,), why="the study link; without PROLIFIC_PID it says so"
    ),
    "annotator:invite": Route(INVITE, ("GET", "POST"), lambda w: {"token": w.invitation.token}),
    "annotator:expert_home": Route(ACCOUNT, ("GET",)),
    "annotator:lease": Route(ANNOTATOR, ("POST",), token),
    "annotator:consent": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:qualification": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:practice": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:questions": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:declined": Route(PUBLIC, ("GET",), token, public_statuses=(200,), why="a thank-you page"),
    "annotator:instructions": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:item": Route(ANNOTATOR, ("GET", "POST"), token),
    "annotator:done": Route(ANNOTATOR, ("GET",), token),
    "annotator:leaderboard": Route(
        PUBLIC, ("GET",), token, public_statuses=(404,), why="closed vote studies only; this one is ordinal"
    ),
    # After the annotator pages: the owner's preview enrols their session, which those pages then accept.
    "annotator:preview": Route(PAGE, ("POST",), token),
    # The researcher's pages.
    "researcher:study_list": Route(PAGE, ("GET",), scope=GLOBAL),
    "researcher:study_new": Route(PAGE, ("GET", "POST"), scope=GLOBAL),
    "researcher:study_upload": Route(PAGE, ("POST",), scope=GLOBAL),
    "researcher:builder_check_new": Route(PAGE, ("POST",), scope=GLOBAL),
    "researcher:builder_check": Route(PAGE, ("POST",), study),
    "researcher:study_detail": Route(PAGE, ("GET", "POST"), study),
    "researcher:study_state": Route(PAGE, ("POST",), study),
    "researcher:study_items": Route(PAGE, ("GET", "POST"), study),
    "researcher:item_format": Route(PAGE, ("GET",), study),
    "researcher:import_status": Route(PAGE, ("GET",), lambda w: {"pk": w.study.pk, "import_pk": w.item_import.pk}),
    "researcher:progress": Route(PAGE, ("GET",), study),
    "researcher:invitation_new": Route(PAGE, ("POST",), study),
    "researcher:study_download": Route(PAGE, ("GET",), study),
    "researcher:rater_steps": Route(PAGE, ("GET", "POST"), study),
    "researcher:qualification_allowlist": Route(PAGE, ("GET",), qualified),
    "crowd:page": Route(PAGE, ("GET",), study),
    "crowd:token": Route(PAGE, ("POST",), study),
    "crowd:link": Route(PAGE, ("POST",), study),
    "crowd:withdraw": Route(PAGE, ("POST",), study),
    "crowd:act": Route(PAGE, ("POST",), lambda w: {"pk": w.study.pk, "action": "approve"}),
    # The researcher's API.
    "api:schema": Route(PUBLIC, ("GET",), public_statuses=(200,), why="the OpenAPI description, no data"),
    "api:study_list": Route(API, ("GET",), scope=GLOBAL),
    "api:study_create": Route(API, ("POST",), scope=GLOBAL),
    "api:study_detail": Route(API, ("GET",), study),
    "api:study_update": Route(API, ("PATCH",), study),
    "api:study_open": Route(API, ("POST",), study),
    "api:study_close": Route(API, ("POST",), study),
    "api:study_progress": Route(API, ("GET",), study),
    "api:item_list": Route(API, ("GET",), study),
    "api:item_import": Route(API, ("POST",), study),
    "api:import_detail": Route(API, ("GET",), lambda w: {"pk": w.study.pk, "import_pk": w.item_import.pk}),
    "api:judgment_list": Route(API, ("GET",), study),
    # Judges.
    "judging:judge_list": Route(PAGE, ("GET", "POST"), scope=GLOBAL),
    "judging:webhook_list": Route(PAGE, ("GET", "POST"), scope=GLOBAL),
    "judging:webhook_delete": Route(PAGE, ("POST",), webhook),
    "judging:webhook_redeliver": Route(PAGE, ("POST",), delivery),
    "judging:baselines_add": Route(PAGE, ("POST",), scope=GLOBAL),
    "judging:judge_edit": Route(PAGE, ("GET", "POST"), lambda w: {"pk": w.judge.pk}),
    "judging:judge_test": Route(PAGE, ("POST",), lambda w: {"pk": w.judge.pk}),
    "judging:template_list": Route(
        PAGE, ("GET", "POST"), scope=GLOBAL, why="each researcher lists their own templates and the built-ins"
    ),
    "judging:template_edit": Route(PAGE, ("GET", "POST"), lambda w: {"name": w.template.name}),
    "judging:study_runs": Route(PAGE, ("GET", "POST"), lambda w: {"study_pk": w.study.pk}),
    "judging:tournament_new": Route(PAGE, ("GET", "POST"), lambda w: {"study_pk": w.pairwise.pk}),
    "judging:run_detail": Route(PAGE, ("GET",), lambda w: {"pk": w.run.pk}),
    "judging:run_cancel": Route(PAGE, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging:run_resume": Route(PAGE, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging:run_retry_failed": Route(PAGE, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging:tournament_detail": Route(PAGE, ("GET",), lambda w: {"pk": w.tournament.pk}),
    "judging:tournament_cancel": Route(PAGE, ("POST",), lambda w: {"pk": w.tournament.pk}),
    "judging:tournament_human_check": Route(PAGE, ("POST",), lambda w: {"pk": w.tournament.pk}),
    "judging-api-judges": Route(API, ("GET", "POST"), scope=GLOBAL),
    "judging-api-judge": Route(API, ("GET", "PATCH", "DELETE"), lambda w: {"pk": w.judge.pk}),
    "judging-api-runs": Route(API, ("GET", "POST"), scope=GLOBAL),
    "judging-api-run": Route(API, ("GET",), lambda w: {"pk": w.run.pk}),
    "judging-api-run-cancel": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging-api-run-resume": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging-api-run-retry-failed": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "judging-api-templates": Route(
        API, ("GET", "POST"), scope=GLOBAL, why="each researcher lists their own templates and the built-ins"
    ),
    # Candidate generation.
    "judging:generator_list": Route(PAGE, ("GET", "POST"), scope=GLOBAL),
    "judging:generator_edit": Route(PAGE, ("GET", "POST"), generator),
    "judging:generation_new": Route(PAGE, ("POST",), lambda w: {"study_pk": w.study.pk}),
    "judging:generation_detail": Route(PAGE, ("GET",), generation),
    "judging:generation_cancel": Route(PAGE, ("POST",), generation),
    "judging:generation_resume": Route(PAGE, ("POST",), generation),
    "judging-api-generators": Route(API, ("GET", "POST"), scope=GLOBAL),
    "judging-api-generator": Route(API, ("GET", "PATCH"), generator),
    "judging-api-generations": Route(API, ("GET", "POST"), scope=GLOBAL),
    "judging-api-generation": Route(API, ("GET",), generation),
    "judging-api-generation-cancel": Route(API, ("POST",), generation),
    "judging-api-generation-resume": Route(API, ("POST",), generation),
    # Analysis, alignment, exports.
    "ratings:api_agreement": Route(API, ("GET",), slug),
    "ratings:study_analysis": Route(PAGE, ("GET",), slug),
    "ratings:protocol_report": Route(PAGE, ("GET",), protocol_study),
    "ratings:protocol_workbook": Route(PAGE, ("GET",), protocol_study),
    "ratings:protocol_figure": Route(
        PAGE, ("GET",), lambda w: {**protocol_study(w), "key": PROTOCOL_FIGURE, "fmt": "svg"}
    ),
    "researcher:study_from_template": Route(PAGE, ("GET", "POST"), scope=GLOBAL),
    "researcher:protocol_import": Route(PAGE, ("GET", "POST"), study),
    "researcher:oogiri_tasks": Route(PAGE, ("POST",), study),
    "researcher:semeval_edits": Route(PAGE, ("POST",), study),
    "alignment:report": Route(PAGE, ("GET",), slug),
    "alignment:recompute": Route(PAGE, ("POST",), slug),
    "alignment:judges": Route(PAGE, ("GET",), slug),
    "alignment:judges-recompute": Route(PAGE, ("POST",), slug),
    "alignment:status": Route(PAGE, ("GET",), lambda w: {"slug": w.study.slug, "pk": w.report.pk}),
    "alignment:plot": Route(
        PAGE,
        ("GET",),
        lambda w: {"slug": w.study.slug, "pk": w.report.pk, "name": "distributions", "fmt": "svg"},
    ),
    "exports:page": Route(PAGE, ("GET",), slug),
    "exports:request": Route(PAGE, ("POST",), slug),
    "exports:card": Route(PAGE, ("POST",), slug),
    "exports:status": Route(PAGE, ("GET",), lambda w: {"pk": w.export.pk}),
    "exports:download": Route(PAGE, ("GET",), lambda w: {"pk": w.export.pk}),
    "exports:api_create": Route(API, ("POST",), slug),
    "exports:api_status": Route(API, ("GET",), lambda w: {"pk": w.export.pk}),
    # API v1 (funnybone/api_urls.py): the same rules at one address per resource.
    "v1:schema": Route(PUBLIC, ("GET",), public_statuses=(200,), why="the OpenAPI description, no data"),
    "v1:study_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:study_from_file": Route(API, ("POST",), scope=GLOBAL),
    "v1:study_detail": Route(API, ("GET", "PATCH"), study),
    "v1:study_open": Route(API, ("POST",), study),
    "v1:study_close": Route(API, ("POST",), study),
    "v1:study_progress": Route(API, ("GET",), study),
    "v1:item_list": Route(API, ("GET",), study),
    "v1:import_list": Route(API, ("GET", "POST"), study),
    "v1:import_detail": Route(API, ("GET",), lambda w: {"pk": w.study.pk, "import_pk": w.item_import.pk}),
    "v1:judgment_list": Route(API, ("GET",), study),
    "v1:report_agreement": Route(API, ("GET",), study),
    "v1:report_alignment": Route(API, ("GET",), study),
    "v1:study_rater_steps": Route(API, ("GET", "PUT"), study),
    "v1:study_allowlist": Route(API, ("GET",), qualified),
    "v1:withdrawal_create": Route(API, ("POST",), study),
    "v1:export_list": Route(API, ("GET", "POST"), study),
    "v1:export_detail": Route(API, ("GET",), lambda w: {"pk": w.export.pk}),
    "v1:export_download": Route(API, ("GET",), lambda w: {"pk": w.export.pk}),
    "v1:judge_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:judge_detail": Route(API, ("GET", "PATCH", "DELETE"), lambda w: {"pk": w.judge.pk}),
    "v1:template_list": Route(
        API, ("GET", "POST"), scope=GLOBAL, why="each researcher lists their own templates and the built-ins"
    ),
    "v1:run_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:run_detail": Route(API, ("GET",), lambda w: {"pk": w.run.pk}),
    "v1:run_cancel": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "v1:run_resume": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "v1:run_retry_failed": Route(API, ("POST",), lambda w: {"pk": w.run.pk}),
    "v1:tournament_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:tournament_detail": Route(API, ("GET",), lambda w: {"pk": w.tournament.pk}),
    "v1:tournament_cancel": Route(API, ("POST",), lambda w: {"pk": w.tournament.pk}),
    "v1:tournament_standings": Route(API, ("GET",), lambda w: {"pk": w.tournament.pk}),
    "v1:generator_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:generator_detail": Route(API, ("GET", "PATCH"), generator),
    "v1:generation_run_list": Route(API, ("GET", "POST"), scope=GLOBAL),
    "v1:generation_run_detail": Route(API, ("GET",), generation),
    "v1:generation_run_cancel": Route(API, ("POST",), generation),
    "v1:generation_run_resume": Route(API, ("POST",), generation),
    # Accounts.
    "login": Route(PUBLIC, ("GET",), public_statuses=(200,)),
    "home": Route(PUBLIC, ("GET",), public_statuses=(302,), why="sends everyone to the study list (its login first)"),
    "favicon": Route(PUBLIC, ("GET",), public_statuses=(301,), why="the site icon"),
    "logout": Route(PUBLIC, ("GET",), public_statuses=(405,), why="logging out takes a POST"),
}


def url_names() -> list[str]:
    """Every named URL pattern of the site, namespaced, except the admin's."""
    names: list[str] = []

    def walk(patterns, namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace == "admin":
                    continue
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern):
                names.append(f"{namespace}{pattern.name}" if pattern.name else f"<unnamed {pattern.pattern}>")

    walk(get_resolver().url_patterns, "")
    return names


def is_login_redirect(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse(settings.LOGIN_URL))


def request(client: Client, method: str, url: str, data: dict):
    if method == "GET":
        return client.get(url)
    if method == "POST":
        return client.post(url, data)
    return client.generic(method, url, "{}", content_type="application/json")


def expectation(route: Route, role: str, method: str) -> tuple[str, Callable[[object], bool]]:
    """What ``role`` should get from ``method`` on ``route``: a description and a check."""
    code = lambda r: r.status_code  # noqa: E731
    authorized = (
        "allowed",
        lambda r: code(r) < 500 and code(r) not in (401, 403, 404, 405) and not is_login_redirect(r),
    )
    success = ("2xx/3xx", lambda r: 200 <= code(r) < 400 and not is_login_redirect(r))
    hidden = ("403/404", lambda r: code(r) in (403, 404))
    if route.kind == PUBLIC:
        return f"one of {route.public_statuses}", lambda r: code(r) in route.public_statuses
    if route.kind == INVITE:
        if role in ("anonymous", "crowd"):
            return "login redirect", is_login_redirect
        # Accepted by the expert: anyone else is told it is taken.
        return ("2xx/3xx", success[1]) if role == "expert" else ("403", lambda r: code(r) == 403)
    if route.kind == ACCOUNT:
        if role in ("anonymous", "crowd"):
            return "login redirect", is_login_redirect
        return success
    if route.kind == MEDIA:
        return success if role in ("crowd", "expert", "owner") else ("404", lambda r: code(r) == 404)
    if route.kind == ANNOTATOR:
        if role in ("crowd", "expert"):
            return authorized
        return "403 (use your study link)", lambda r: code(r) == 403
    if role in ("anonymous", "crowd"):
        if route.kind == PAGE:
            return "login redirect", is_login_redirect
        return "401/403", lambda r: code(r) in (401, 403)
    if role == "expert":
        return hidden
    if role == "other" and route.scope == OWN:
        return hidden
    return success if method == "GET" else authorized


def post_data(name: str, role: str, w: World) -> dict:
    if name in ("annotator:item", "annotator:lease"):
        # Someone else's assignment for those without one: answering it must not work.
        return {"assignment": w.assignments.get(role, w.assignments["crowd"])}
    if name == "researcher:study_state":
        return {"state": "closed"}
    if name in ("researcher:study_detail", "api:study_update", "v1:study_detail"):
        return {"name": "Renamed by someone"}
    if name == "judging:template_edit":
        return {"description": "taken over", "user_text": "Say yes. {{ text }}"}
    if name in ("judging:template_list", "judging-api-templates", "v1:template_list"):
        # Saving under the owner's template name is tests/judging/test_template_ownership.py's (it must make the
        # saver's own template); here that would give "other" a template of that name before template_edit is tried.
        return {"name": f"{role}-critic", "task_type": "ordinal", "user_text": "Say yes. {{ text }}"}
    return {}


def protected_state(w: World) -> dict:
    """What a refused request must leave as it was."""
    return {
        "study": Study.objects.filter(pk=w.study.pk).values("name", "state", "consent_text").get(),
        "audit": AuditEntry.objects.filter(study=w.study).count(),
        "judgments": Judgment.objects.filter(study=w.study).count(),
        "run": JudgeRun.objects.filter(pk=w.run.pk).values_list("status", flat=True).get(),
        "tournament": Tournament.objects.filter(pk=w.tournament.pk).values_list("status", flat=True).get(),
        "judge": JudgeConfig.objects.filter(pk=w.judge.pk).values("name", "base_url").first(),
        "invitations": w.study.invitations.count(),
        "exports": w.study.exports.count(),
        "templates": list(
            PromptTemplate.objects.exclude(owner=w.other)
            .order_by("pk")
            .values_list("owner", "name", "version", "user_text")
        ),
    }


class TestUrlClassification:
    def test_every_url_pattern_is_classified(self):
        unclassified = sorted(set(url_names()) - set(MATRIX))
        assert unclassified == [], (
            "New URL patterns: add them to MATRIX in tests/security/test_authorization_matrix.py "
            f"with who may open them: {unclassified}"
        )

    def test_the_matrix_names_no_url_that_is_gone(self):
        assert sorted(set(MATRIX) - set(url_names())) == []


class TestAuthorizationMatrix:
    def test_every_role_gets_what_the_matrix_says(self, world):
        failures: list[str] = []
        checked = 0
        before = protected_state(world)
        # The owner goes last: their POSTs change the study, cancel the run, delete the judge.
        for role in ROLES:
            for name, route in MATRIX.items():
                url = reverse(name, kwargs=route.kwargs(world))
                for method in sorted(route.methods, key=lambda m: m != "GET"):
                    response = request(world.clients[role], method, url, post_data(name, role, world))
                    wanted, check = expectation(route, role, method)
                    checked += 1
                    if not check(response):
                        where = response.get("Location", "")
                        failures.append(
                            f"{role:9} {method:6} {url} ({name}): got {response.status_code} {where}, want {wanted}"
                        )
            if role == "other":
                assert protected_state(world) == before, "a refused request changed the owner's data"
        assert checked > 5 * len(MATRIX)
        assert failures == [], "\n".join(failures)

    def test_a_post_only_url_never_answers_a_get_with_success(self, world):
        for name, route in MATRIX.items():
            if "GET" in route.methods or route.kind == PUBLIC:
                continue
            url = reverse(name, kwargs=route.kwargs(world))
            for role in ROLES:
                response = world.clients[role].get(url)
                assert response.status_code in (302, 401, 403, 404, 405), (role, name, response.status_code)
                if response.status_code == 302:
                    assert is_login_redirect(response), (role, name, response["Location"])


class TestEnrollmentBoundPages:
    def test_a_session_enrolled_in_another_study_cannot_open_this_ones_items(self, world, researcher):
        from .conftest import annotator_url, begin_as_crowdworker

        elsewhere = Client()
        begin_as_crowdworker(elsewhere, world.pairwise, "worker-elsewhere")
        for step in ("consent", "instructions", "item", "done"):
            assert elsewhere.get(annotator_url(world.study, step)).status_code == 403
        response = elsewhere.post(annotator_url(world.study, "item"), {"assignment": world.assignments["crowd"]})
        assert response.status_code == 403
        assert not Judgment.objects.filter(assignment_id=world.assignments["crowd"]).exists()

    def test_an_expert_cannot_answer_the_crowdworkers_assignment(self, world):
        from .conftest import annotator_url

        response = world.clients["expert"].post(
            annotator_url(world.study, "item"), {"assignment": world.assignments["crowd"], "rating": "2"}
        )
        assert response.status_code == 404
        assert not Judgment.objects.filter(assignment_id=world.assignments["crowd"]).exists()


class TestTakenInvitation:
    def test_a_researcher_who_opens_a_taken_invitation_stays_a_researcher(self, world):
        from annotation.models import Rater

        response = world.clients["other"].get(f"/invite/{world.invitation.token}/")
        assert response.status_code == 403
        assert not Rater.objects.filter(user=world.other).exists()
        assert world.clients["other"].get("/studies/").status_code == 200


class TestAdmin:
    def test_a_non_staff_researcher_is_sent_to_the_admin_login(self, client, researcher):
        client.force_login(researcher)
        response = client.get("/admin/")
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")

    def test_an_expert_is_sent_to_the_admin_login(self, client, expert):
        client.force_login(expert)
        assert client.get("/admin/annotation/study/")["Location"].startswith("/admin/login/")

    def test_staff_can_open_it(self, client, db):
        staff = get_user_model().objects.create_user("sam", "sam@example.org", "sam-password-123", is_staff=True)
        client.force_login(staff)
        assert client.get("/admin/").status_code == 200
