"""Big responses come in pages or streams: progress, item lists and the study file."""

import json

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.api.pagination import MAX_LIMIT
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from annotation.study_files import (
    ITEM_CHUNK,
    YAML_DUMPER,
    study_file_data,
    study_file_json_chunks,
    study_file_yaml_chunks,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def judge(study, participant_id: str, how_many: int) -> None:
    enrollment = enroll_crowdworker(study=study, participant_id=participant_id)
    for _ in range(how_many):
        nxt = next_assignment(enrollment=enrollment)
        judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 1})


@pytest.fixture
def half_judged(make_study):
    """Five items, quota two: p1 judged three items, p2 one, p3 none."""
    study = make_study(n_items=5, quota_per_item=2, item_order="as_listed")
    judge(study, "p1", 3)
    judge(study, "p2", 1)
    enroll_crowdworker(study=study, participant_id="p3")
    return study


class TestProgressApi:
    def url(self, study, **query):
        params = "&".join(f"{k}={v}" for k, v in query.items())
        return reverse("api:study_progress", args=[study.pk]) + (f"?{params}" if params else "")

    def test_totals_cover_the_whole_study_while_rows_come_a_page_at_a_time(self, api, half_judged):
        body = api.get(self.url(half_judged, limit=2, raters_limit=2)).json()
        assert (body["items_total"], body["items_started"], body["items_complete"]) == (5, 3, 1)
        assert (body["judgments_done"], body["judgments_needed"], body["percent"]) == (4, 10, 40.0)
        assert (body["raters_total"], body["raters_completed"], body["raters_excluded"]) == (3, 0, 0)
        assert [i["done"] for i in body["items"]] == [0, 0]
        assert [r["name"] for r in body["raters"]] == ["p1", "p2"]
        assert "offset=2" in body["items_next"] and "raters_limit=2" in body["items_next"]
        assert "raters_offset=2" in body["raters_next"]

    def test_following_the_next_links_visits_every_item_once_least_judged_first(self, api, half_judged):
        url, seen = self.url(half_judged, limit=2), []
        while url:
            body = api.get(url).json()
            seen.extend((i["item"], i["done"]) for i in body["items"])
            url = body["items_next"]
        assert [done for _item, done in seen] == [0, 0, 1, 1, 2]
        assert len({item for item, _done in seen}) == 5
        last_raters = api.get(self.url(half_judged, raters_limit=2, raters_offset=2)).json()
        assert [r["name"] for r in last_raters["raters"]] == ["p3"] and last_raters["raters_next"] is None

    def test_without_parameters_a_small_study_fits_in_one_page(self, api, half_judged):
        body = api.get(self.url(half_judged)).json()
        assert len(body["items"]) == 5 and body["items_next"] is None and body["raters_next"] is None

    @pytest.mark.parametrize(
        ("query", "field"),
        [({"limit": 5000}, "limit"), ({"offset": -1}, "offset"), ({"raters_limit": "lots"}, "raters_limit")],
    )
    def test_a_page_size_out_of_bounds_is_refused_naming_the_parameter(self, api, half_judged, query, field):
        response = api.get(self.url(half_judged, **query))
        assert response.status_code == 400 and field in response.json()


class TestProgressPage:
    def test_it_shows_the_totals_and_one_page_of_items_with_links_to_the_next(
        self, client, researcher, half_judged, monkeypatch
    ):
        monkeypatch.setattr("annotation.views.researcher.PROGRESS_ITEMS_SHOWN", 2)
        client.force_login(researcher)
        url = reverse("researcher:progress", args=[half_judged.pk])
        first = client.get(url).content.decode()
        assert "4 of 10 judgments" in first and "3 raters" in first
        assert "Showing items 1–2 of 5." in first and "?page=2&amp;raters_page=1" in first
        last = client.get(url + "?page=3").content.decode()
        assert "Showing items 5–5 of 5." in last and "2 / 2" in last

    def test_a_nonsense_page_number_shows_the_first_page(self, client, researcher, half_judged):
        client.force_login(researcher)
        response = client.get(reverse("researcher:progress", args=[half_judged.pk]) + "?page=9" * 3 + "x")
        assert response.status_code == 200 and "4 of 10 judgments" in response.content.decode()


class TestItemListApi:
    def test_a_huge_limit_is_cut_to_the_ceiling(self, api, researcher):
        study = study_create(owner=researcher, name="Many items", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text="x") for n in range(MAX_LIMIT + 5)])
        body = api.get(reverse("api:item_list", args=[study.pk]) + "?limit=1000000").json()
        assert body["count"] == MAX_LIMIT + 5
        assert len(body["results"]) == MAX_LIMIT and body["next"]


@pytest.fixture
def rich_study(researcher):
    """Items with candidates, metadata, gold and a check, over more than one read batch."""
    study = study_create(owner=researcher, name="Rich", task_type="pairwise", config={"allow_tie": True})
    specs = [
        ItemSpec(
            external_id=f"p{n}",
            prompt=f"Prompt {n}: «quotes» and: colons",
            metadata={"source": "test", "n": n} if n % 2 else {},
            candidates=[
                CandidateSpec(key="a", text=f"Joke A{n}", provenance={"model": "m1"}),
                CandidateSpec(key="b", text=f"Joke B{n}\nwith a second line", context="other prompt"),
            ],
        )
        for n in range(ITEM_CHUNK + 3)
    ]
    items_create(study=study, items=specs)
    return study


