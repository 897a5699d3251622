# SPDX-License-Identifier: GPL-3.0-or-later
"""A stored report goes out of date when its study's data is edited in place, not only when it grows.

Edits are made through the paths that make them: the admin's change forms
(a judgment's value, an item's gold, a rater's exclusion, an item's
candidates), the retry of a model's judgment, a judge's rename. The page then
says its figures are out of date, the worker recomputes them, and they equal
a direct computation on the edited data.
"""

import json

import pytest
from django import forms
from django.urls import reverse

from annotation.models import Enrollment, Item, Judgment, Rater, Study
from annotation.services.judgments import judgment_retry
from annotation.services.studies import study_set_state, study_update
from annotation.study_changes import study_inputs_changed
from judging.services.judges import judge_find_or_create, judge_update
from ratings.alignment import AlignmentParams, compute_alignment
from ratings.analysis import analysis_result
from ratings.cached import study_inputs
from ratings.models import StudyReport
from tests.ratings.alignment_helpers import build_ordinal
from tests.ratings.test_alignment import BINARY_TRUTH, voted_binary_study
from tests.ratings.test_selectors import add_rater, judge
from tests.ratings.test_stored_reports import alpha_cell, analysis, run_queued, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(researcher):
    """The study's owner is staff too, so one client both edits in the admin and reads the pages."""
    researcher.is_staff = researcher.is_superuser = True
    researcher.save(update_fields=["is_staff", "is_superuser"])
    return researcher


@pytest.fixture
def owner(client, staff):
    client.force_login(staff)
    return client


def _form_data(form) -> dict[str, str]:
    """What a browser posts for an unchanged admin form (or inline form): every field as rendered."""
    data: dict[str, str] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        key = form.add_prefix(name)
        if isinstance(field.widget, forms.CheckboxInput):
            if value:
                data[key] = "on"
        elif isinstance(field, forms.JSONField):
            data[key] = field.prepare_value(value)
        elif isinstance(field, forms.NullBooleanField):
            data[key] = {True: "true", False: "false"}.get(value, "unknown")
        elif value is not None:
            data[key] = str(value)
    return data


def admin_edit(client, obj, **changes) -> None:
    """Change ``obj`` through its admin change form (inlines posted unchanged unless ``changes`` name them)."""
    url = reverse(f"admin:annotation_{obj._meta.model_name}_change", args=[obj.pk])
    page = client.get(url)
    assert page.status_code == 200
    data = _form_data(page.context["adminform"].form)
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({formset.management_form.add_prefix(k): str(v) for k, v in formset.management_form.initial.items()})
        for form in formset.forms:
            data.update(_form_data(form))
    for name, value in changes.items():
        data[name] = json.dumps(value) if isinstance(value, dict) else value
        if value is False:
            data.pop(name)
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response


def current(study, kind: str) -> StudyReport:
    return StudyReport.objects.get(study=study, kind=kind)


