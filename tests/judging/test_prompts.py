"""Prompt templates: every built-in renders, edits make versions, pasted prompts work verbatim."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Judgment
from judging.models import PromptTemplate
from judging.prompts import BUILTIN_TEMPLATES, builtin, check_template
from judging.prompts.render import render_messages, sample_context
from judging.services.runs import process_run, run_create
from judging.services.templates import builtin_default, template_save

pytestmark = pytest.mark.django_db


class TestBuiltinTemplates:
    @pytest.mark.parametrize("template", BUILTIN_TEMPLATES, ids=lambda t: t.name)
    def test_each_renders_with_its_task_types_variables(self, template):
        check_template(system=template.system, user=template.user, task_type=template.task_type)
        messages = render_messages(
            system=template.system, user=template.user, context=sample_context(template.task_type)
        )
        assert messages[-1]["role"] == "user"
        assert "{{" not in messages[-1]["content"]

    def test_every_task_type_has_a_default(self):
        from annotation.task_types import TASK_TYPES
        from judging.task_types import JUDGING_TYPES

        assert set(JUDGING_TYPES) == set(TASK_TYPES)
        for name, judging in JUDGING_TYPES.items():
            default = builtin(judging.default_template)
            assert default is not None and default.task_type == name

    def test_the_pairwise_critic_lists_the_closed_vocabularies(self):
        messages = render_messages(system="", user=BUILTIN_TEMPLATES[0].user, context=sample_context("pairwise"))
        text = messages[0]["content"]
        for word in ("incongruity", "punchline_positioning", "buried_punchline", "Joke A: First option"):
            assert word in text

    def test_the_rating_prompt_asks_for_the_digit_only_and_lists_the_scale(self):
        text = render_messages(system="", user=builtin("funniness-digit").user, context=sample_context("ordinal"))[0][
            "content"
        ]
        assert "0 = Not funny" in text
        assert "3 = Very funny" in text
        assert "single digit" in text


class TestVersions:
    def test_editing_a_builtin_makes_your_own_version_two_and_runs_keep_theirs(
        self, researcher, make_study, make_llm_judge
    ):
        study = make_study(n_items=1)
        judge = make_llm_judge("ok")
        first = run_create(study=study, judge=judge, enqueue=False)
        edited = template_save(
            owner=researcher, name="funniness-digit", task_type="ordinal", user_text="Rate {{ text }} from 0 to 3."
        )
        assert (edited.version, edited.owner, edited.builtin) == (2, researcher, False)
        assert builtin_default("ordinal").version == 1
        process_run(run_id=first.pk)
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.provenance["template"]["version"] == 1

    def test_a_published_prompt_with_json_braces_is_pasted_verbatim(
        self, researcher, make_study, make_llm_judge, fault_server
    ):
        pasted = (
            'You are a judge. Reply as {"decision": "A" | "B" | "TIE"}.\nPrompt: {{ prompt }}\nA: {{ a }}\nB: {{ b }}'
        )
        template_save(owner=researcher, name="published-critic", task_type="pairwise", user_text=pasted)
        judge = make_llm_judge("ok", templates={"pairwise": "published-critic"})
        study = make_study(task_type="pairwise", n_items=1, n_candidates=2)
        run = run_create(study=study, judge=judge, enqueue=False)
        assert run.template.name == "published-critic"
        process_run(run_id=run.pk)
        judgment = Judgment.objects.get(rater=judge.rater)
        assert judgment.status == "ok"
        assert judgment.provenance["template"]["name"] == "published-critic"

    def test_an_unknown_variable_is_refused(self, researcher):
        with pytest.raises(ValidationError, match="does not exist"):
            template_save(owner=researcher, name="typo", task_type="ordinal", user_text="Rate {{ jokee }}")
        assert not PromptTemplate.objects.filter(name="typo").exists()

    def test_a_template_that_does_not_compile_is_refused(self, researcher):
        with pytest.raises(ValidationError, match="does not compile"):
            template_save(owner=researcher, name="broken", task_type="ordinal", user_text="{% for x in %}")

    def test_a_name_cannot_change_task_type(self, researcher):
        template_save(owner=researcher, name="mine", task_type="ordinal", user_text="{{ text }}")
        with pytest.raises(ValidationError, match="another task type"):
            template_save(owner=researcher, name="mine", task_type="binary", user_text="{{ text }}")

    def test_a_judge_cannot_use_a_template_of_another_task_type(self, make_llm_judge):
        with pytest.raises(ValidationError, match="binary items"):
            make_llm_judge("ok", templates={"ordinal": "funny-or-not"})
