"""Best–worst scaling on the annotator's side: the form, its shortcuts, what a submission stores."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Judgment
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from annotation.task_types import get_task_type

from .test_annotator_flow import begin, enter, fresh_rate_limits, post_from_page, url  # noqa: F401
from .test_annotator_item import item_page, open_study, submit

pytestmark = pytest.mark.django_db

JOKES = {
    "k-ant": "The ant joke.",
    "k-bee": "The bee joke, a little longer.",
    "k-cat": "The cat joke.",
    "k-dog": "The dog joke, the longest of the four by far.",
}


def four_jokes(external_id="set-1", **extra) -> ItemSpec:
    return ItemSpec(
        external_id=external_id,
        prompt="Write a joke about an animal",
        candidates=[CandidateSpec(key, text, provenance={"model": f"hidden-{key}"}) for key, text in JOKES.items()],
        **extra,
    )


class TestBestWorstValue:
    kind = get_task_type("best_worst")
    config = kind.config({})

    def test_it_accepts_two_different_candidates(self):
        value = self.kind.validate({"best": "k-ant", "worst": "k-dog"}, candidate_keys=list(JOKES), config=self.config)
        assert value == {"best": "k-ant", "worst": "k-dog"}

    def test_it_refuses_the_same_joke_as_best_and_worst(self):
        with pytest.raises(ValidationError, match="must be different jokes"):
            self.kind.validate({"best": "k-ant", "worst": "k-ant"}, candidate_keys=list(JOKES), config=self.config)

    def test_it_refuses_a_candidate_of_another_item(self):
        with pytest.raises(ValidationError, match="Unknown candidate 'k-eel'"):
            self.kind.validate({"best": "k-eel", "worst": "k-ant"}, candidate_keys=list(JOKES), config=self.config)

    def test_an_item_needs_exactly_four_jokes(self, researcher):
        study = study_create(owner=researcher, name="BWS", task_type="best_worst")
        three = ItemSpec(external_id="short", candidates=[CandidateSpec(k, t) for k, t in list(JOKES.items())[:3]])
        with pytest.raises(ValidationError, match="need 4 candidates, got 3"):
            items_create(study=study, items=[three])


class TestBestWorstForm:
    def test_the_instructions_list_its_keyboard_shortcuts(self, csrf_client, researcher):
        study = open_study(researcher, "best_worst", [four_jokes()])
        assert enter(csrf_client, study).status_code == 302
        post_from_page(csrf_client, url(study, "consent"), {"decision": "agree"})
        page = csrf_client.get(url(study, "instructions")).content.decode()
        assert "Mark the joke with that number “Funniest”" in page
        assert "<kbd>Shift+1</kbd> to <kbd>Shift+4</kbd>" in page
        assert "Mark the joke with that number “Least funny”" in page

    def test_the_item_shows_four_jokes_with_a_best_and_a_worst_choice_and_no_keys(self, csrf_client, researcher):
        study = open_study(researcher, "best_worst", [four_jokes()])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "Which joke is the funniest, and which the least funny?" in page
        assert all(text in page for text in JOKES.values())
        assert page.count('name="best"') == 4 and page.count('name="worst"') == 4
        assert 'aria-keyshortcuts="Shift+4"' in page
        assert "k-ant" not in page and "hidden-" not in page

    def test_a_submission_stores_the_candidate_keys_of_the_marked_positions(self, csrf_client, researcher):
        study = open_study(researcher, "best_worst", [four_jokes()])
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"best": "2", "worst": "0"})
        assert response.status_code == 302
        judgment = Judgment.objects.get(assignment=assignment)
        assert judgment.value == {"best": assignment.shown_order[2], "worst": assignment.shown_order[0]}

    def test_the_same_joke_for_both_is_sent_back_with_the_marks_kept(self, csrf_client, researcher):
        study = open_study(researcher, "best_worst", [four_jokes()])
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"best": "1", "worst": "1"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 422
        page = response.content.decode()
        assert "“Funniest” and “Least funny” must be different jokes." in page
        assert page.count("checked") == 2
        assert not Judgment.objects.filter(assignment=assignment).exists()

    def test_a_missing_worst_pick_names_what_is_missing(self, csrf_client, researcher):
        study = open_study(researcher, "best_worst", [four_jokes()])
        begin(csrf_client, study)
        response, _ = submit(csrf_client, study, {"best": "1"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 422
        assert "Please mark one joke “Least funny”." in response.content.decode()

    def test_each_rater_sees_the_jokes_in_their_own_order(self, researcher):
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker

        study = open_study(researcher, "best_worst", [four_jokes()], quota_per_item=40)
        orders = {
            tuple(
                next_assignment(
                    enrollment=enroll_crowdworker(study=study, participant_id=f"p{n}")
                ).assignment.shown_order
            )
            for n in range(30)
        }
        assert len(orders) > 1
        assert all(sorted(order) == sorted(JOKES) for order in orders)
