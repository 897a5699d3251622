# SPDX-License-Identifier: GPL-3.0-or-later
"""The alignment report page, its recomputation, polling and figures: owner only."""

import xml.etree.ElementTree as ET

import pytest
from django.urls import include, path

from funnybone.urls import urlpatterns as site_urlpatterns
from ratings.alignment import AlignmentParams
from ratings.alignment.tasks import report_for, report_request, report_run
from ratings.models import AlignmentReport
from tests.ratings.alignment_helpers import build_ordinal, build_pairwise, judge_in_order

# Until the lead mounts ratings.alignment.urls in funnybone/urls.py these tests mount it themselves.
urlpatterns = [path("alignment/", include("ratings.alignment.urls")), *site_urlpatterns]

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


@pytest.fixture
def owner_client(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def ordinal(researcher):
    study, raters = build_ordinal(researcher)
    return study


def page(study, query=""):
    return f"/alignment/{study.slug}/" + (f"?{query}" if query else "")


def stored(study):
    return AlignmentReport.objects.get(study=study)


class TestReportPage:
    def test_it_shows_the_owner_the_kappa_table_and_figures(self, owner_client, ordinal):
        response = owner_client.get(page(ordinal))
        assert response.status_code == 200
        html = response.content.decode()
        assert "Quadratic κ" in html
        assert "twin" in html and "contrarian" in html
        assert "leave-one-out" in html
        assert html.count("<img ") == 2 + 3  # distributions, Spearman, one confusion matrix per judge
        assert 'alt="Box plots of each rater' in html
        assert "Computed at <time" in html and "up to date" in html

    def test_it_breaks_the_tables_down_by_metadata(self, owner_client, ordinal):
        html = owner_client.get(page(ordinal, "breakdown=joke_type")).content.decode()
        assert "By joke_type" in html
        assert "situational" in html and "(not set)" in html

    def test_it_hides_the_study_from_another_researcher(self, client, other_researcher, ordinal):
        client.force_login(other_researcher)
        assert client.get(page(ordinal)).status_code == 404
        assert client.post(f"/alignment/{ordinal.slug}/recompute/").status_code == 404

    def test_it_sends_anonymous_visitors_to_log_in(self, client, ordinal):
        response = client.get(page(ordinal))
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]

    def test_an_htmx_request_gets_only_the_report(self, owner_client, ordinal):
        response = owner_client.get(page(ordinal), headers={"HX-Request": "true"})
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="report">')
        assert "<html" not in html


class TestRecompute:
    def test_it_recomputes_a_small_study_at_once(self, csrf_client, researcher, ordinal):
        csrf_client.force_login(researcher)
        csrf_client.get(page(ordinal))
        before = stored(ordinal).computed_at
        token = csrf_client.cookies["csrftoken"].value
        response = csrf_client.post(
            f"/alignment/{ordinal.slug}/recompute/", {"reference": "passers", "csrfmiddlewaretoken": token}
        )
        assert response.status_code == 302
        report = stored(ordinal)
        assert report.status == "done" and report.computed_at > before

    def test_it_refuses_a_post_without_the_csrf_token(self, csrf_client, researcher, ordinal):
        csrf_client.force_login(researcher)
        assert csrf_client.post(f"/alignment/{ordinal.slug}/recompute/", {"reference": "passers"}).status_code == 403

    def test_a_queued_report_is_polled_until_the_worker_finishes(
        self, owner_client, ordinal, django_capture_on_commit_callbacks
    ):
        params = AlignmentParams(seed=ordinal.seed)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            report = report_request(study=ordinal, params=params, inline=False)
        assert report.status == "queued" and len(callbacks) == 1
        html = owner_client.get(page(ordinal)).content.decode()
        assert 'hx-trigger="every 2s"' in html
        assert "Computing" in html
        report_run(report_id=report.pk)
        report_run(report_id=report.pk)  # a second delivery finds nothing to do
        poll = owner_client.get(f"/alignment/{ordinal.slug}/reports/{report.pk}/?reference=passers")
        assert poll.status_code == 200
        html = poll.content.decode()
        assert "every 2s" not in html and "Quadratic κ" in html
        assert report_for(study=ordinal, params=params).status == "done"


