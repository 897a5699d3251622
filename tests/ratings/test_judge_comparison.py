# SPDX-License-Identifier: GPL-3.0-or-later
"""The judge comparison page: judges ranked against the humans, with failures, tokens, cost and latency."""

from datetime import timedelta

import pytest
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Assignment, Item, Judgment, Rater
from annotation.services.judgments import judgment_retry, judgment_submit
from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
from judging.models import JudgeConfig
from ratings.alignment import AlignmentParams, compute_alignment
from ratings.alignment.judges import Usage, judge_comparison, judge_cost, judge_usage, wilson_interval
from tests.ratings.alignment_helpers import add_rater, build_pairwise, judge_in_order, rate_all

pytestmark = pytest.mark.django_db

HUMANS = {"ann": [0, 1, 2, 3, 0, 3], "bob": [0, 1, 2, 3, 1, 2], "cat": [1, 1, 2, 2, 0, 3]}
CONSENSUS = [0, 1, 2, 3, 0, 3]


def submit(study, rater, item, value, *, status=Judgment.Status.OK, provenance=None):
    """One judge's judgment with what judging records in its provenance."""
    now = timezone.now()
    assignment = Assignment.objects.create(
        study=study, item=item, rater=rater, leased_at=now, lease_expires_at=now + timedelta(minutes=10)
    )
    return judgment_submit(
        assignment=assignment, rater=rater, value=value, status=status, provenance=provenance or {}
    ).judgment


