"""The item page: what a rater sees, and what a submitted answer stores."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, Judgment
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state

from .test_annotator_flow import assignment_from, begin, csrf_from, fresh_rate_limits, url  # noqa: F401

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def open_study(owner, task_type: str, items: list[ItemSpec], **options):
    study = study_create(owner=owner, name=options.pop("name", f"{task_type} study"), task_type=task_type, **options)
    items_create(study=study, items=items)
    study_set_state(study=study, state="open")
    return study


def pair_item(external_id="pair-1", prompt="A headline", **extra) -> ItemSpec:
    return ItemSpec(
        external_id=external_id,
        prompt=prompt,
        candidates=[
            CandidateSpec("key-zebra-17", "The zebra joke.", provenance={"model": "gpt-hidden-5"}),
            CandidateSpec("key-okapi-42", "The okapi joke.", provenance={"source": "writer-hidden-x"}),
        ],
        **extra,
    )


def item_page(client, study):
    page = client.get(url(study, "item"))
    assert page.status_code == 200, page
    return page


def submit(client, study, data: dict, **extra):
    """Answer the current item; returns (response, the assignment that was answered)."""
    page = item_page(client, study)
    assignment = Assignment.objects.get(pk=assignment_from(page))
    form = {**data, "assignment": assignment.pk, "csrfmiddlewaretoken": csrf_from(page)}
    return client.post(url(study, "item"), form, **extra), assignment


class TestItemPage:
    def test_it_shows_the_prompt_the_text_and_the_progress(self, csrf_client, make_study):
        study = make_study(n_items=4)
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "How funny is this?" in page
        assert "0 of 4 done" in page
        assert 'max="4" value="0"' in page
        assert any(f"Prompt {i}" in page and f"Text {i}" in page for i in range(4))
        submit(csrf_client, study, {"rating": "2"})
        assert "1 of 4 done" in item_page(csrf_client, study).content.decode()

    def test_the_progress_counts_to_the_per_rater_cap(self, csrf_client, make_study):
        study = make_study(n_items=6, per_rater_cap=2)
        begin(csrf_client, study)
        assert "0 of 2 done" in item_page(csrf_client, study).content.decode()

    def test_it_never_shows_keys_provenance_metadata_gold_or_other_answers(self, csrf_client, researcher):
        study = open_study(
            researcher,
            "pairwise",
            [pair_item(metadata={"source_model": "meta-hidden-7"}, gold={"choice": "key-okapi-42"})],
            quota_per_item=3,
        )
        other = enroll_crowdworker(study=study, participant_id="someone-else")
        judgment_submit(
            assignment=next_assignment(enrollment=other).assignment, rater=other.rater, value={"choice": "key-zebra-17"}
        )
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "The zebra joke." in page and "The okapi joke." in page
        for secret in ("key-zebra-17", "key-okapi-42", "gpt-hidden-5", "writer-hidden-x", "meta-hidden-7", "pair-1"):
            assert secret not in page

    def test_it_shows_the_candidates_in_the_order_recorded_for_the_rater(self, csrf_client, researcher):
        study = open_study(researcher, "pairwise", [pair_item(f"pair-{i}") for i in range(6)])
        begin(csrf_client, study)
        texts = {"key-zebra-17": "The zebra joke.", "key-okapi-42": "The okapi joke."}
        for _ in range(6):
            page = item_page(csrf_client, study)
            body = page.content.decode()
            shown = Assignment.objects.get(pk=assignment_from(page)).shown_order
            assert body.index(texts[shown[0]]) < body.index(texts[shown[1]])
            submit(csrf_client, study, {"choice": "tie"})

    def test_pairwise_labels_come_from_the_study(self, csrf_client, researcher):
        labels = ["Explanation 1", "Explanation 2", "Equally good"]
        study = open_study(researcher, "pairwise", [pair_item()], config={"labels": labels})
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert '<h2 id="side-1">Explanation 1</h2>' in page
        assert '<h2 id="side-2">Explanation 2</h2>' in page
        # The button's name is its visible label (axe: label-content-name-mismatch), the key hidden from it.
        assert "</kbd> Equally good</button>" in page
        assert 'aria-label="Choose' not in page

    def test_each_candidate_shows_its_own_context(self, csrf_client, researcher):
        candidates = [CandidateSpec(f"k{j}", f"Answer {j}", context=f"Its own prompt {j}") for j in range(3)]
        study = open_study(researcher, "pick_one", [ItemSpec(external_id="i", candidates=candidates)])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        for j in range(3):
            assert page.index(f"Its own prompt {j}") < page.index(f"Answer {j}")

    def test_it_escapes_joke_texts(self, csrf_client, researcher):
        item = pair_item(prompt="<img src=x onerror=alert(2)>")
        item.text = "<script>alert(1)</script>"
        item.candidates[0].text = "<b onclick=alert(3)>bold</b>"
        study = open_study(researcher, "pairwise", [item])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&lt;img src=x onerror=alert(2)&gt;" in page
        assert "&lt;b onclick=alert(3)&gt;bold&lt;/b&gt;" in page
        assert "<script>alert" not in page and "<img src=x" not in page and "<b onclick" not in page

    def test_it_marks_chinese_text_with_the_study_language(self, csrf_client, researcher):
        joke = "为什么程序员分不清万圣节和圣诞节？因为 Oct 31 = Dec 25。"
        study = open_study(researcher, "ordinal", [ItemSpec(external_id="zh-1", text=joke)], config={"language": "zh"})
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        assert page["Content-Type"] == "text/html; charset=utf-8"
        assert f'<div class="text-block item-text" lang="zh">{joke}</div>' in page.content.decode()

    def test_a_language_that_is_not_a_language_tag_is_left_out(self, csrf_client, researcher):
        study = open_study(
            researcher, "ordinal", [ItemSpec(external_id="x", text="Hi")], config={"language": 'ja" onclick="x'}
        )
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "onclick" not in page
        assert '<div class="text-block item-text">Hi</div>' in page

    def test_it_records_when_the_item_was_first_shown(self, csrf_client, make_study):
        study = make_study()
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        shown = Assignment.objects.get(pk=assignment_from(page)).shown_at
        assert shown is not None
        item_page(csrf_client, study)
        assert Assignment.objects.get(pk=assignment_from(page)).shown_at == shown

    def test_a_micro_edit_headline_highlights_the_marked_word(self, csrf_client, researcher):
        study = open_study(researcher, "micro_edit", [ItemSpec(external_id="h", text="Mayor bites <dog/> in park")])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert 'Mayor bites <mark class="marked-token">dog</mark> in park' in page
        assert "&lt;dog/&gt;" not in page
        assert 'name="replacement"' in page

    def test_vote_allocation_offers_steppers_and_a_votes_left_counter(self, csrf_client, make_study):
        study = make_study(task_type="vote_allocation", n_items=1, n_candidates=4, config={"max_votes": 3})
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "Votes left: <output data-votes-left>3</output>" in page
        for position in range(4):
            assert f'name="votes_{position}" value="0"' in page
            assert f'aria-label="Give a vote to response {position + 1}"' in page

    def test_every_option_has_a_visible_key_hint(self, csrf_client, make_study):
        study = make_study(task_type="ordinal")
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        for point in range(4):
            assert f'data-key="{point}"' in page
            assert f'<kbd aria-hidden="true">{point}</kbd>' in page


class TestSubmit:
    def test_a_pairwise_choice_is_stored_as_the_candidate_shown_in_that_place(self, csrf_client, researcher):
        study = open_study(researcher, "pairwise", [pair_item()])
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"choice": "1"})
        assert response.status_code == 302
        assert response["Location"] == url(study, "item")
        judgment = Judgment.objects.get()
        assert judgment.value == {"choice": assignment.shown_order[1]}
        assert judgment.shown_order == assignment.shown_order
        assert judgment.duration_ms is not None

    def test_a_pairwise_tie_is_stored(self, csrf_client, researcher):
        study = open_study(researcher, "pairwise", [pair_item()])
        begin(csrf_client, study)
        submit(csrf_client, study, {"choice": "tie"})
        assert Judgment.objects.get().value == {"choice": "tie"}

    def test_an_ordinal_rating_is_stored(self, csrf_client, make_study):
        study = make_study(n_items=2)
        begin(csrf_client, study)
        submit(csrf_client, study, {"rating": "3"})
        assert Judgment.objects.get().value == {"rating": 3}

    def test_a_binary_label_is_stored(self, csrf_client, make_study):
        study = make_study(task_type="binary")
        begin(csrf_client, study)
        submit(csrf_client, study, {"label": "not_funny"})
        assert Judgment.objects.get().value == {"label": "not_funny"}

    def test_pick_one_stores_the_candidate_shown_in_that_place(self, csrf_client, make_study):
        study = make_study(task_type="pick_one", n_candidates=4)
        begin(csrf_client, study)
        _response, assignment = submit(csrf_client, study, {"choice": "2"})
        assert Judgment.objects.get().value == {"choice": assignment.shown_order[2]}

    def test_vote_allocation_stores_votes_by_candidate(self, csrf_client, make_study):
        study = make_study(task_type="vote_allocation", n_items=1, n_candidates=5)
        begin(csrf_client, study)
        _response, assignment = submit(csrf_client, study, {"votes_0": "2", "votes_3": "1", "votes_4": "0"})
        order = assignment.shown_order
        assert Judgment.objects.get().value == {"votes": {order[0]: 2, order[3]: 1}}

    def test_a_micro_edit_stores_the_word(self, csrf_client, researcher):
        study = open_study(researcher, "micro_edit", [ItemSpec(external_id="h", text="Mayor bites <dog/> in park")])
        begin(csrf_client, study)
        submit(csrf_client, study, {"replacement": " sandwich "})
        assert Judgment.objects.get().value == {"replacement": "sandwich"}

    def test_an_explanation_stores_the_text(self, csrf_client, make_study):
        study = make_study(task_type="explanation")
        begin(csrf_client, study)
        submit(csrf_client, study, {"text": "The pun turns on two meanings of 'bark'."})
        assert Judgment.objects.get().value == {"text": "The pun turns on two meanings of 'bark'."}

    def test_a_double_submit_stores_one_judgment_and_moves_on(self, csrf_client, make_study):
        study = make_study(n_items=3)
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        form = {"rating": "1", "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        first = csrf_client.post(url(study, "item"), form)
        second = csrf_client.post(url(study, "item"), {**form, "rating": "3"})
        assert first.status_code == second.status_code == 302
        assert Judgment.objects.get().value == {"rating": 1}
        assert assignment_from(item_page(csrf_client, study)) != form["assignment"]

    def test_a_resubmit_after_the_back_button_changes_nothing(self, csrf_client, make_study):
        study = make_study(n_items=3)
        begin(csrf_client, study)
        old_page = item_page(csrf_client, study)
        old_form = {"rating": "2", "assignment": assignment_from(old_page), "csrfmiddlewaretoken": csrf_from(old_page)}
        csrf_client.post(url(study, "item"), old_form)
        submit(csrf_client, study, {"rating": "0"})
        current = assignment_from(item_page(csrf_client, study))
        response = csrf_client.post(url(study, "item"), {**old_form, "rating": "3"})
        assert response.status_code == 302
        assert sorted(Judgment.objects.values_list("value__rating", flat=True)) == [0, 2]
        assert assignment_from(item_page(csrf_client, study)) == current

    def test_another_raters_assignment_is_not_found(self, csrf_client, make_study):
        study = make_study(n_items=3)
        stranger = enroll_crowdworker(study=study, participant_id="stranger")
        theirs = next_assignment(enrollment=stranger).assignment
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        form = {"rating": "1", "assignment": theirs.pk, "csrfmiddlewaretoken": csrf_from(page)}
        assert csrf_client.post(url(study, "item"), form).status_code == 404
        assert not Judgment.objects.exists()

    def test_an_assignment_from_another_study_is_not_found(self, csrf_client, make_study):
        first, second = make_study(name="first"), make_study(name="second")
        begin(csrf_client, first, "same-person")
        mine_elsewhere = assignment_from(item_page(csrf_client, first))
        begin(csrf_client, second, "same-person")
        page = item_page(csrf_client, second)
        form = {"rating": "1", "assignment": mine_elsewhere, "csrfmiddlewaretoken": csrf_from(page)}
        assert csrf_client.post(url(second, "item"), form).status_code == 404

    def test_an_assignment_id_that_is_not_a_number_is_not_found(self, csrf_client, make_study):
        study = make_study()
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        for bad in ("1 OR 1=1", str(2**70), "-5", "1e3"):
            form = {"rating": "1", "assignment": bad, "csrfmiddlewaretoken": csrf_from(page)}
            assert csrf_client.post(url(study, "item"), form).status_code == 404, bad
            assert csrf_client.post(url(study, "item"), form, **HTMX).status_code == 404, bad

    def test_an_answer_outside_the_scale_comes_back_with_its_message_on_the_same_item(self, csrf_client, make_study):
        study = make_study()
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"rating": "7"})
        assert response.status_code == 422
        assert "outside the scale" in response.content.decode()
        assert assignment_from(response) == assignment.pk
        assert not Judgment.objects.exists()

    def test_too_many_votes_come_back_with_the_votes_kept(self, csrf_client, make_study):
        study = make_study(task_type="vote_allocation", n_items=1, n_candidates=3, config={"max_votes": 3})
        begin(csrf_client, study)
        response, _assignment = submit(csrf_client, study, {"votes_0": "3", "votes_1": "1"})
        page = response.content.decode()
        assert response.status_code == 422
        assert "at most 3 votes" in page
        assert 'name="votes_0" value="3"' in page
        assert 'name="votes_1" value="1"' in page

    def test_a_two_word_edit_comes_back_with_the_typed_text(self, csrf_client, researcher):
        study = open_study(researcher, "micro_edit", [ItemSpec(external_id="h", text="Mayor bites <dog/> in park")])
        begin(csrf_client, study)
        response, _assignment = submit(csrf_client, study, {"replacement": "hot <dog>"})
        page = response.content.decode()
        assert response.status_code == 422
        assert "single word" in page
        assert 'value="hot &lt;dog&gt;"' in page
        assert 'aria-invalid="true"' in page

    def test_an_item_lost_after_a_long_pause_moves_on_with_a_notice(self, csrf_client, make_study):
        study = make_study(n_items=3, quota_per_item=1, item_order="as_listed")
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        mine = Assignment.objects.get(pk=assignment_from(page))
        Assignment.objects.filter(pk=mine.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        quicker = enroll_crowdworker(study=study, participant_id="quicker")
        taken = next_assignment(enrollment=quicker).assignment
        assert taken.item_id == mine.item_id
        judgment_submit(assignment=taken, rater=quicker.rater, value={"rating": 1})

        form = {"rating": "2", "assignment": mine.pk, "csrfmiddlewaretoken": csrf_from(page)}
        response = csrf_client.post(url(study, "item"), form)
        assert response.status_code == 200
        assert "handed to someone else" in response.content.decode()
        assert assignment_from(response) != mine.pk
        assert not Judgment.objects.filter(assignment=mine).exists()


class TestSubmitWithHtmx:
    def test_it_answers_with_the_next_item_card_alone(self, csrf_client, make_study):
        study = make_study(n_items=3)
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"rating": "2"}, **HTMX)
        card = response.content.decode()
        assert response.status_code == 200
        assert card.lstrip().startswith('<section id="item-card"')
        assert "<html" not in card
        assert assignment_from(response) != assignment.pk
        assert 'hx-disabled-elt="find fieldset"' in card

    def test_an_invalid_answer_answers_422_with_the_card(self, csrf_client, make_study):
        study = make_study()
        begin(csrf_client, study)
        response, assignment = submit(csrf_client, study, {"rating": "nine"}, **HTMX)
        assert response.status_code == 422
        assert "Please choose a rating." in response.content.decode()
        assert assignment_from(response) == assignment.pk

    def test_the_last_answer_sends_the_browser_to_the_completion_page(self, csrf_client, make_study):
        study = make_study(n_items=1, completion_code="HX-DONE")
        begin(csrf_client, study)
        response, _assignment = submit(csrf_client, study, {"rating": "2"}, **HTMX)
        assert response["HX-Redirect"] == url(study, "done")
        assert "HX-DONE" in csrf_client.get(url(study, "done")).content.decode()

    def test_a_double_submit_stores_one_judgment(self, csrf_client, make_study):
        study = make_study(n_items=3)
        begin(csrf_client, study)
        page = item_page(csrf_client, study)
        form = {"rating": "1", "assignment": assignment_from(page), "csrfmiddlewaretoken": csrf_from(page)}
        first = csrf_client.post(url(study, "item"), form, **HTMX)
        second = csrf_client.post(url(study, "item"), form, **HTMX)
        assert first.status_code == second.status_code == 200
        assert assignment_from(first) == assignment_from(second)
        assert Judgment.objects.count() == 1

    def test_a_request_out_of_step_sends_the_browser_to_the_right_step(self, make_study):
        study = make_study()
        client = Client()
        client.get(url(study), {"PROLIFIC_PID": "p1"})
        response = client.post(url(study, "item"), {"rating": "1", "assignment": "1"}, **HTMX)
        assert response["HX-Redirect"] == url(study, "consent")
