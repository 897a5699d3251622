"""Qualification tests, practice with feedback and questionnaires around the items (annotation.rater_steps)."""

import re

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from annotation.models import Enrollment, Judgment, QualificationResult, QuestionAnswer, StepAnswer
from annotation.rater_steps import (
    allowlist_csv,
    demographic_questions,
    questionnaire_answers_clean,
    questionnaire_problems,
    rater_steps_save,
    study_questions,
)
from annotation.study_files import load_study_data
from tests.annotation.test_annotator_flow import answer_all, csrf_from, enter, post_from_page, url

pytestmark = pytest.mark.django_db

TEST_ITEMS = [
    {"text": "A pun that lands.", "gold": 3},
    {"text": "No joke at all.", "gold": 0},
    {"text": "A groaner.", "gold": 1},
]
STEPS = {
    "qualification": {"name": "Funniness check", "min_correct": 2, "items": TEST_ITEMS},
    "practice": [{"text": "Practice joke.", "gold": 2, "explanation": "Mildly funny: the twist is expected."}],
    "questionnaire": {
        "before": ["demographics"],
        "after": [
            {"key": "enjoyed", "kind": "scale", "text": "Did you enjoy it?", "min": 1, "max": 5},
            {"key": "comments", "kind": "text", "text": "Anything else?", "required": False},
        ],
    },
}
DEMOGRAPHICS = {
    "age_band": "25-34",
    "gender": "woman",
    "country": "Japan",
    "first_language": "Japanese",
    "joke_reading": "weekly",
}


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


def take_step(client, study, step: str, answers: list[str]) -> None:
    for rating in answers:
        page = client.get(url(study, step))
        assert page.status_code == 200, page.content[:300]
        index = re.search(r'name="index" value="(\d+)"', page.content.decode()).group(1)
        response = client.post(
            url(study, step), {"rating": rating, "index": index, "csrfmiddlewaretoken": csrf_from(page)}
        )
        assert response.status_code in (200, 302)


def start(client, study, pid: str) -> Enrollment:
    assert enter(client, study, pid).status_code == 302
    assert post_from_page(client, url(study, "consent"), {"decision": "agree"}).status_code == 302
    response = post_from_page(client, url(study, "instructions"), {})
    assert response.status_code == 302
    return Enrollment.objects.get(study=study, rater__external_id=pid)


@pytest.fixture
def study(make_study):
    study = make_study(n_items=2, quota_per_item=3, screened_out_code="SCREEN-9", completion_code="DONE-1")
    rater_steps_save(study=study, data=STEPS)
    return study


class TestTheWalk:
    def test_a_worker_who_fails_is_screened_out_with_the_code_and_never_counted(self, csrf_client, study):
        enrollment = start(csrf_client, study, "a" * 24)
        assert csrf_client.get(url(study, "item"))["Location"] == url(study, "qualification")
        take_step(csrf_client, study, "qualification", ["0", "3", "1"])  # one of three right; the rule asks two
        done = csrf_client.get(url(study, "item"), follow=True)
        page = done.content.decode()
        assert 'data-outcome="screened_out"' in page and "SCREEN-9" in page and "DONE-1" not in page
        enrollment.refresh_from_db()
        assert enrollment.screened_out_at and enrollment.excluded
        result = QualificationResult.objects.get(rater=enrollment.rater)
        assert (result.correct, result.total, result.passed) == (1, 3, False)
        assert not Judgment.objects.filter(study=study).exists()
        # The test's answers are kept apart from the study's judgments.
        assert StepAnswer.objects.filter(enrollment=enrollment, step="qualification").count() == 3

    def test_a_worker_who_passes_practises_answers_the_questions_and_the_task(self, csrf_client, study):
        enrollment = start(csrf_client, study, "b" * 24)
        take_step(csrf_client, study, "qualification", ["3", "0", "2"])  # two of three
        page = csrf_client.get(url(study, "practice"))
        index = re.search(r'name="index" value="(\d+)"', page.content.decode()).group(1)
        feedback = csrf_client.post(
            url(study, "practice"), {"rating": "0", "index": index, "csrfmiddlewaretoken": csrf_from(page)}
        ).content.decode()
        assert "Mildly funny: the twist is expected." in feedback and "expected-answer" in feedback
        assert csrf_client.get(url(study, "practice"))["Location"] == url(study, "questions")
        missing = post_from_page(csrf_client, url(study, "questions"), {**DEMOGRAPHICS, "age_band": ""})
        assert missing.status_code == 400 and 'id="error-age_band"' in missing.content.decode()
        assert post_from_page(csrf_client, url(study, "questions"), DEMOGRAPHICS).status_code == 302
        assert answer_all(csrf_client, study, {"rating": "2"}) == 2
        assert csrf_client.get(url(study, "done"))["Location"] == url(study, "questions")
        assert post_from_page(csrf_client, url(study, "questions"), {"enjoyed": "4"}).status_code == 302
        done = csrf_client.get(url(study, "done")).content.decode()
        assert 'data-outcome="completed"' in done and "DONE-1" in done
        answers = dict(QuestionAnswer.objects.filter(enrollment=enrollment).values_list("key", "value"))
        assert answers == {**DEMOGRAPHICS, "enjoyed": 4, "comments": None}
        # Only the study's items are judgments: practice and test answers are not.
        assert Judgment.objects.filter(study=study).count() == 2
        assert StepAnswer.objects.filter(enrollment=enrollment).count() == 4

    def test_a_pass_is_remembered_and_a_later_study_admits_only_those_who_passed(
        self, csrf_client, study, make_study, researcher
    ):
        passer, failer = "c" * 24, "d" * 24
        start(csrf_client, study, passer)
        take_step(csrf_client, study, "qualification", ["3", "0", "1"])
        from django.test import Client

        other = Client(enforce_csrf_checks=True)
        start(other, study, failer)
        take_step(other, study, "qualification", ["0", "0", "0"])
        assert allowlist_csv(study.qualification) == f"participant_id\n{passer}\n"
        later = make_study(n_items=1, name="later", screened_out_code="LATER-X", qualification_mode="passed_only")
        later.qualification = study.qualification
        later.save(update_fields=["qualification"])
        refused = enter(Client(), later, failer)
        assert refused.status_code == 302
        fresh = Client()
        fresh.get(url(later), {"PROLIFIC_PID": failer})
        page = fresh.get(url(later, "done")).content.decode()
        assert 'data-outcome="not_admitted"' in page and "LATER-X" in page
        admitted = Client(enforce_csrf_checks=True)
        start(admitted, later, passer)
        assert admitted.get(url(later, "item")).status_code == 200