def used(prompt, completion, latency, cost=None):
    provenance = {"tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion}}
    provenance["latency_ms"] = latency
    if cost is not None:
        provenance["cost"] = cost
    return provenance


def build_judged(owner):
    """Six 0–3 items, three humans and three judges with known answers and known usage.

    * sharp (LLM) answers the consensus; cost recorded by judging; latency 200 or 400 ms;
    * fuzzy (LLM) is one point off on items 0 and 3, unparseable on 4, failed on 5; no
      cost recorded, but prices configured (2 per million prompt, 10 per million completion);
    * floor (baseline) answers 3 − consensus, no tokens.
    """
    study = study_create(owner=owner, name="Judged jokes", task_type="ordinal", quota_per_item=20)
    items_create(study=study, items=[ItemSpec(external_id=f"joke-{i}", text=f"Joke {i}") for i in range(6)])
    study_set_state(study=study, state="open")
    for name, ratings in HUMANS.items():
        rate_all(study, add_rater(study, name), ratings)
    sharp = add_rater(study, "sharp", Rater.Kind.LLM)
    fuzzy = add_rater(study, "fuzzy", Rater.Kind.LLM)
    floor = add_rater(study, "floor", Rater.Kind.BASELINE)
    JudgeConfig.objects.create(
        rater=fuzzy, owner=owner, name="fuzzy", model="m", input_cost_per_million=2.0, output_cost_per_million=10.0
    )
    JudgeConfig.objects.create(rater=floor, owner=owner, name="floor", baseline=JudgeConfig.Baseline.CONSTANT)
    items = list(Item.objects.filter(study=study).order_by("position"))
    for i, (item, rating) in enumerate(zip(items, CONSENSUS, strict=True)):
        submit(study, sharp, item, {"rating": rating}, provenance=used(100, 10, 200 if i % 2 else 400, cost=0.001))
        submit(study, floor, item, {"rating": 3 - rating}, provenance={"kind": "baseline"})
    for item, rating in zip(items[:4], [1, 1, 2, 2], strict=True):
        submit(study, fuzzy, item, {"rating": rating}, provenance=used(300, 20, 1000))
    submit(study, fuzzy, items[4], None, status=Judgment.Status.UNPARSEABLE, provenance=used(300, 50, 1200))
    submit(study, fuzzy, items[5], None, status=Judgment.Status.FAILED, provenance={"error": "timeout"})
    return study, {"sharp": sharp, "fuzzy": fuzzy, "floor": floor}


@pytest.fixture
def judged(researcher):
    return build_judged(researcher)


@pytest.fixture
def owner_client(client, researcher):
    client.force_login(researcher)
    return client


def page(study, query=""):
    return f"/alignment/{study.slug}/judges/" + (f"?{query}" if query else "")


def rows_of(study, **params):
    params.setdefault("seed", study.seed)
    result = compute_alignment(study=study, params=AlignmentParams(**params))
    return result, judge_comparison(study=study, result=result)


class TestRanking:
    def test_it_ranks_the_exact_judge_first_and_the_baseline_last(self, judged):
        study, judges = judged
        result, rows = rows_of(study)
        assert [r.label for r in rows] == ["sharp", "fuzzy", "floor"]
        assert [r.rank for r in rows] == [1, 2, 3]
        assert [r.id for r in rows] == [r["id"] for r in result["ranking"]]
        assert rows[0].primary.estimate == pytest.approx(1.0)
        assert rows[2].primary.estimate < 0 < rows[1].primary.estimate < 1
        assert rows[2].is_baseline and not rows[0].is_baseline

    def test_the_primary_figure_is_the_alignment_reports_kappa_with_its_interval(self, judged):
        study, judges = judged
        result, rows = rows_of(study)
        fuzzy = next(r for r in result["overall"]["judges"] if r["label"] == "fuzzy")
        row = next(r for r in rows if r.label == "fuzzy")
        assert row.primary.estimate == fuzzy["kappa"]["estimate"]
        assert (row.primary.ci_low, row.primary.ci_high) == (fuzzy["kappa"]["ci_low"], fuzzy["kappa"]["ci_high"])
        assert row.primary.method == "bootstrap"
        assert (row.n_compared, row.n_missing) == (4, 2)


class TestUsage:
    def test_counts_and_tokens_equal_the_database_sums(self, judged):
        study, judges = judged
        _, rows = rows_of(study)
        for row in rows:
            mine = Judgment.objects.filter(study=study, rater_id=row.id)
            counts = mine.aggregate(
                n=Count("id"),
                failed=Count("id", filter=Q(status="failed")),
                unparseable=Count("id", filter=Q(status="unparseable")),
            )
            prompt = sum((j.provenance.get("tokens") or {}).get("prompt", 0) for j in mine)
            completion = sum((j.provenance.get("tokens") or {}).get("completion", 0) for j in mine)
            assert row.usage.n_judgments == counts["n"]
            assert row.usage.failure_rate == counts["failed"] / counts["n"]
            assert row.usage.unparseable_rate == counts["unparseable"] / counts["n"]
            assert (row.usage.prompt_tokens, row.usage.completion_tokens) == (prompt, completion)

    def test_known_figures_per_judge(self, judged):
        study, judges = judged
        usage = judge_usage(study=study, judge_ids=[j.pk for j in judges.values()])
        fuzzy = usage[judges["fuzzy"].pk]
        assert (fuzzy.n_judgments, fuzzy.n_failed, fuzzy.n_unparseable) == (6, 1, 1)
        assert (fuzzy.prompt_tokens, fuzzy.completion_tokens) == (1500, 130)
        assert fuzzy.mean_latency_ms == pytest.approx(1040.0)
        sharp = usage[judges["sharp"].pk]
        assert sharp.recorded_cost == pytest.approx(0.006)
        assert sharp.mean_latency_ms == pytest.approx(300.0)
        assert usage[judges["floor"].pk].mean_latency_ms is None

    def test_a_retried_judgment_counts_every_attempt_it_paid_for(self, judged):
        study, judges = judged
        sharp = judges["sharp"]
        before = judge_usage(study=study, judge_ids=[sharp.pk])[sharp.pk]
        items_create(study=study, items=[ItemSpec(external_id="joke-retried", text="A joke judged three times")])
        item = Item.objects.get(study=study, external_id="joke-retried")
        first = submit(study, sharp, item, None, status=Judgment.Status.UNPARSEABLE, provenance=used(70, 9, 500, 0.002))
        # It is one judgment however often it is retried; each attempt's calls were paid for.
        for prompt, completion, cost, status in [
            (80, 11, 0.003, Judgment.Status.FAILED),
            (90, 4, 0.001, Judgment.Status.OK),
        ]:
            judgment_retry(
                assignment=first.assignment,
                rater=sharp,
                value={"rating": 2} if status == Judgment.Status.OK else None,
                status=status,
                provenance=used(prompt, completion, 300, cost),
            )
        stored = Judgment.objects.get(pk=first.pk)
        assert stored.provenance["earlier_usage"] == {"prompt": 150, "completion": 20, "cost": pytest.approx(0.005)}
        # Each attempt's own record keeps its own figures, not the running sum.
        assert [a["provenance"]["tokens"]["prompt"] for a in stored.provenance["earlier_attempts"]] == [70, 80]
        assert all("earlier_usage" not in a["provenance"] for a in stored.provenance["earlier_attempts"])
        after = judge_usage(study=study, judge_ids=[sharp.pk])[sharp.pk]
        assert after.n_judgments == before.n_judgments + 1
        assert (after.prompt_tokens - before.prompt_tokens, after.completion_tokens - before.completion_tokens) == (
            70 + 80 + 90,
            9 + 11 + 4,
        )
        assert after.recorded_cost - before.recorded_cost == pytest.approx(0.002 + 0.003 + 0.001)

    def test_cost_is_recorded_else_from_prices_else_unknown(self, judged):
        study, judges = judged
        _, rows = rows_of(study)
        by_label = {r.label: r for r in rows}
        assert (by_label["sharp"].cost, by_label["sharp"].cost_source) == (pytest.approx(0.006), "recorded")
        assert by_label["fuzzy"].cost == pytest.approx((1500 * 2.0 + 130 * 10.0) / 1e6)
        assert by_label["fuzzy"].cost_source == "prices"
        assert by_label["floor"].cost is None and by_label["floor"].cost_note == "a baseline makes no model calls"

    def test_an_llm_without_recorded_cost_or_prices_has_no_cost(self):
        usage = Usage(n_judgments=2, prompt_tokens=10, completion_tokens=5)
        cost, source, note = judge_cost(usage, (0.0, 0.0), Rater.Kind.LLM)
        assert cost is None and source == ""
        assert note == "no cost recorded and no prices configured for this judge"
        zero = Usage(n_judgments=2, prompt_tokens=10, completion_tokens=5, recorded_cost=0.0)
        assert judge_cost(zero, None, Rater.Kind.LLM)[0] is None
        assert judge_cost(zero, (1.0, 1.0), Rater.Kind.LLM)[:2] == (pytest.approx(15 / 1e6), "prices")


def test_the_wilson_interval_brackets_the_share():
    low, high = wilson_interval(8, 10)
    assert low < 0.8 < high
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 0) == (None, None)


