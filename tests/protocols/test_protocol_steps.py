"""The protocols' next steps on the import page: OOGIRI's benchmark builder and SemEval's edits to grade."""

from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import Study
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.oogiri import VOTING
from annotation.protocols.semeval import EDITING, GRADING
from annotation.services.imported_judgments import ImportedJudgment, judgments_import

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo" / "data"


@pytest.fixture
def voting(researcher):
    study = study_from_template(owner=researcher, template=VOTING, name="Votes")
    assert protocol_import(study=study, data=(DEMO / "oogiri-votes.csv").read_bytes(), filename="v.csv").ok
    return study


def editing_study(owner, name="Edits"):
    study = study_from_template(owner=owner, template=EDITING, name=name)
    assert protocol_import(study=study, data=b"id,original\nh1,Local <bakery/> wins award\n", filename="e.csv").ok
    judgments_import(
        study=study,
        judgments=[
            ImportedJudgment(rater=r, item="h1", value={"replacement": w}, kind="crowd")
            for r, w in (("ed1", "zoo"), ("ed2", "sock"))
        ],
    )
    return study


class TestOogiriBenchmarkStep:
    def test_the_voting_study_offers_the_builder(self, client, researcher, voting):
        client.force_login(researcher)
        body = client.get(reverse("researcher:protocol_import", args=[voting.pk])).content.decode()
        assert reverse("researcher:oogiri_tasks", args=[voting.pk]) in body

    def test_building_creates_the_five_draft_task_studies(self, client, researcher, voting):
        client.force_login(researcher)
        url = reverse("researcher:oogiri_tasks", args=[voting.pk])
        response = client.post(url, {"min_votes": 100, "per_task": 3, "seed": 4}, follow=True)
        assert "Created 5 draft benchmark studies" in response.content.decode()
        built = Study.objects.filter(owner=researcher, protocol__startswith="oogiri-").exclude(pk=voting.pk)
        assert sorted(s.protocol for s in built) == [
            "oogiri-binary",
            "oogiri-diff",
            "oogiri-quad",
            "oogiri-same",
            "oogiri-triple",
        ]
        assert all(s.state == "draft" and s.items.filter(is_attention_check=False).exists() for s in built)

    def test_a_filter_nothing_passes_says_so_and_builds_nothing(self, client, researcher, voting):
        client.force_login(researcher)
        url = reverse("researcher:oogiri_tasks", args=[voting.pk])
        response = client.post(url, {"min_votes": 100000, "per_task": 3, "seed": 0}, follow=True)
        assert response.redirect_chain[-1][0] == reverse("researcher:protocol_import", args=[voting.pk])
        assert Study.objects.filter(owner=researcher).count() == 1

    def test_another_researcher_cannot_build_from_my_votes(self, client, other_researcher, voting):
        client.force_login(other_researcher)
        url = reverse("researcher:oogiri_tasks", args=[voting.pk])
        assert client.post(url, {"min_votes": 100, "per_task": 3, "seed": 0}).status_code == 404


class TestSemevalEditsStep:
    def test_the_edits_of_my_editing_study_become_headlines_to_grade(self, client, researcher):
        client.force_login(researcher)
        editing = editing_study(researcher)
        grading = study_from_template(owner=researcher, template=GRADING, name="Grades")
        page = client.get(reverse("researcher:protocol_import", args=[grading.pk])).content.decode()
        assert "Headlines from an editing study" in page and editing.name in page
        url = reverse("researcher:semeval_edits", args=[grading.pk])
        response = client.post(url, {"editing": editing.pk}, follow=True)
        assert "Added 2 edited headline(s) to grade." in response.content.decode()
        assert sorted(grading.items.values_list("text", flat=True)) == ["Local sock wins award", "Local zoo wins award"]

    def test_someone_elses_editing_study_cannot_be_chosen(self, client, researcher, other_researcher):
        theirs = editing_study(other_researcher, name="Their edits")
        grading = study_from_template(owner=researcher, template=GRADING, name="Grades")
        client.force_login(researcher)
        response = client.post(
            reverse("researcher:semeval_edits", args=[grading.pk]), {"editing": theirs.pk}, follow=True
        )
        assert "Choose one of your SemEval editing studies." in response.content.decode()
        assert not grading.items.exists()
