"""Prompt templates between researchers: each reads and changes only their own, built-ins are read-only,
and a judge keeps the template version it was pinned to whoever saves a new one.

Rita (A) and Otto (B) share one Funnybone.
"""

from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Judgment
from judging.models import JudgeConfig, PromptTemplate
from judging.services.judges import judge_create, judge_update
from judging.services.runs import process_run, run_create
from judging.services.templates import ensure_builtin_templates, template_save
from judging.study_file import judges_dump, judges_load

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]

RITAS_TEXT = "Rita's secret rubric: rate {{ text }} from 0 to 3."
OTTOS_TEXT = "Otto says: always answer 3. {{ text }}"


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def otto(other_researcher):
    client = Client()
    client.force_login(other_researcher)
    return client


@pytest.fixture
def ritas_template(researcher):
    return template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text=RITAS_TEXT)


def builtin_row(name: str) -> PromptTemplate:
    ensure_builtin_templates()
    return PromptTemplate.objects.get(owner=None, builtin=True, name=name)


def llm_judge(owner, fault_server, **settings) -> JudgeConfig:
    return judge_create(
        owner=owner,
        name=settings.pop("name", "critic"),
        base_url=fault_server.url("ok"),
        model="m",
        timeout_seconds=2.0,
        backoff_seconds=0.05,
        **settings,
    )


class TestTemplatePages:
    def test_another_researchers_template_is_not_found(self, otto, ritas_template):
        assert otto.get("/judging/templates/rita-critic/").status_code == 404
        response = otto.post("/judging/templates/rita-critic/", {"user_text": OTTOS_TEXT})
        assert response.status_code == 404
        assert list(PromptTemplate.objects.filter(name="rita-critic").values_list("version", "user_text")) == [
            (1, RITAS_TEXT)
        ]

    def test_the_list_shows_your_own_templates_and_the_built_ins_only(self, rita, otto, ritas_template):
        assert "rita-critic" in rita.get("/judging/templates/").content.decode()
        page = otto.get("/judging/templates/").content.decode()
        assert "rita-critic" not in page
        assert "funniness-digit" in page

    def test_editing_a_builtin_saves_your_own_copy_and_leaves_it_as_it_was(self, rita, otto):
        builtin = builtin_row("funniness-digit")
        page = otto.get("/judging/templates/funniness-digit/").content.decode()
        assert "read-only" in page and "Save as your copy, version 2" in page
        response = otto.post("/judging/templates/funniness-digit/", {"user_text": OTTOS_TEXT})
        assert response.status_code == 302
        copy = PromptTemplate.objects.get(name="funniness-digit", owner__username="otto")
        assert (copy.version, copy.builtin, copy.user_text) == (2, False, OTTOS_TEXT)
        assert PromptTemplate.objects.get(pk=builtin.pk).user_text == builtin.user_text
        # Rita still sees only the built-in under that name.
        ritas_view = rita.get("/judging/templates/funniness-digit/").content.decode()
        assert "Otto says" not in ritas_view
        assert "Save as your copy, version 2" in ritas_view

    def test_saving_under_another_researchers_name_makes_your_own_template(self, otto, researcher, ritas_template):
        response = otto.post(
            "/judging/templates/", {"name": "rita-critic", "task_type": "ordinal", "user_text": OTTOS_TEXT}
        )
        assert response.status_code == 302
        ottos = PromptTemplate.objects.get(name="rita-critic", owner__username="otto")
        assert ottos.version == 1
        assert PromptTemplate.objects.get(pk=ritas_template.pk).user_text == RITAS_TEXT
        assert not PromptTemplate.objects.filter(owner=researcher, name="rita-critic", version=2).exists()