class TestAnEditInPlace:
    def test_a_judgment_value_edited_in_the_admin_puts_the_analysis_out_of_date_and_it_is_recomputed(
        self, owner, rated_study, by_worker, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        run_queued(callbacks)
        before = study_inputs(study=rated_study)
        old = current(rated_study, "analysis").result["agreement"]["agreement"]["krippendorff_alpha"]["ordinal"]
        edited = Judgment.objects.filter(study=rated_study, rater__name="cy").order_by("item__position").first()
        assert edited.value == {"rating": 1}
        admin_edit(owner, edited, value={"rating": 3})
        edited.refresh_from_db()
        assert edited.value == {"rating": 3}
        after = study_inputs(study=rated_study)
        # Same judgments, statuses and ids: only the count of edits in place tells them apart.
        assert {k: v for k, v in after.items() if k != "revisions"} == {
            k: v for k, v in before.items() if k != "revisions"
        }
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = text(owner.get(analysis(rated_study)).content.decode())
        assert "out of date, judgments, items or raters changed since; recomputing…" in html
        assert (
            alpha_cell(owner.get(analysis(rated_study)).content.decode()) == f"{old:.3f}"
        )  # the old figures, labelled
        run_queued(callbacks)
        page = owner.get(analysis(rated_study)).content.decode()
        assert "up to date" in page
        new = analysis_result(study=rated_study, group="humans", rater_ids=None, k=3, tie="higher")
        fresh = new["agreement"]["agreement"]["krippendorff_alpha"]["ordinal"]
        assert fresh != pytest.approx(old)
        assert alpha_cell(page) == f"{fresh:.3f}"
        assert json.dumps(current(rated_study, "analysis").result, sort_keys=True) == json.dumps(new, sort_keys=True)

    def test_gold_edited_in_the_admin_puts_the_alignment_out_of_date_and_it_is_recomputed(
        self, owner, researcher, by_worker, django_capture_on_commit_callbacks
    ):
        study, items = voted_binary_study(researcher)
        same = add_rater(study, "same", Rater.Kind.LLM)
        for item, label in zip(items, BINARY_TRUTH, strict=True):
            judge(study, same, item, {"label": label})
        url = f"/alignment/{study.slug}/?reference=humans"
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(url)
        run_queued(callbacks)
        gold = current(study, "alignment").result["overall"]["judges"][0]["vs_gold"]
        assert (gold["correct"], gold["n"]) == (4, 4)

        admin_edit(owner, items[0], gold={"label": "bad"})
        assert Item.objects.get(pk=items[0].pk).gold == {"label": "bad"}
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = text(owner.get(url).content.decode())
        assert "out of date, judgments, items or raters changed since; recomputing…" in html
        run_queued(callbacks)
        assert "up to date" in text(owner.get(url).content.decode())
        stored = current(study, "alignment").result
        gold = stored["overall"]["judges"][0]["vs_gold"]
        assert (gold["correct"], gold["n"]) == (3, 4)
        params = AlignmentParams(**{**stored["params"], "reference_rater_ids": (), "judge_ids": ()})
        assert json.dumps(stored, sort_keys=True) == json.dumps(
            compute_alignment(study=study, params=params), sort_keys=True
        )

    def test_one_rater_excluded_and_another_let_back_in_puts_the_alignment_out_of_date(
        self, owner, researcher, by_worker, django_capture_on_commit_callbacks
    ):
        study, raters = build_ordinal(researcher)  # dan is excluded
        url = f"/alignment/{study.slug}/"  # the reference: humans who passed the attention checks
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(url)
        run_queued(callbacks)
        labels = [r["label"] for r in current(study, "alignment").result["reference"]["raters"]]
        assert labels == ["ann", "bob", "cat"]
        before = study_inputs(study=study)

        admin_edit(owner, Enrollment.objects.get(study=study, rater=raters["dan"]), excluded=False)
        admin_edit(owner, Enrollment.objects.get(study=study, rater=raters["ann"]), excluded=True)
        assert study_inputs(study=study)["excluded_raters"] == before["excluded_raters"] == 1
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = text(owner.get(url).content.decode())
        assert "out of date" in html
        run_queued(callbacks)
        assert "up to date" in text(owner.get(url).content.decode())
        labels = [r["label"] for r in current(study, "alignment").result["reference"]["raters"]]
        assert labels == ["bob", "cat", "dan"]

    def test_a_candidate_deleted_in_the_admin_puts_the_report_out_of_date(self, owner, make_study):
        study = make_study(task_type="pairwise", n_candidates=2)
        revision = Study.objects.get(pk=study.pk).inputs_revision
        item = study.items.first()
        candidates = list(item.candidates.order_by("position"))
        admin_edit(owner, item, **{"candidates-1-DELETE": "on"})
        assert [c.pk for c in item.candidates.order_by("position")] == [candidates[0].pk]
        assert Study.objects.get(pk=study.pk).inputs_revision > revision


class TestWhoCounts:
    """Each writer of an edit in place counts it; the writes a report does not read leave it current."""

    def revision(self, study) -> int:
        return Study.objects.values_list("inputs_revision", flat=True).get(pk=study.pk)

    def test_a_retried_judgment_that_stays_unparseable_counts(self, make_study):
        study = make_study(n_items=1)
        bot = add_rater(study, "bot", Rater.Kind.LLM)
        first = judge(study, bot, study.items.get(), None, status=Judgment.Status.UNPARSEABLE)
        before = self.revision(study)
        judgment_retry(
            assignment=first.assignment, rater=bot, value=None, status=Judgment.Status.UNPARSEABLE, provenance={"n": 2}
        )
        assert self.revision(study) == before + 1

    def test_a_new_judgment_is_left_to_the_counts(self, make_study):
        study = make_study(n_items=1)
        before = self.revision(study)
        judge(study, add_rater(study, "ann"), study.items.get(), {"rating": 2})
        assert self.revision(study) == before

    def test_a_second_failed_check_of_an_excluded_rater_does_not_count_again(self, make_study):
        from annotation.services.judgments import apply_attention_policy

        study = make_study(n_items=1)
        rater = add_rater(study, "ann")
        enrollment = Enrollment.objects.get(study=study, rater=rater)
        items = study.items.all()
        Judgment.objects.filter(pk=judge(study, rater, items[0], {"rating": 1}).pk).update(attention_passed=False)
        study.attention_check_max_failures = 0
        before = self.revision(study)
        apply_attention_policy(enrollment)
        assert enrollment.excluded and self.revision(study) == before + 1
        apply_attention_policy(enrollment)
        assert self.revision(study) == before + 1

    def test_renaming_a_judge_counts_in_the_studies_it_judged(self, make_study, researcher):
        study = make_study(n_items=1)
        other = make_study(n_items=1, name="Untouched")
        config, _ = judge_find_or_create(owner=researcher, baseline="random")
        judge(study, config.rater, study.items.get(), {"rating": 1})
        before, untouched = self.revision(study), self.revision(other)
        judge_update(judge=config, name="Coin toss")
        assert Rater.objects.get(pk=config.rater_id).name.startswith("Coin toss")
        assert self.revision(study) == before + 1 and self.revision(other) == untouched

    def test_the_task_settings_count_and_the_study_state_does_not(self, make_study):
        study = make_study(n_items=1, open_=False)
        before = self.revision(study)
        study_set_state(study=study, state="open")
        study_update(study=study, consent_text="You may stop at any time.")
        assert self.revision(study) == before
        study_update(study=study, config={"points": [1, 2, 3], "labels": ["Meh", "Funny", "Very funny"]})
        assert self.revision(study) == before + 1

    def test_saving_a_study_read_earlier_keeps_the_count_made_meanwhile(self, make_study):
        study = make_study(n_items=1)
        stale = Study.objects.get(pk=study.pk)
        study_inputs_changed([study.pk])
        stale.name = "Renamed"
        stale.save()  # a whole save, as the admin's: it counts itself too (it writes the task settings)
        assert Study.objects.values_list("name", "inputs_revision").get(pk=study.pk) == ("Renamed", 2)
