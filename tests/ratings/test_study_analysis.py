# SPDX-License-Identifier: GPL-3.0-or-later
"""The study analysis page and its JSON twin in the API."""

import pytest
from django.urls import include, path
from rest_framework.authtoken.models import Token

from annotation.models import Rater
from funnybone.urls import urlpatterns as site_urlpatterns
from tests.ratings.test_selectors import add_rater, judge, rate_all

# The lead mounts ratings.urls at analysis/ in funnybone/urls.py; until then
# (and regardless of it) these tests mount it themselves.
urlpatterns = [path("analysis/", include("ratings.urls")), *site_urlpatterns]

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


@pytest.fixture
def rated_study(make_study):
    """4 items rated 0–3 by three crowdworkers (one excluded by the attention policy) and an LLM."""
    study = make_study(n_items=4, quota_per_item=10, name="Cat jokes")
    ann, bob = add_rater(study, "ann"), add_rater(study, "bob")
    cat = add_rater(study, "cat", excluded=True)
    gpt = add_rater(study, "gpt", Rater.Kind.LLM)
    rate_all(study, ann, [0, 1, 2, 3])
    rate_all(study, bob, [0, 1, 3, 3])
    rate_all(study, cat, [3, 2, 0, 0])
    rate_all(study, gpt, [1, 1, 2, 3])
    return study


@pytest.fixture
def owner_client(client, researcher):
    client.force_login(researcher)
    return client


def page_url(study, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/analysis/{study.slug}/" + (f"?{query}" if query else "")


class TestStudyAnalysisPage:
    def test_it_shows_the_owner_the_agreement_table(self, owner_client, rated_study):
        response = owner_client.get(page_url(rated_study))
        assert response.status_code == 200
        html = response.content.decode()
        assert "Krippendorff" in html
        assert "ICC(2,k)" in html
        assert "Rating distributions per rater" in html
        assert "<svg" in html and "<rect" in html
        assert "Aggregated label per item" in html
        assert "item-3" in html

    def test_it_hides_the_study_from_another_researcher(self, client, other_researcher, rated_study):
        client.force_login(other_researcher)
        assert client.get(page_url(rated_study)).status_code == 404

    def test_it_sends_anonymous_visitors_to_the_login_page(self, client, rated_study):
        response = client.get(page_url(rated_study))
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]

    def test_the_passers_group_drops_the_excluded_rater(self, owner_client, rated_study):
        everyone = owner_client.get(page_url(rated_study, group="humans")).context
        passers = owner_client.get(page_url(rated_study, group="passers")).context
        assert [r["label"] for r in everyone["raters"]] == ["ann", "bob", "cat"]
        assert [r["label"] for r in passers["raters"]] == ["ann", "bob"]
        # Without the rater who reversed the scale, agreement goes up.
        assert passers["agreement"]["agreement"]["krippendorff_alpha"]["ordinal"] > 0.8
        assert everyone["agreement"]["agreement"]["krippendorff_alpha"]["ordinal"] < 0.2

    def test_chosen_raters_narrow_the_group(self, owner_client, rated_study):
        ann = rated_study.enrollments.get(rater__name="ann").rater
        gpt = rated_study.enrollments.get(rater__name="gpt").rater
        url = f"/analysis/{rated_study.slug}/?group=everyone&rater={ann.pk}&rater={gpt.pk}"
        raters = owner_client.get(url).context["raters"]
        assert [r["label"] for r in raters] == ["ann", "gpt"]

    def test_an_htmx_request_renders_only_the_analysis_part(self, owner_client, rated_study):
        response = owner_client.get(page_url(rated_study, group="judges"), headers={"HX-Request": "true"})
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="analysis">')
        assert "<h1>" not in html

    def test_the_subset_tool_reports_before_after_and_rho(self, owner_client, rated_study):
        response = owner_client.get(
            page_url(rated_study, group="everyone", k=3), headers={"HX-Request": "true", "HX-Target": "subset"}
        )
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="subset">')
        subset = response.context["subset"]
        assert len(subset["selected"]) == 3
        assert subset["before"]["n_raters"] == 4
        assert subset["after"]["n_raters"] == 3
        assert "Spearman ρ between the all-rater and the subset mean" in html

    def test_majority_ties_follow_the_chosen_rule(self, owner_client, rated_study):
        # item-2 gets 2, 3 from ann and bob: a tie between 2 and 3.
        higher = owner_client.get(page_url(rated_study, group="passers", tie="higher")).context["aggregates"]
        lower = owner_client.get(page_url(rated_study, group="passers", tie="lower")).context["aggregates"]
        assert higher[2]["majority"] == "3 Very funny"
        assert lower[2]["majority"] == "2 Funny"
        assert higher[2]["mean"] == 2.5

    def test_a_pairwise_study_gets_a_leaderboard(self, owner_client, make_study):
        study = make_study(task_type="pairwise", n_items=6, n_candidates=2, quota_per_item=10)
        raters = [add_rater(study, name) for name in ("a", "b", "c")]
        for item in study.items.all():
            for n, rater in enumerate(raters):
                # model 0 wins every match but one, which is a tie.
                judge(study, rater, item, {"choice": "tie" if (item.position, n) == (0, 0) else "c0"})
        response = owner_client.get(page_url(study))
        assert response.status_code == 200
        board = response.context["leaderboard"]
        assert board["ranking"] == ["secret-model-0", "secret-model-1"]
        assert board["win_rate"]["secret-model-0"] > 0.9
        html = response.content.decode()
        assert "Bradley–Terry leaderboard" in html
        assert "secret-model-0" in html
        assert "Dawid–Skene" in html

    def test_dawid_skene_warnings_reach_the_page_and_the_json(self, owner_client, make_study):
        study = make_study(task_type="binary", n_items=6, quota_per_item=10)
        values = {"ann": [1, 0, 1, 1, 0, 0], "bob": [1, 0, 1, 0, 0, 1], "yes-man": [1, 1, 1, 1, 1, 1]}
        options = [o["value"] for o in study.config["options"]]
        for name, row in values.items():
            rater = add_rater(study, name)
            for item, code in zip(study.items.order_by("position"), row, strict=True):
                judge(study, rater, item, {"label": options[code]})
        response = owner_client.get(page_url(study))
        html = response.content.decode()
        assert 'id="dawid-skene-warnings"' in html
        yes = options[1]  # the scale names a binary label by its value
        assert f"yes-man (always {yes})" in html
        assert "left out of the fit" in html
        body = owner_client.get(f"/analysis/api/{study.slug}/agreement").json()
        ds = body["dawid_skene"]
        assert ds["left_out_raters"] == ["yes-man"]
        assert ds["fitted"] is True
        assert any(f"yes-man (always {yes})" in w for w in ds["warnings"])
        assert set(ds["labels"]) == {item.external_id for item in study.items.all()}

    def test_when_every_rater_gives_one_label_no_dawid_skene_label_is_shown(self, owner_client, make_study):
        study = make_study(task_type="binary", n_items=4, quota_per_item=10)
        first = study.config["options"][0]["value"]
        for name in ("ann", "bob"):
            rater = add_rater(study, name)
            for item in study.items.all():
                judge(study, rater, item, {"label": first})
        response = owner_client.get(page_url(study))
        assert [row["ds_label"] for row in response.context["aggregates"]] == [None] * 4
        assert "no Dawid–Skene label is estimated" in response.content.decode()
        ds = owner_client.get(f"/analysis/api/{study.slug}/agreement").json()["dawid_skene"]
        assert ds["fitted"] is False
        assert {v["label"] for v in ds["labels"].values()} == {None}

    def test_a_free_text_study_says_there_are_no_figures(self, owner_client, make_study):
        study = make_study(task_type="explanation", n_items=1)
        response = owner_client.get(page_url(study))
        assert response.status_code == 200
        assert "no numeric coding" in response.content.decode()