class TestFigures:
    def test_the_owner_downloads_png_and_svg(self, owner_client, ordinal):
        owner_client.get(page(ordinal))
        report = stored(ordinal)
        base = f"/alignment/{ordinal.slug}/reports/{report.pk}/plots"
        png = owner_client.get(f"{base}/distributions.png")
        assert png.status_code == 200 and png["Content-Type"] == "image/png"
        assert png.content.startswith(b"\x89PNG")
        svg = owner_client.get(f"{base}/spearman.svg?download=1")
        assert svg["Content-Type"].startswith("image/svg+xml")
        assert "attachment" in svg["Content-Disposition"]
        assert "default-src 'none'" in svg["Content-Security-Policy"]
        ET.fromstring(svg.content)  # noqa: S314 - our own server's SVG, parsed to prove it is well-formed

    def test_another_researcher_gets_no_figure(self, client, other_researcher, researcher, ordinal):
        client.force_login(researcher)
        client.get(page(ordinal))
        report = stored(ordinal)
        client.force_login(other_researcher)
        assert client.get(f"/alignment/{ordinal.slug}/reports/{report.pk}/plots/distributions.png").status_code == 404

    def test_an_unknown_figure_or_format_is_404(self, owner_client, ordinal):
        owner_client.get(page(ordinal))
        base = f"/alignment/{ordinal.slug}/reports/{stored(ordinal).pk}/plots"
        assert owner_client.get(f"{base}/confusion-999999.png").status_code == 404
        assert owner_client.get(f"{base}/distributions.gif").status_code == 404

    def test_a_pairwise_report_has_a_leaderboard_and_win_rates(self, owner_client, researcher):
        study, humans, items = build_pairwise(researcher)
        from annotation.models import Rater
        from tests.ratings.alignment_helpers import add_rater

        bot = add_rater(study, "<script>bot</script>", Rater.Kind.LLM)
        for item, choice in zip(items, ["x", "y", "tie", "x"], strict=True):
            judge_in_order(study, bot, item, choice, shown=["x", "y"])
        html = owner_client.get(page(study)).content.decode()
        assert "<script>bot" not in html and "&lt;script&gt;bot" in html
        report = stored(study)
        base = f"/alignment/{study.slug}/reports/{report.pk}/plots"
        for name in ("leaderboard", "winrate-reference", f"winrate-{bot.pk}", f"confusion-{bot.pk}"):
            assert f"{base}/{name}.png" in html
            svg = owner_client.get(f"{base}/{name}.svg").content.decode()
            assert "<script>" not in svg
            ET.fromstring(svg)  # noqa: S314 - our own server's SVG, parsed to prove it is well-formed


def test_a_both_orders_judges_confusion_matrix_counts_verdicts(owner_client, researcher):
    from annotation.models import Rater
    from tests.ratings.alignment_helpers import add_rater

    study, humans, items = build_pairwise(researcher)
    bot = add_rater(study, "bot", Rater.Kind.LLM)
    for item in items:
        judge_in_order(study, bot, item, "x", shown=["x", "y"])
        judge_in_order(study, bot, item, "y", shown=["y", "x"], trial=1000, base_trial=0)
    html = owner_client.get(page(study)).content.decode()
    assert "both orders</span>" in html
    assert "each order&#x27;s verdict counted" in html
    report = stored(study)
    svg = owner_client.get(f"/alignment/{study.slug}/reports/{report.pk}/plots/confusion-{bot.pk}.svg").content
    root = ET.fromstring(svg)  # noqa: S314 - our own server's SVG
    labels = " ".join("".join(el.itertext()) for el in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "verdicts" in labels and "items" not in labels


def test_a_models_only_study_shows_leaderboard_and_features(owner_client, researcher):
    from annotation.models import Judgment, Rater
    from tests.ratings.alignment_helpers import add_rater

    study, humans, items = build_pairwise(researcher)
    Judgment.objects.filter(rater__in=humans.values()).delete()
    bot = add_rater(study, "bot", Rater.Kind.LLM)
    for item, choice in zip(items, ["x", "y", "x", "tie"], strict=True):
        judge_in_order(study, bot, item, choice, shown=["x", "y"], features={"humor_mechanisms": ["irony"]})
    html = owner_client.get(page(study)).content.decode()
    assert "Judges ranked" not in html
    report = stored(study)
    base = f"/alignment/{study.slug}/reports/{report.pk}/plots"
    for name in ("leaderboard", f"winrate-{bot.pk}", f"features-{bot.pk}"):
        assert f"{base}/{name}.png" in html
        assert owner_client.get(f"{base}/{name}.png").content.startswith(b"\x89PNG")


def test_a_failed_computation_is_shown_with_its_reason(owner_client, ordinal):
    from annotation.models import Judgment

    Judgment.objects.filter(study=ordinal, rater__kind__in=["llm", "baseline"]).delete()
    html = owner_client.get(page(ordinal)).content.decode()
    assert stored(ordinal).status == "failed"
    assert "The last computation failed: this study has no LLM or baseline judge to compare" in html


class TestAJudgeWithNoAnswers:
    """A judge whose endpoint never answered was once ranked ("dead-endpoint: 0.000" under "Judges ranked")."""

    @pytest.fixture
    def with_dead_judge(self, researcher):
        from annotation.models import Judgment, Rater
        from tests.ratings.alignment_helpers import add_rater, judge

        study, raters = build_ordinal(researcher)
        dead = add_rater(study, "dead-endpoint", Rater.Kind.LLM)
        for item in study.items.order_by("position"):
            judge(study, dead, item, None, status=Judgment.Status.FAILED)
        return study

    def test_the_report_lists_it_as_not_rankable_with_the_reason(self, owner_client, with_dead_judge):
        html = owner_client.get(page(with_dead_judge)).content.decode()
        ranked = html.split('id="ranking-heading"')[1].split("</ol>")[0]
        assert "twin: " in ranked and "dead-endpoint" not in ranked
        assert "Not rankable" in html
        assert "dead-endpoint: no usable answer on the 6 items compared (6 failed)" in html
        result = stored(with_dead_judge).result
        assert [row["label"] for row in result["unranked"]] == ["dead-endpoint"]

    def test_the_judge_comparison_page_leaves_it_out_of_the_ranks(self, owner_client, with_dead_judge):
        owner_client.get(page(with_dead_judge))
        html = owner_client.get(f"/alignment/{with_dead_judge.slug}/judges/").content.decode()
        table = html.split('id="judges-heading"')[1].split("</table>")[0]
        assert "twin" in table and "dead-endpoint" not in table
        assert "dead-endpoint: no usable answer on the 6 items compared (6 failed)" in html
