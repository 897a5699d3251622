"""Prompt templates cannot read files, load code or build gigabytes: refused when saved, failed per item when run."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Judgment
from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
from judging.models import JudgeUnit, PromptTemplate
from judging.prompts.render import render_messages, sample_context
from judging.services.generation import generator_create
from judging.services.runs import process_run, run_create
from judging.services.templates import template_save

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]


def author():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get_or_create(username="template-author")[0]


def refusal(user_text: str, task_type: str = "ordinal") -> str:
    with pytest.raises(ValidationError) as caught:
        template_save(owner=author(), name="hostile", task_type=task_type, user_text=user_text)
    assert not PromptTemplate.objects.filter(name="hostile").exists()
    return " ".join(caught.value.message_dict["user_text"])


class TestSavingRefusesDangerousTemplates:
    def test_a_padding_filter_asking_for_a_gigabyte_is_refused_before_it_allocates(self):
        message = refusal('{{ "a"|ljust:"1000000000" }}')
        assert "ljust:1000000000 asks for 1,000,000,000 characters" in message
        assert "100,000" in message

    @pytest.mark.parametrize(
        "source",
        [
            '{{ text|rjust:"500000000" }}',
            '{{ text|center:"500000000" }}',
            '{{ 1|stringformat:"0999999999d" }}',
            '{{ "1e999999999"|floatformat:2 }}',
            '{% filter ljust:"999999999" %}x{% endfilter %}',
        ],
    )
    def test_every_size_taking_filter_is_bounded(self, source):
        assert "at most" in refusal(source) or "more than" in refusal(source)

    def test_include_of_a_system_file_is_refused_at_compile_time(self):
        message = refusal('{% include "/etc/passwd" %}')
        assert "{% include %} is not available in prompt templates" in message
        assert "root:" not in message

    @pytest.mark.parametrize(
        "tag", ['{% extends "base.html" %}', "{% load humanize %}", "{% debug %}", "{% lorem 99999999 w %}"]
    )
    def test_tags_that_reach_outside_or_spin_are_refused(self, tag):
        assert "is not available in prompt templates" in refusal(tag)

    def test_doubling_text_until_it_is_huge_is_stopped_at_the_cap(self):
        doubling = "{% with a=a|add:a %}" * 20
        message = refusal("{% with a=text %}" + doubling + "{{ a }}" + "{% endwith %}" * 21)
        assert "the limit is 100,000 (FUNNYBONE_PROMPT_MAX_CHARS)" in message

    def test_the_cap_follows_the_setting(self, settings):
        settings.FUNNYBONE_PROMPT_MAX_CHARS = 50
        message = refusal("{{ text }} " * 10)
        assert "the limit is 50" in message

    def test_nested_loops_over_the_text_end_with_a_message(self):
        loops = "{% for a in text %}{% for b in text %}{% for c in text %}{% for d in text %}{% for e in text %}"
        message = refusal(loops + "{% endfor %}" * 5)
        assert "too much work" in message

    def test_a_template_with_a_system_part_is_refused_naming_that_field(self):
        with pytest.raises(ValidationError) as caught:
            template_save(
                owner=author(),
                name="hostile",
                task_type="ordinal",
                system_text='{% include "x" %}',
                user_text="{{ text }}",
            )
        assert set(caught.value.message_dict) == {"system_text"}

    def test_ordinary_filters_and_loops_still_work(self):
        messages = render_messages(
            system="",
            user='{% for c in candidates %}{{ c.label }}: {{ c.text|upper|truncatechars:8 }}{{ "|"|ljust:"3" }}{% endfor %}',
            context=sample_context("pairwise"),
        )
        assert messages[0]["content"] == "A: FIRST O…|  B: SECOND …|"

    def test_a_generator_prompt_is_checked_the_same_way(self, researcher):
        with pytest.raises(ValidationError) as caught:
            generator_create(
                owner=researcher,
                name="g",
                base_url="http://127.0.0.1:9/v1",
                model="m",
                user_text='{{ prompt|ljust:"1000000000" }}',
            )
        assert "ljust:1000000000" in " ".join(caught.value.message_dict["user_text"])


class TestSavingThroughPagesAndApi:
    def test_the_api_answers_400_naming_the_field(self, client, researcher):
        client.force_login(researcher)
        response = client.post(
            "/api/judging/templates/",
            {"name": "hostile", "task_type": "ordinal", "user_text": '{% include "/etc/passwd" %}'},
            content_type="application/json",
        )
        assert response.status_code == 400
        assert "is not available in prompt templates" in response.json()["user_text"][0]

    def test_the_page_shows_the_error_on_the_field(self, client, researcher):
        client.force_login(researcher)
        response = client.post(
            "/judging/templates/",
            {"name": "hostile", "task_type": "ordinal", "system_text": "", "user_text": '{{ "a"|ljust:"1000000000" }}'},
        )
        assert response.status_code == 200
        assert "ljust:1000000000 asks for 1,000,000,000 characters" in response.content.decode()
        assert not PromptTemplate.objects.filter(name="hostile").exists()


class TestRunning:
    def test_an_item_that_makes_the_prompt_too_long_fails_with_the_reason_on_its_judgment(
        self, settings, researcher, make_llm_judge
    ):
        settings.FUNNYBONE_PROMPT_MAX_CHARS = 2000
        # The sample item the check renders is short; a real item's text, repeated once per character, is not.
        template_save(
            owner=researcher, name="repeat", task_type="ordinal", user_text="{% for c in text %}{{ text }}{% endfor %}"
        )
        study = study_create(owner=researcher, name="long items", task_type="ordinal")
        items_create(
            study=study, items=[ItemSpec(external_id="long", text="x" * 100), ItemSpec(external_id="short", text="ok")]
        )
        study_set_state(study=study, state="open")
        judge = make_llm_judge("ok", templates={"ordinal": "repeat"})
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        failed = Judgment.objects.get(rater=judge.rater, item__external_id="long")
        assert failed.status == Judgment.Status.FAILED
        assert "10,000 characters long; the limit is 2,000" in failed.provenance["error"]
        assert Judgment.objects.get(rater=judge.rater, item__external_id="short").status == "ok"
        assert not JudgeUnit.objects.filter(run=run, status__in=["pending", "claimed"]).exists()