class TestAgreementAPI:
    def test_it_returns_the_figures_for_a_group(self, owner_client, rated_study):
        response = owner_client.get(f"/analysis/api/{rated_study.slug}/agreement?group=passers")
        assert response.status_code == 200
        body = response.json()
        assert body["group"] == "passers"
        assert [r["label"] for r in body["raters"]] == ["ann", "bob"]
        assert set(body["agreement"]["krippendorff_alpha"]) == {"nominal", "ordinal", "interval", "ratio"}
        assert set(body["agreement"]["icc"]) == {"ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"}

    def test_it_matches_the_page(self, owner_client, rated_study):
        page = owner_client.get(page_url(rated_study, group="humans")).context["agreement"]
        api = owner_client.get(f"/analysis/api/{rated_study.slug}/agreement?group=humans").json()
        assert api["agreement"] == page["agreement"]

    def test_a_token_works_and_another_researchers_study_is_404(self, client, other_researcher, rated_study):
        token = Token.objects.create(user=other_researcher)
        response = client.get(
            f"/analysis/api/{rated_study.slug}/agreement", headers={"Authorization": f"Token {token.key}"}
        )
        assert response.status_code == 404

    def test_anonymous_requests_are_refused(self, client, rated_study):
        assert client.get(f"/analysis/api/{rated_study.slug}/agreement").status_code in (401, 403)

    def test_an_unknown_group_is_a_400(self, owner_client, rated_study):
        response = owner_client.get(f"/analysis/api/{rated_study.slug}/agreement?group=aliens")
        assert response.status_code == 400
        assert "group" in response.json()

    def test_one_rater_gives_no_agreement_and_says_why(self, owner_client, rated_study):
        body = owner_client.get(f"/analysis/api/{rated_study.slug}/agreement?group=judges").json()
        assert body["agreement"] is None
        assert any("at least two raters" in w for w in body["warnings"])