class TestRules:
    def test_questionnaire_definitions_name_what_is_wrong(self):
        problems = questionnaire_problems(
            {
                "before": [
                    {"key": "Bad Key", "kind": "choice", "text": "x"},
                    {"key": "pick", "kind": "choice", "text": "Pick", "options": ["one"]},
                    {"key": "scale", "kind": "scale", "text": "S", "min": 5, "max": 1},
                ],
                "during": [],
            }
        )
        text = " ".join(problems)
        assert "questionnaire.before[1].key" in text
        assert "questionnaire.before[2] (pick).options" in text
        assert "questionnaire.before[3] (scale)" in text
        assert "unknown key(s) during" in text

    def test_answers_are_checked_server_side_by_question(self):
        questions = [
            *demographic_questions(),
            *study_questions_from({"key": "age", "kind": "number", "text": "Age?", "min": 18, "max": 99}),
        ]
        with pytest.raises(ValidationError) as caught:
            questionnaire_answers_clean(questions, {**DEMOGRAPHICS, "gender": "robot", "age": "12"})
        assert set(caught.value.message_dict) == {"gender", "age"}
        assert "from 18 to 99" in caught.value.message_dict["age"][0]
        cleaned = questionnaire_answers_clean(questions, {**DEMOGRAPHICS, "age": "40"})
        assert cleaned["age"] == 40

    def test_a_test_taken_by_participants_cannot_change_under_them(self, csrf_client, study):
        start(csrf_client, study, "e" * 24)
        take_step(csrf_client, study, "qualification", ["3", "0", "1"])
        changed = {**STEPS, "qualification": {**STEPS["qualification"], "min_correct": 3}}
        with pytest.raises(ValidationError) as caught:
            rater_steps_save(study=study, data=changed)
        assert "cannot change" in str(caught.value.message_dict["qualification"])

    def test_gold_is_checked_by_the_task_type_and_study_files_carry_the_steps(self, researcher, tmp_path):
        data = {
            "name": "From a file",
            "task_type": "ordinal",
            "items": [{"id": "x", "text": "Joke"}],
            **STEPS,
            "practice": [{"text": "Joke", "gold": 9}],
        }
        with pytest.raises(ValidationError) as caught:
            load_study_data(data, owner=researcher, base_dir=tmp_path)
        assert "practice[1]" in str(caught.value)
        study = load_study_data({**data, "practice": STEPS["practice"]}, owner=researcher, base_dir=tmp_path)
        assert study.qualification.min_correct == 2 and len(study.practice) == 1
        assert [q.key for q in study_questions(study, "after")] == ["enjoyed", "comments"]


def study_questions_from(entry):
    from annotation.models import Study

    return study_questions(Study(questionnaire={"before": [entry]}))


class TestResearcherSide:
    def test_the_page_saves_the_sections_and_names_a_bad_one(self, client, researcher, make_study):
        study = make_study(n_items=1)
        client.force_login(researcher)
        page = f"/studies/{study.pk}/raters/"
        bad = client.post(page, {"steps": "practice:\n  - {text: Joke, gold: 7}\n"})
        assert bad.status_code == 400 and "practice[1]" in bad.content.decode()
        study.refresh_from_db()
        assert study.practice == []
        assert client.post(page, {"add": "demographics"}).status_code == 302
        study.refresh_from_db()
        assert study.questionnaire == {"before": ["demographics"]}
        assert study.audit_entries.filter(changes__has_key="rater_steps").exists()

    def test_the_api_sets_the_steps_and_serves_the_allowlist(self, csrf_client, researcher, make_study):
        from rest_framework.test import APIClient

        study = make_study(n_items=1)
        api = APIClient()
        api.force_authenticate(researcher)
        base = f"/api/v1/studies/{study.pk}/"
        refused = api.put(base + "rater-steps/", {"questionnaire": {"before": [{"key": "x"}]}}, format="json")
        assert refused.status_code == 400 and "questionnaire" in refused.json()["errors"][0]
        assert api.get(base + "qualification/allowlist/").status_code == 404
        saved = api.put(base + "rater-steps/", {"qualification": STEPS["qualification"]}, format="json")
        assert saved.status_code == 200 and saved.json()["qualification"]["min_correct"] == 2
        start(csrf_client, study, "f" * 24)
        take_step(csrf_client, study, "qualification", ["3", "0", "1"])
        allowlist = api.get(saved.json()["allowlist_url"])
        assert allowlist.status_code == 200 and allowlist.content.decode() == f"participant_id\n{'f' * 24}\n"
