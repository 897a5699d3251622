"""The progress page's totals and rows, against a brute-force count of the rows themselves.

``study_progress`` reads each item's ``places_taken`` and corrects it by the
open leases instead of grouping the study's judgments; these tests check that
it gives exactly what counting the judgments one by one gives, with live and
expired leases, attention checks, a preview and an LLM judge in the study, and
that the progress page costs the same number of queries at 20 and 2,000 items.
"""

from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import HUMAN_KINDS, Assignment, Enrollment, Item, Judgment, Rater
from annotation.selectors.researcher import study_progress
from annotation.services.assignment import assignment_for_judge, next_assignment
from annotation.services.enrollment import enroll_crowdworker, enroll_preview, enrollment_complete
from annotation.services.judgments import judgment_submit
from annotation.services.places import places_recount
from annotation.services.studies import ItemSpec, items_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _answer(enrollment, steps: int, *, fail_checks: bool = False) -> None:
    """Take and answer up to ``steps`` items; checks (gold 0) answered right unless told to fail them."""
    for step in range(steps):
        assignment = next_assignment(enrollment=enrollment).assignment
        if assignment is None:
            return
        wrong = fail_checks and assignment.item.is_attention_check
        judgment_submit(
            assignment=assignment,
            rater=enrollment.rater,
            value={"rating": 3 if wrong else 0},
            duration_ms=300 if step % 2 else 5000,  # every other answer is too fast (2 s minimum)
        )


def busy_study(make_study, researcher, n_items: int):
    """A quota-2 study with every kind of row the progress page counts or must leave out."""
    study = make_study(
        n_items=n_items,
        quota_per_item=2,
        min_seconds_per_item=2,
        attention_check_rate=0.3,
        attention_check_policy="flag",
        open_=False,
    )
    items_create(
        study=study,
        items=[
            ItemSpec(external_id=f"check-{n}", text="Press 0", gold={"rating": 0}, is_attention_check=True)
            for n in range(2)
        ],
    )
    study.state = "open"
    study.save()
    for n, pid in enumerate(("ann", "bob", "cyd")):
        enrollment = enroll_crowdworker(study=study, participant_id=pid)
        _answer(enrollment, 6, fail_checks=n == 1)
        if n == 0:
            enrollment_complete(enrollment=enrollment)
    # A live lease: dee took an item and is still on it.
    assert next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="dee")).assignment
    # A live lease on an attention check, which holds no place.
    fay = enroll_crowdworker(study=study, participant_id="fay")
    while (held := next_assignment(enrollment=fay).assignment) and not held.item.is_attention_check:
        judgment_submit(assignment=held, rater=fay.rater, value={"rating": 1}, duration_ms=5000)
    # The researcher's preview and an LLM judge answer too; neither counts towards the quota.
    _answer(enroll_preview(study=study, user=researcher), 3)
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name="model-x")
    for item in study.items.filter(is_attention_check=False)[:5]:
        judgment_submit(
            assignment=assignment_for_judge(study=study, rater=judge, item=item), rater=judge, value={"rating": 2}
        )
    # An expired lease nobody has released yet: eve left long ago (made last: a rater
    # walking on after it could meet her full item and release it, depending on the study's random seed).
    eve = next_assignment(enrollment=enroll_crowdworker(study=study, participant_id="eve")).assignment
    Assignment.objects.filter(pk=eve.pk).update(lease_expires_at=timezone.now() - timedelta(hours=1))
    assert places_recount(study=study) == {}  # the counter the page reads is exact here
    return study


def brute_force(study) -> dict:
    """Everything the progress page shows, counted row by row in Python."""
    quota = study.quota_per_item
    items = list(study.items.filter(is_attention_check=False).order_by("position", "pk"))
    human = Counter(Judgment.objects.filter(study=study, rater__kind__in=HUMAN_KINDS).values_list("item_id", flat=True))
    done = {item.pk: human[item.pk] for item in items}
    raters = {}
    for enrollment in Enrollment.objects.filter(study=study).exclude(rater__kind=Rater.Kind.PREVIEW):
        mine = list(Judgment.objects.filter(study=study, rater=enrollment.rater).select_related("item"))
        raters[enrollment.rater_id] = (
            sum(not j.item.is_attention_check for j in mine),
            sum(j.attention_passed is True for j in mine),
            sum(j.attention_passed is False for j in mine),
            sum(j.too_fast for j in mine),
        )
    return {
        "items_total": len(items),
        "items_complete": sum(d >= quota for d in done.values()),
        "items_started": sum(d > 0 for d in done.values()),
        "judgments_done": sum(min(d, quota) for d in done.values()),
        "judgments_needed": len(items) * quota,
        "judge_judgments": Judgment.objects.filter(study=study, rater__kind=Rater.Kind.LLM).count(),
        "rows": sorted((done[i.pk], i.position, i.pk, i.external_id) for i in items),
        "raters": raters,
    }