class TestStudyFileDownload:
    def url(self, study, fmt=None):
        return reverse("researcher:study_download", args=[study.pk]) + (f"?format={fmt}" if fmt else "")

    def test_the_yaml_streams_and_is_the_same_text_as_one_dump(self, client, researcher, rich_study):
        client.force_login(researcher)
        response = client.get(self.url(rich_study))
        assert response.streaming
        body = b"".join(response.streaming_content).decode()
        whole = yaml.dump(
            study_file_data(rich_study), Dumper=YAML_DUMPER, allow_unicode=True, sort_keys=False, width=1000
        )
        assert body == whole
        assert len(yaml.safe_load(body)["items"]) == ITEM_CHUNK + 3

    def test_the_json_streams_and_holds_the_same_study(self, client, researcher, rich_study):
        client.force_login(researcher)
        response = client.get(self.url(rich_study, "json"))
        assert response.streaming and response["Content-Disposition"].endswith('.json"')
        assert json.loads(b"".join(response.streaming_content)) == study_file_data(rich_study)

    def test_a_study_without_items_still_reads_back(self, researcher):
        study = study_create(owner=researcher, name="Empty", task_type="ordinal")
        assert yaml.safe_load("".join(study_file_yaml_chunks(study)))["items"] == []
        assert json.loads("".join(study_file_json_chunks(study)))["items"] == []

    def test_items_are_read_in_batches_not_all_at_once(self, rich_study):
        chunks = list(study_file_yaml_chunks(rich_study))
        # settings, "items:", one chunk per batch of items
        assert len(chunks) == 2 + 2

    def test_items_without_candidates_cost_no_candidate_query_per_batch(self, researcher):
        study = study_create(owner=researcher, name="Ratings only", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text="x") for n in range(2 * ITEM_CHUNK + 1)])
        with CaptureQueriesContext(connection) as queries:
            body = "".join(study_file_json_chunks(study))
        assert len(json.loads(body)["items"]) == 2 * ITEM_CHUNK + 1
        asked = [q["sql"] for q in queries if '"annotation_candidate"' in q["sql"]]
        assert len(asked) == 1 and asked[0].endswith("LIMIT 1")  # once for the whole study, not once per batch

    def test_an_unknown_format_is_refused(self, client, researcher, rich_study):
        client.force_login(researcher)
        assert client.get(self.url(rich_study, "xml")).status_code == 400


class TestItemJsonImportApi:
    def test_a_json_list_over_the_threshold_goes_to_the_worker_as_json_lines(
        self, api, researcher, settings, monkeypatch, django_capture_on_commit_callbacks, tmp_path
    ):
        from annotation.models import ItemImport
        from annotation.tasks import import_items_task

        settings.MEDIA_ROOT = tmp_path / "media"
        settings.FUNNYBONE_IMPORT_INLINE_MAX_BYTES = 50
        queued = []
        monkeypatch.setattr(import_items_task, "delay", queued.append)
        study = study_create(owner=researcher, name="JSON items", task_type="ordinal")
        items = [{"id": f"j{n}", "text": f"Joke «{n}»", "gold": {"rating": 1}} for n in range(5)]
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(reverse("api:item_import", args=[study.pk]), {"items": items}, format="json")
        body = response.json()
        assert response.status_code == 202 and body["status"] == "queued" and body["status_url"]
        assert not study.items.exists()
        job = ItemImport.objects.get(pk=body["import_id"])
        assert queued == [job.pk] and job.format == "jsonl"
        assert import_items_task(job.pk) == "done"
        assert sorted(study.items.values_list("text", flat=True)) == [f"Joke «{n}»" for n in range(5)]


class TestLeaderboardPages:
    def test_a_closed_vote_study_shows_its_prompts_a_page_at_a_time(self, client, make_study):
        from annotation.services.studies import study_set_state
        from annotation.views.annotator import LEADERBOARD_PROMPTS_SHOWN

        study = make_study(task_type="vote_allocation", n_items=LEADERBOARD_PROMPTS_SHOWN + 2, n_candidates=2)
        enrollment = enroll_crowdworker(study=study, participant_id="v1")
        last = study.items.order_by("-position").first()
        assignment = next_assignment(enrollment=enrollment).assignment
        judgment_submit(assignment=assignment, rater=enrollment.rater, value={"votes": {"c1": 1}})
        study_set_state(study=study, state="closed")
        url = f"/s/{study.entry_token}/leaderboard/"
        first = client.get(url).content.decode()
        assert first.count("votes in all") + first.count("vote in all") == LEADERBOARD_PROMPTS_SHOWN
        assert "Page 1 of 2" in first and "?page=2" in first
        second = client.get(url + "?page=2").content.decode()
        assert second.count(" in all</p>") == 2 and f"Prompt {last.position}" in second
        assert "Page 2 of 2" in client.get(url + "?page=99").content.decode()
        assert "Page 1 of 2" in client.get(url + "?page=" + "9" * 5000).content.decode()


class TestStudyList:
    def test_counts_do_not_multiply_items_by_judgments(self, client, researcher, half_judged):
        from annotation.selectors.researcher import studies_owned

        with CaptureQueriesContext(connection) as queries:
            (listed,) = studies_owned(user=researcher)
        assert (listed.n_items, listed.n_judgments) == (5, 4)
        # One join of items and judgments made the list take minutes for a 200,000-item study.
        assert 'JOIN "annotation_judgment"' not in queries[0]["sql"]
        client.force_login(researcher)
        assert client.get(reverse("researcher:study_list")).status_code == 200