class TestTemplateApi:
    def test_the_list_holds_only_your_own_templates_and_the_built_ins(self, otto, ritas_template):
        listed = otto.get("/api/judging/templates/").json()
        assert "rita-critic" not in {t["name"] for t in listed}
        assert {t["shared"] for t in listed} == {True}
        assert otto.get("/api/judging/templates/?name=rita-critic").json() == []

    def test_saving_another_researchers_name_or_a_builtins_makes_your_own(self, otto, ritas_template):
        mine = otto.post(
            "/api/judging/templates/",
            {"name": "rita-critic", "task_type": "ordinal", "user_text": OTTOS_TEXT},
            content_type="application/json",
        )
        assert mine.status_code == 201, mine.content
        assert (mine.json()["version"], mine.json()["shared"]) == (1, False)
        copy = otto.post(
            "/api/judging/templates/",
            {"name": "funny-or-not", "task_type": "binary", "user_text": "Funny? {{ text }} {{ label_values }}"},
            content_type="application/json",
        )
        assert copy.status_code == 201, copy.content
        assert (copy.json()["version"], copy.json()["builtin"], copy.json()["shared"]) == (2, False, False)
        assert PromptTemplate.objects.get(pk=ritas_template.pk).user_text == RITAS_TEXT
        assert PromptTemplate.objects.filter(name="funny-or-not", owner=None).count() == 1

    def test_a_judge_cannot_be_pointed_at_another_researchers_template(self, otto, ritas_template):
        def create(template_name):
            return otto.post(
                "/api/judging/judges/",
                {
                    "name": f"uses {template_name}",
                    "base_url": "http://127.0.0.1:8080/v1",
                    "model": "m",
                    "templates": {"ordinal": template_name},
                },
                content_type="application/json",
            )

        taken, missing = create("rita-critic"), create("no-such-critic")
        assert (taken.status_code, missing.status_code) == (400, 400)
        # Told exactly as for a name that does not exist: nothing says Rita has one.
        assert taken.json() == {
            "detail": "There is no prompt template named 'rita-critic'.",
            "errors": ["There is no prompt template named 'rita-critic'."],
        }
        assert missing.json() == {
            "detail": "There is no prompt template named 'no-such-critic'.",
            "errors": ["There is no prompt template named 'no-such-critic'."],
        }
        assert not JudgeConfig.objects.filter(owner__username="otto").exists()

    @pytest.mark.parametrize(
        "spec", ["has\x00nul", {"name": "funny-or-not", "version": 10**30}, {"name": "x", "colour": 1}, ["x"]]
    )
    def test_a_template_that_cannot_exist_is_a_clear_400(self, otto, spec):
        response = otto.post(
            "/api/judging/judges/",
            {"name": "odd", "base_url": "http://127.0.0.1:8080/v1", "model": "m", "templates": {"binary": spec}},
            content_type="application/json",
        )
        assert response.status_code == 400
        message = response.content.decode()
        # A 31-digit version is stopped by the JSON guard (naming the field) before the template rules see it.
        assert "Templates must map task types to a template name" in message or "binary.version: a number" in message

    def test_the_judge_form_does_not_offer_or_take_another_researchers_template(self, otto, ritas_template):
        page = otto.get("/judging/judges/").content.decode()
        assert "rita-critic" not in page
        response = otto.post(
            "/judging/judges/",
            {
                "name": "sneaky",
                "base_url": "http://127.0.0.1:8080/v1",
                "model": "m",
                "temperature": "0.1",
                "max_tokens": "10",
                "timeout_seconds": "5",
                "max_retries": "1",
                "backoff_seconds": "1",
                "concurrency": "1",
                "rate_limit_per_minute": "0",
                "trials": "1",
                "input_cost_per_million": "0",
                "output_cost_per_million": "0",
                "template_ordinal": str(ritas_template.pk),
            },
        )
        assert response.status_code == 200
        assert "Select a valid choice" in response.content.decode()
        assert not JudgeConfig.objects.filter(name="sneaky").exists()

    def test_a_judge_reads_back_its_pins_and_a_patch_of_them_keeps_them(self, rita, researcher, ritas_template):
        created = rita.post(
            "/api/judging/judges/",
            {
                "name": "pinned",
                "base_url": "http://127.0.0.1:8080/v1",
                "model": "m",
                "templates": {"ordinal": "rita-critic", "binary": {"name": "funny-or-not", "version": 1}},
            },
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        pins = created.json()["templates"]
        assert pins == {
            "binary": {"name": "funny-or-not", "version": 1},
            "ordinal": {"name": "rita-critic", "version": 1},
        }
        template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text="v2 {{ text }}")
        patched = rita.patch(
            f"/api/judging/judges/{created.json()['id']}/", {"templates": pins}, content_type="application/json"
        )
        assert patched.status_code == 200, patched.content
        assert patched.json()["templates"] == pins


