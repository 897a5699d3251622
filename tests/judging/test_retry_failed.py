"""Retrying a run's failed work, and a run page that says what went wrong with which item."""

import json
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Judgment
from judging.models import JudgeRun
from judging.selectors import run_progress
from judging.services.judges import ensure_baseline_judges, judge_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import ScriptedServer, prompt_text, reply_as_asked
from ratings.alignment.judges import judge_usage
from ratings.selectors import analysable_judgments

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judging.urls")]

PROSE = "Hmm, <script>alert('x')</script> hard to say really."


class Endpoint:
    """A scripted endpoint with an outage: while ``down``, items 1 and 3 get HTTP 500 and item 2 gets prose."""

    def __init__(self):
        self.down = True
        self.lock = threading.Lock()

    def __call__(self, request):
        text = prompt_text(request)
        with self.lock:
            down = self.down
        if down and ("Text 1" in text or "Text 3" in text):
            raise RuntimeError("outage")  # the scripted server answers HTTP 500
        if down and "Text 2" in text:
            return PROSE
        return reply_as_asked(request, "rating", 2)


@pytest.fixture
def endpoint():
    script = Endpoint()
    with ScriptedServer(script) as server:
        script.url = server.url
        yield script


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


def failed_run(researcher, study, endpoint) -> JudgeRun:
    judge = judge_create(
        owner=researcher,
        name="critic",
        base_url=endpoint.url,
        model="m",
        max_retries=1,
        backoff_seconds=0.01,
        timeout_seconds=5,
        concurrency=2,
        structured_output=False,
    )
    run = run_create(study=study, judge=judge, enqueue=False)
    process_run(run_id=run.pk)
    run.refresh_from_db()
    return run