class TestTotalsMatchACountOfTheRows:
    def test_every_total_and_row_is_what_counting_the_judgments_gives(self, make_study, researcher):
        study = busy_study(make_study, researcher, 20)
        expected = brute_force(study)
        # The scenario has what it claims to have.
        leases = Assignment.objects.filter(study=study, state=Assignment.State.LEASED)
        assert leases.filter(lease_expires_at__lt=timezone.now(), rater__kind__in=HUMAN_KINDS).exists()
        assert leases.filter(lease_expires_at__gt=timezone.now(), item__is_attention_check=False).exists()
        assert leases.filter(item__is_attention_check=True).exists()
        assert Judgment.objects.filter(study=study, attention_passed=False).exists()
        assert Judgment.objects.filter(study=study, rater__kind=Rater.Kind.PREVIEW).exists()
        assert 0 < expected["items_complete"] < expected["items_started"] < expected["items_total"]

        progress = study_progress(study=study)
        for key in ("items_total", "items_complete", "items_started", "judgments_done", "judgments_needed"):
            assert getattr(progress, key) == expected[key], key
        assert progress.judge_judgments == expected["judge_judgments"] == 5
        assert [(i.done, i.item_id, i.external_id) for i in progress.items] == [
            (done, pk, external_id) for done, _position, pk, external_id in expected["rows"]
        ]
        assert {
            r.rater_id: (r.judgments, r.attention_passed, r.attention_failed, r.too_fast) for r in progress.raters
        } == (expected["raters"])
        assert progress.raters_total == len(expected["raters"]) == 6

    def test_a_page_of_items_and_of_raters_is_the_same_slice_of_the_whole(self, make_study, researcher):
        study = busy_study(make_study, researcher, 20)
        whole = study_progress(study=study)
        page = study_progress(study=study, item_offset=5, item_limit=7, rater_offset=2, rater_limit=3)
        assert page.items == whole.items[5:12]
        assert page.raters == whole.raters[2:5]
        assert study_progress(study=study, item_offset=15).items == whole.items[15:]
        assert (page.judgments_done, page.items_total) == (whole.judgments_done, whole.items_total)

    def test_the_counts_follow_when_a_lease_is_answered(self, make_study, researcher):
        study = busy_study(make_study, researcher, 20)
        dee = Enrollment.objects.get(study=study, rater__external_id="dee")
        held = Assignment.objects.get(rater=dee.rater, state=Assignment.State.LEASED)
        before = study_progress(study=study).judgments_done
        judgment_submit(assignment=held, rater=dee.rater, value={"rating": 2}, duration_ms=5000)
        assert study_progress(study=study).judgments_done == before + 1 == brute_force(study)["judgments_done"]


class TestTheProgressPageCostsTheSameAtAnySize:
    # Session, user and permissions (6 with the study), item totals (2), raters, judges, item page, rater page.
    BOUND = 12

    @pytest.mark.parametrize("n_items", [20, 2000])
    def test_the_same_queries_at_20_and_2000_items(
        self, client, make_study, researcher, n_items, django_assert_max_num_queries
    ):
        study = busy_study(make_study, researcher, n_items)
        assert Item.objects.filter(study=study).count() == n_items + 2
        client.force_login(researcher)
        url = reverse("researcher:progress", args=[study.pk])
        with django_assert_max_num_queries(self.BOUND):
            response = client.get(url, headers={"HX-Request": "true"})
        assert response.status_code == 200
        progress = brute_force(study)
        assert f"{progress['judgments_done']} of {progress['judgments_needed']} judgments" in response.content.decode()
