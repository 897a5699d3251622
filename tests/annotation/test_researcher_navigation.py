"""Finding one's way as a researcher: the root URL, the study tabs on every study page, the item-file guide, the icon."""

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

pytestmark = pytest.mark.django_db

STUDY_TABS = {
    "analysis": ("ratings:study_analysis", "slug", "Agreement"),
    "alignment": ("alignment:report", "slug", "Judges vs humans"),
    "judges": ("judging:study_runs", "pk", "LLM judges"),
    "export": ("exports:page", "slug", "Export"),
    "items": ("researcher:study_items", "pk", "Items"),
    "progress": ("researcher:progress", "pk", "Progress"),
}


def current_tab(html: str) -> list[str]:
    """The study tabs marked as the current page."""
    nav = re.search(r'<nav aria-label="This study".*?</nav>', html, re.S)
    assert nav, "the page has no study tabs"
    return re.findall(r'aria-current="page">([^<]+)</a>', nav.group(0))


class TestRoot:
    def test_a_visitor_is_sent_to_log_in(self, client):
        response = client.get("/", follow=True)
        assert response.status_code == 200
        assert response.redirect_chain[-1][0].startswith(reverse("login"))
        assert b'name="username"' in response.content

    def test_a_researcher_lands_on_their_studies(self, client, researcher, make_study):
        make_study(name="My own study")
        client.force_login(researcher)
        response = client.get("/", follow=True)
        assert response.status_code == 200
        assert "My own study" in response.content.decode()


class TestFavicon:
    def test_every_page_links_the_icon_and_the_file_exists(self, client):
        html = client.get(reverse("login")).content.decode()
        link = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', html)
        assert link and link.group(1).endswith("img/favicon.svg")
        path = finders.find("img/favicon.svg")
        assert path and Path(path).read_text(encoding="utf-8").startswith("<svg")

    def test_favicon_ico_points_at_it(self, client):
        response = client.get("/favicon.ico")
        assert response.status_code == 301
        assert response["Location"].endswith("img/favicon.svg")


class TestStudyTabs:
    @pytest.mark.parametrize("current", sorted(STUDY_TABS))
    def test_every_study_page_has_the_tabs_and_marks_itself(self, client, researcher, make_study, current):
        study = make_study(name="Tabbed study")
        client.force_login(researcher)
        url_name, key, label = STUDY_TABS[current]
        response = client.get(reverse(url_name, args=[getattr(study, key)]))
        assert response.status_code == 200
        html = response.content.decode()
        assert current_tab(html) == [label]
        # The researcher's own header (their studies, log out) is there too.
        assert 'aria-label="Researcher"' in html


class TestItemFileGuide:
    def test_the_upload_form_links_the_guide(self, client, researcher, make_study):
        study = make_study(name="Guided")
        client.force_login(researcher)
        html = client.get(reverse("researcher:study_items", args=[study.pk])).content.decode()
        guide = reverse("researcher:item_format", args=[study.pk])
        assert f'href="{guide}"' in html
        assert "see the format guide" not in html

    @pytest.mark.parametrize(
        ("task_type", "n_candidates", "expected"),
        [
            ("ordinal", 0, ["Items have no candidates", "a whole number on the scale"]),
            ("pairwise", 2, ["exactly 2 candidates", "a candidate key, or tie"]),
            ("binary", 0, ["one of the labels: <code>"]),
            ("best_worst", 4, ["exactly 4 candidates", "the whole answer as JSON"]),
        ],
    )
    def test_it_says_what_this_study_needs(self, client, researcher, make_study, task_type, n_candidates, expected):
        study = make_study(task_type=task_type, n_candidates=n_candidates)
        client.force_login(researcher)
        response = client.get(reverse("researcher:item_format", args=[study.pk]))
        assert response.status_code == 200
        html = response.content.decode()
        for text in expected:
            assert text in html
        for column in ("id", "prompt", "gold", "attention_check", "meta.&lt;name&gt;", "candidate.&lt;key&gt;"):
            assert f"<code>{column}</code>" in html

    def test_another_researchers_guide_is_not_found(self, client, other_researcher, make_study):
        study = make_study()
        client.force_login(other_researcher)
        assert client.get(reverse("researcher:item_format", args=[study.pk])).status_code == 404