class TestRetryFromThePage:
    def test_an_outage_leaves_a_partial_run_that_a_retry_fills(self, rita, researcher, make_study, endpoint, capfd):
        study = make_study(n_items=5)
        run = failed_run(researcher, study, endpoint)
        capfd.readouterr()  # the scripted server prints the outage's tracebacks
        progress = run_progress(run=run)
        assert (progress.judged, progress.failed, progress.unparseable, progress.outcome) == (2, 2, 1, "partial")
        assert progress.calls == 2 + 2 * 2 + 2  # two tries for each unit that had no answer

        page = rita.get(f"/judging/runs/{run.pk}/").content.decode()
        assert "Partial: some units failed" in page and 'class="badge bad"' in page
        reasons = page[page.index('id="failure-reasons"') : page.index("</table>", page.index('id="failure-reasons"'))]
        assert "<td>failed</td>" in reasons and "<td>2</td>" in reasons
        assert "<td>unparseable</td>" in reasons and "<td>1</td>" in reasons
        assert "HTTP 500" in reasons or "500" in reasons
        # The raw answer is shown, escaped.
        assert "<script>alert" not in page and "&lt;script&gt;alert" in page
        problems = rita.get(f"/judging/runs/{run.pk}/?show=problems").content.decode()
        table = problems[problems.index('id="run-units"') :]
        assert table.count("<tr>") - 1 == 3 and "item-0" not in table and "item-2" in table
        assert "Retry failed" in page

        endpoint.down = False
        response = rita.post(f"/judging/runs/{run.pk}/retry-failed/")
        retry = JudgeRun.objects.get(retry_of=run)
        assert response.status_code == 302 and response["Location"] == f"/judging/runs/{retry.pk}/"
        assert retry.judge_id == run.judge_id and retry.units.count() == 3
        process_run(run_id=retry.pk)
        retry.refresh_from_db()
        again = run_progress(run=retry)
        assert (again.judged, again.failed, again.unparseable, again.already, again.outcome) == (3, 0, 0, 0, "done")
        assert 'class="badge ok"' in rita.get(f"/judging/runs/{retry.pk}/").content.decode()

        # Every item now has its answer, the earlier attempts kept in provenance.
        judgments = {j.item.external_id: j for j in Judgment.objects.filter(study=study).select_related("item")}
        assert {j.status for j in judgments.values()} == {"ok"} and len(judgments) == 5
        earlier = judgments["item-2"].provenance["earlier_attempts"]
        assert [e["status"] for e in earlier] == ["unparseable"]
        assert earlier[0]["provenance"]["run"] == run.pk and earlier[0]["provenance"]["content"] == PROSE
        assert judgments["item-1"].provenance["earlier_attempts"][0]["status"] == "failed"
        assert judgments["item-1"].provenance["run"] == retry.pk
        assert "earlier_attempts" not in judgments["item-0"].provenance

        # The first run still reports what it did, and points at its retry; nothing is left to retry.
        first = rita.get(f"/judging/runs/{run.pk}/").content.decode()
        assert f"/judging/runs/{retry.pk}/" in first and "Retry failed" not in first
        assert run_progress(run=run).failed == 2

        # What alignment reads: five usable judgments, none failed.
        rater = run.judge.rater_id
        assert analysable_judgments(study=study, group="judges", rater_ids=[rater]).count() == 5
        usage = judge_usage(study=study, judge_ids=[rater])[rater]
        assert (usage.n_judgments, usage.n_failed, usage.n_unparseable) == (5, 0, 0)

    def test_a_run_where_nothing_was_judged_says_failed(self, rita, make_study, make_llm_judge):
        study = make_study(n_items=2)
        run = run_create(study=study, judge=make_llm_judge("503", max_retries=0), enqueue=False)
        process_run(run_id=run.pk)
        page = rita.get(f"/judging/runs/{run.pk}/").content.decode()
        assert "Failed: no unit was judged" in page and "Done</span>" not in page

    def test_a_big_run_is_shown_a_page_at_a_time(self, rita, researcher, make_study):
        study = make_study(n_items=120)
        run = run_create(study=study, judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)
        process_run(run_id=run.pk)
        first = rita.get(f"/judging/runs/{run.pk}/").content.decode()
        assert "Page 1 of 3" in first and "item-0 " in first and "item-119" not in first
        last = rita.get(f"/judging/runs/{run.pk}/?page=3").content.decode()
        assert "Page 3 of 3" in last and "item-119" in last
        assert rita.get(f"/judging/runs/{run.pk}/?page=abc").status_code == 200

    def test_the_unit_table_is_in_item_order_and_reads_only_its_page(self, rita, researcher, make_study):
        """Units are listed by their items' import order, read a page of ids at a time: no query sorts by
        item position or counts the units again, and a deep page costs the queries of the first."""
        baseline = ensure_baseline_judges(owner=researcher)[0]
        small, big = make_study(n_items=120, name="small"), make_study(n_items=360, name="big")
        for study in (small, big):
            # Import order is not id order: the items were imported last to first.
            for item in study.items.all():
                item.position = 10_000 - item.position
                item.save(update_fields=["position"])
        runs = {study.pk: run_create(study=study, judge=baseline, enqueue=False) for study in (small, big)}
        for run in runs.values():
            process_run(run_id=run.pk)
        small_run, big_run = runs[small.pk], runs[big.pk]

        first = rita.get(f"/judging/runs/{small_run.pk}/").content.decode()
        assert "Page 1 of 3" in first and "item-119 " in first and "item-0 " not in first
        assert first.index("item-119 ") < first.index("item-118 ") < first.index("item-70 ")
        last = rita.get(f"/judging/runs/{small_run.pk}/?page=3").content.decode()
        assert "item-0 " in last and last.index("item-19 ") < last.index("item-0 ") and "item-20 " not in last

        def queries(url):
            with CaptureQueriesContext(connection) as captured:
                assert rita.get(url).status_code == 200
            return [q["sql"] for q in captured.captured_queries]

        shown = [
            queries(f"/judging/runs/{small_run.pk}/"),
            queries(f"/judging/runs/{small_run.pk}/?page=3"),
            queries(f"/judging/runs/{big_run.pk}/?page=7"),
            queries(f"/judging/runs/{big_run.pk}/?show=problems"),
        ]
        assert len({len(sqls) for sqls in shown[:3]}) == 1 and len(shown[3]) <= len(shown[0])
        for sqls in shown:
            assert not any('"annotation_item"."position"' in sql for sql in sqls)
            assert not any(sql.startswith("SELECT COUNT(*)") for sql in sqls)


class TestRetryFromTheApiAndTheCommandLine:
    def test_the_api_queues_a_retry_and_refuses_when_nothing_failed(
        self, rita, researcher, make_study, endpoint, capfd
    ):
        study = make_study(n_items=4)
        run = failed_run(researcher, study, endpoint)
        endpoint.down = False
        response = rita.post(f"/api/judging/runs/{run.pk}/retry-failed/")
        body = response.json()
        assert response.status_code == 201 and body["retry_of"] == run.pk and body["progress"]["total"] == 3
        process_run(run_id=body["id"])
        refused = rita.post(f"/api/judging/runs/{run.pk}/retry-failed/")
        assert refused.status_code == 400 and "Nothing to retry" in str(refused.json())

    def test_the_command_retries_inline_and_prints_what_it_did(self, researcher, make_study, endpoint, capfd):
        study = make_study(n_items=4)
        run = failed_run(researcher, study, endpoint)
        endpoint.down = False
        out, err = StringIO(), StringIO()
        call_command("retry_run", str(run.pk), "--inline", stdout=out, stderr=err)
        summary = json.loads(out.getvalue())
        assert (summary["units"], summary["judged"], summary["failed"], summary["outcome"]) == (3, 3, 0, "done")
        assert Judgment.objects.filter(study=study, status="ok").count() == 4
        with pytest.raises(CommandError, match="Nothing to retry"):
            call_command("retry_run", str(run.pk), "--inline", stdout=StringIO(), stderr=StringIO())