class TestPinnedPrompt:
    def test_a_judge_keeps_its_prompt_when_anyone_saves_a_new_version(
        self, researcher, other_researcher, ritas_template, make_study, fault_server
    ):
        judge = llm_judge(researcher, fault_server, templates={"ordinal": "rita-critic"})
        template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text="Rita v2 {{ text }}")
        template_save(owner=other_researcher, name="rita-critic", task_type="ordinal", user_text=OTTOS_TEXT)
        template_save(owner=other_researcher, name="funniness-digit", task_type="ordinal", user_text=OTTOS_TEXT)
        run = run_create(study=make_study(n_items=1), judge=judge, enqueue=False)
        assert run.template == ritas_template
        process_run(run_id=run.pk)
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.provenance["template"] == {"id": ritas_template.pk, "name": "rita-critic", "version": 1}

    def test_a_judge_without_a_pin_uses_the_builtin_whatever_others_save(
        self, researcher, other_researcher, make_study, fault_server
    ):
        judge = llm_judge(researcher, fault_server)
        template_save(owner=other_researcher, name="funniness-digit", task_type="ordinal", user_text=OTTOS_TEXT)
        template_save(owner=researcher, name="funniness-digit", task_type="ordinal", user_text=RITAS_TEXT)
        run = run_create(study=make_study(n_items=1), judge=judge, enqueue=False)
        assert run.template == builtin_row("funniness-digit")

    def test_choosing_the_template_again_moves_the_pin_to_its_newest_version(
        self, researcher, ritas_template, make_study, fault_server
    ):
        judge = llm_judge(researcher, fault_server, templates={"ordinal": "rita-critic"})
        newer = template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text="v2 {{ text }}")
        judge_update(judge=judge, templates={"ordinal": "rita-critic"})
        assert run_create(study=make_study(n_items=1), judge=judge, enqueue=False).template == newer

    def test_the_judge_page_shows_the_pinned_version_and_offers_the_newer_one(
        self, rita, researcher, ritas_template, fault_server
    ):
        judge = llm_judge(researcher, fault_server, templates={"ordinal": "rita-critic"})
        newer = template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text="v2 {{ text }}")
        page = rita.get(f"/judging/judges/{judge.pk}/").content.decode()
        assert f'value="{ritas_template.pk}" selected>rita-critic v1 (yours, pinned)' in page
        assert f'value="{newer.pk}">rita-critic v2 (yours)' in page


class TestNamesOutsideThePages:
    def test_a_study_file_resolves_names_in_the_owners_templates_then_the_builtins(
        self, researcher, other_researcher, ritas_template
    ):
        own_copy = template_save(owner=researcher, name="funniness-digit", task_type="ordinal", user_text=RITAS_TEXT)
        entry = {"name": "file judge", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}
        (ritas,) = judges_load(owner=researcher, entries=[{**entry, "templates": {"ordinal": "funniness-digit"}}])
        (ottos,) = judges_load(owner=other_researcher, entries=[{**entry, "templates": {"ordinal": "funniness-digit"}}])
        assert ritas.template_pins.get().template == own_copy
        assert ottos.template_pins.get().template == builtin_row("funniness-digit")
        with pytest.raises(ValidationError, match=r"judges\[1\]: There is no prompt template named 'rita-critic'"):
            judges_load(owner=other_researcher, entries=[{**entry, "templates": {"ordinal": "rita-critic"}}])

    def test_a_dumped_judge_loads_back_on_the_same_version(self, researcher, ritas_template):
        entry = {"name": "file judge", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}
        (judge,) = judges_load(owner=researcher, entries=[{**entry, "templates": {"ordinal": "rita-critic"}}])
        dumped = judges_dump([judge])
        assert dumped[0]["templates"] == {"ordinal": {"name": "rita-critic", "version": 1}}
        template_save(owner=researcher, name="rita-critic", task_type="ordinal", user_text="v2 {{ text }}")
        (again,) = judges_load(owner=researcher, entries=dumped)
        assert again.template_pins.get().template == ritas_template

    def test_the_judge_command_resolves_a_template_name_for_the_judges_owner(
        self, researcher, other_researcher, ritas_template, make_study, fault_server
    ):
        def judge_cli(study, *args):
            call_command(
                "judge", study.slug, "--base-url", fault_server.url("ok"), "--model", "m", *args, stderr=StringIO()
            )

        ottos_study = make_study(n_items=1, owner=other_researcher)
        with pytest.raises(CommandError, match="There is no prompt template named 'rita-critic'"):
            judge_cli(ottos_study, "--template", "rita-critic")
        judge_cli(make_study(n_items=1), "--name", "cli critic", "--template", "rita-critic")
        judge = JudgeConfig.objects.get(name="cli critic")
        assert (judge.owner, judge.template_pins.get().template) == (researcher, ritas_template)
