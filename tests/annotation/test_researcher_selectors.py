"""Progress and listings derived from the rows: per item, per rater, overall."""

import pytest

from annotation.models import Rater
from annotation.selectors.researcher import studies_owned, study_judgments, study_progress
from annotation.services.assignment import assignment_for_judge, next_assignment
from annotation.services.enrollment import enroll_crowdworker, enrollment_complete
from annotation.services.judgments import judgment_submit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def judge_all(enrollment, rating=1, duration_ms=None):
    while (nxt := next_assignment(enrollment=enrollment)).assignment:
        judgment_submit(
            assignment=nxt.assignment, rater=enrollment.rater, value={"rating": rating}, duration_ms=duration_ms
        )


class TestStudyProgress:
    def test_an_empty_study_is_at_zero_percent(self, make_study):
        progress = study_progress(study=make_study(n_items=3, quota_per_item=2))
        assert (progress.percent, progress.judgments_done, progress.judgments_needed) == (0.0, 0, 6)
        assert [i.done for i in progress.items] == [0, 0, 0]
        assert progress.raters == []

    def test_it_counts_judgments_per_item_up_to_the_quota(self, make_study):
        study = make_study(n_items=2, quota_per_item=2)
        for pid in ("p1", "p2"):
            judge_all(enroll_crowdworker(study=study, participant_id=pid))
        progress = study_progress(study=study)
        assert progress.percent == 100.0
        assert (progress.items_complete, progress.items_started) == (2, 2)
        assert all(i.done == 2 and i.complete for i in progress.items)

    def test_llm_judgments_are_counted_apart_from_the_quota(self, make_study):
        study = make_study(n_items=2, quota_per_item=1)
        judge = Rater.objects.create(kind=Rater.Kind.LLM, name="model-x")
        for item in study.items.all():
            assignment = assignment_for_judge(study=study, rater=judge, item=item)
            judgment_submit(assignment=assignment, rater=judge, value={"rating": 2})
        progress = study_progress(study=study)
        assert (progress.judge_judgments, progress.judgments_done, progress.percent) == (2, 0, 0.0)

    def test_it_reports_each_raters_count_speed_and_completion(self, make_study):
        study = make_study(n_items=3, quota_per_item=2, min_seconds_per_item=2)
        fast = enroll_crowdworker(study=study, participant_id="fast")
        slow = enroll_crowdworker(study=study, participant_id="slow")
        judge_all(fast, duration_ms=500)
        judge_all(slow, duration_ms=5000)
        enrollment_complete(enrollment=slow)
        by_name = {r.name: r for r in study_progress(study=study).raters}
        assert (by_name["fast"].judgments, by_name["fast"].too_fast, by_name["fast"].completed) == (3, 3, False)
        assert (by_name["slow"].judgments, by_name["slow"].too_fast, by_name["slow"].completed) == (3, 0, True)

    def test_the_item_list_can_be_cut_to_the_least_judged(self, make_study):
        study = make_study(n_items=5, quota_per_item=1, per_rater_cap=2)
        judge_all(enroll_crowdworker(study=study, participant_id="p1"))
        progress = study_progress(study=study, item_limit=3)
        assert progress.items_total == 5
        assert [i.done for i in progress.items] == [0, 0, 0]


class TestListings:
    def test_a_researcher_only_lists_their_own_studies_with_counts(self, make_study, researcher, other_researcher):
        mine = make_study(n_items=3)
        make_study(owner=other_researcher, name="not mine")
        judge_all(enroll_crowdworker(study=mine, participant_id="p1"))
        listed = list(studies_owned(user=researcher))
        assert [s.pk for s in listed] == [mine.pk]
        assert (listed[0].n_items, listed[0].n_judgments) == (3, 3)

    def test_judgments_filter_by_rater_kind_and_status(self, make_study):
        study = make_study(n_items=2, quota_per_item=1)
        judge_all(enroll_crowdworker(study=study, participant_id="p1"))
        judge = Rater.objects.create(kind=Rater.Kind.LLM, name="model-x")
        item = study.items.first()
        judgment_submit(
            assignment=assignment_for_judge(study=study, rater=judge, item=item),
            rater=judge,
            value=None,
            status="unparseable",
        )
        assert study_judgments(study=study).count() == 3
        assert study_judgments(study=study, rater_kind="crowd").count() == 2
        assert list(study_judgments(study=study, status="unparseable").values_list("rater__kind", flat=True)) == ["llm"]