def test_a_pairwise_study_ranks_by_agreement_with_the_majority(researcher):
    study, humans, items = build_pairwise(researcher)
    right = add_rater(study, "right", Rater.Kind.LLM)
    wrong = add_rater(study, "wrong", Rater.Kind.BASELINE)
    # Human majority per item: first, second, tie, first.
    for item, good, bad in zip(items, ["x", "y", "tie", "x"], ["y", "x", "x", "y"], strict=True):
        judge_in_order(study, right, item, good, shown=["x", "y"])
        judge_in_order(study, wrong, item, bad, shown=["x", "y"])
    _, rows = rows_of(study)
    assert [(r.label, r.primary.estimate) for r in rows] == [("right", 1.0), ("wrong", 0.0)]
    assert rows[0].primary.method == "wilson" and rows[0].n_compared == 4
    assert rows[0].primary.ci_low == pytest.approx(wilson_interval(4, 4)[0])


class TestPage:
    def test_the_owner_sees_the_judges_ranked_with_baselines_labelled(self, owner_client, judged):
        study, judges = judged
        response = owner_client.get(page(study))
        assert response.status_code == 200
        html = response.content.decode()
        assert html.index(">sharp <") < html.index(">fuzzy <") < html.index(">floor <")
        assert "baseline (floor)" in html
        assert "tokens × prices" in html
        assert "a baseline makes no model calls" in html
        assert "1040 ms" in html

    def test_the_alignment_report_links_to_it(self, owner_client, judged):
        study, judges = judged
        html = owner_client.get(f"/alignment/{study.slug}/?reference=humans").content.decode()
        assert f'href="/alignment/{study.slug}/judges/?reference=humans"' in html

    def test_an_htmx_request_switches_the_reference_and_gets_only_the_table(self, owner_client, judged):
        study, judges = judged
        response = owner_client.get(page(study, "reference=humans"), headers={"HX-Request": "true"})
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="judges">')
        assert "<html" not in html
        assert "Reference: All human raters" in html

    def test_a_reference_without_judgments_says_why_there_is_no_ranking(self, owner_client, judged):
        study, judges = judged
        html = owner_client.get(page(study, "reference=experts")).content.decode()
        assert "The last computation failed: the chosen human reference has no judgments in this study" in html
        assert "Judges ranked" not in html

    def test_it_hides_the_study_from_another_researcher(self, client, other_researcher, judged):
        study, judges = judged
        client.force_login(other_researcher)
        assert client.get(page(study)).status_code == 404
        assert client.post(f"/alignment/{study.slug}/judges/recompute/").status_code == 404

    def test_it_sends_anonymous_visitors_to_log_in(self, client, judged):
        study, judges = judged
        response = client.get(page(study))
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]

    def test_recompute_needs_the_csrf_token_and_then_refreshes(self, csrf_client, researcher, judged):
        study, judges = judged
        csrf_client.force_login(researcher)
        assert (
            csrf_client.post(f"/alignment/{study.slug}/judges/recompute/", {"reference": "humans"}).status_code == 403
        )
        csrf_client.get(page(study))
        token = csrf_client.cookies["csrftoken"].value
        response = csrf_client.post(
            f"/alignment/{study.slug}/judges/recompute/", {"reference": "humans", "csrfmiddlewaretoken": token}
        )
        assert response.status_code == 302
        assert response["Location"] == f"/alignment/{study.slug}/judges/?reference=humans"
