"""Creating HumorRank's human check from a tournament: the page's form and manage.py humorrank_check."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Study
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.humorrank import CONTEST, HUMAN_CHECK
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create

pytestmark = pytest.mark.django_db

CONTEST_CSV = "prompt_id,prompt,contestant,joke\n" + "".join(
    f"p{n},Headline {n},{name},{'x' * size}\n"
    for n in range(3)
    for name, size in (("terse", 5), ("wordy", 40), ("mid", 20))
)


@pytest.fixture
def tournament(researcher):
    contest = study_from_template(owner=researcher, template=CONTEST, name="Contest")
    assert protocol_import(study=contest, data=CONTEST_CSV.encode(), filename="c.csv").ok
    judge, _ = judge_find_or_create(owner=researcher, baseline="length")
    tournament = tournament_create(owner=researcher, name="Cup", source_study=contest, judge=judge, enqueue=False)
    process_tournament(tournament_id=tournament.pk)
    return tournament


class TestHumanCheckPage:
    def test_the_tournament_page_offers_it_once_there_are_verdicts(self, client, researcher, tournament):
        client.force_login(researcher)
        body = client.get(reverse("judging:tournament_detail", args=[tournament.pk])).content.decode()
        assert reverse("judging:tournament_human_check", args=[tournament.pk]) in body
        assert reverse("ratings:protocol_report", args=[tournament.source_study.slug]) in body

    def test_posting_creates_a_draft_check_of_sampled_pairs(self, client, researcher, tournament):
        client.force_login(researcher)
        response = client.post(reverse("judging:tournament_human_check", args=[tournament.pk]), {"pairs": 4, "seed": 1})
        check = Study.objects.get(protocol=HUMAN_CHECK)
        assert response.status_code == 302 and response["Location"] == reverse(
            "researcher:study_detail", args=[check.pk]
        )
        assert (check.state, check.task_type, check.items.count()) == ("draft", "pairwise", 4)
        assert all(item.candidates.count() == 2 for item in check.items.all())

    def test_a_bad_count_is_refused_with_a_message(self, client, researcher, tournament):
        client.force_login(researcher)
        response = client.post(
            reverse("judging:tournament_human_check", args=[tournament.pk]), {"pairs": 0, "seed": 1}, follow=True
        )
        assert "greater than or equal to 1" in response.content.decode()
        assert not Study.objects.filter(protocol=HUMAN_CHECK).exists()

    def test_another_researcher_cannot_create_one(self, client, other_researcher, tournament):
        client.force_login(other_researcher)
        response = client.post(reverse("judging:tournament_human_check", args=[tournament.pk]), {"pairs": 4})
        assert response.status_code == 404
        assert not Study.objects.filter(protocol=HUMAN_CHECK).exists()


class TestHumanCheckCommand:
    def test_it_creates_the_check_and_says_where(self, tournament):
        out = StringIO()
        call_command("humorrank_check", str(tournament.pk), "--pairs", "3", "--seed", "2", stdout=out)
        check = Study.objects.get(protocol=HUMAN_CHECK)
        assert check.slug in out.getvalue() and check.items.count() == 3
        assert check.config["source_study"] == tournament.source_study.slug

    def test_an_unknown_tournament_is_an_error(self):
        with pytest.raises(CommandError, match="No tournament 999"):
            call_command("humorrank_check", "999")
