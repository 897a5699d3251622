# SPDX-License-Identifier: GPL-3.0-or-later
"""Pages read stored reports, say when they are out of date and have them recomputed in the background.

Driven through the pages with Django's test client. The worker's part is the
real task run in this process (``study_report_task.apply``) on the message
the page queued; tests/integration/test_report_worker.py runs it in a real
Celery worker.
"""

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from annotation.models import Judgment, Rater
from judging.rankings import standing_rows
from judging.services.judges import judge_find_or_create
from ratings.analysis import analysis_result
from ratings.leaderboards import judge_leaderboard
from ratings.models import StudyReport
from ratings.protocols import protocol_report, report_from_stored, report_json
from ratings.tasks import study_report_task
from tests.judging.test_one_leaderboard import played
from tests.ratings.alignment_helpers import build_ordinal
from tests.ratings.test_alignment import voted_binary_study
from tests.ratings.test_selectors import add_rater, judge, rate_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client, researcher):
    client.force_login(researcher)
    return client


def analysis(study, **query):
    params = "&".join(f"{k}={v}" for k, v in query.items())
    return f"/analysis/{study.slug}/" + (f"?{params}" if params else "")


def run_queued(callbacks) -> list[int]:
    """Instead of sending the messages the page queued (its on-commit callbacks), run their task here."""
    assert callbacks, "the page queued nothing"
    queued = sorted(StudyReport.objects.filter(status="queued").values_list("pk", flat=True))
    for pk in queued:
        study_report_task.apply(args=[pk])
    return queued


def text(html: str) -> str:
    """What a reader sees: tags dropped, whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split()).replace(" .", ".").replace(" ,", ",")


def alpha_cell(html: str) -> str:
    match = re.search(r"Krippendorff's α \(ordinal\)</th><td>([^<]*)</td>", html)
    assert match, html
    return match.group(1)


class TestAnalysisPage:
    def test_the_first_visit_queues_the_report_and_says_it_is_computing(
        self, owner, rated_study, by_worker, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = owner.get(analysis(rated_study)).content.decode()
        assert "Computing…" in html and "Krippendorff" not in html
        assert 'hx-trigger="every 2s"' in html and "poll=1" in html
        assert len(callbacks) == 1
        (report,) = StudyReport.objects.filter(study=rated_study, kind="analysis")
        assert report.status == "queued" and report.result is None

    def test_after_the_worker_the_numbers_appear_and_equal_the_direct_computation(
        self, owner, rated_study, by_worker, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        run_queued(callbacks)
        with django_capture_on_commit_callbacks(execute=False) as again:
            response = owner.get(analysis(rated_study), headers={"HX-Request": "true"}, QUERY_STRING="poll=1")
        html = response.content.decode()
        assert again == []  # current: nothing queued, nothing computed
        assert "up to date" in html and "Computing" not in html
        direct = analysis_result(study=rated_study, group="humans", rater_ids=None, k=3, tie="higher")
        stored = StudyReport.objects.get(study=rated_study, kind="analysis").result
        assert json.dumps(stored, sort_keys=True) == json.dumps(direct, sort_keys=True)  # to the last digit
        alpha = direct["agreement"]["agreement"]["krippendorff_alpha"]["ordinal"]
        assert alpha_cell(html) == f"{alpha:.3f}"
        assert "from 16 judgments" in html

    def test_a_new_judgment_marks_the_figures_out_of_date_and_queues_one_recomputation(
        self, owner, rated_study, by_worker, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        run_queued(callbacks)
        old = StudyReport.objects.get(study=rated_study, kind="analysis").result
        dan = add_rater(rated_study, "dan")
        rate_all(rated_study, dan, [3, 3, 0, 0])
        with django_capture_on_commit_callbacks(execute=False) as first:
            html = owner.get(analysis(rated_study)).content.decode()
        assert "out of date, 4 new judgments since; recomputing…" in text(html)
        assert alpha_cell(html) == f"{old['agreement']['agreement']['krippendorff_alpha']['ordinal']:.3f}"
        with django_capture_on_commit_callbacks(execute=False) as second:
            owner.get(analysis(rated_study), QUERY_STRING="poll=1")
        assert len(first) == 1 and second == []  # at most one queued per report
        run_queued(first)
        html = owner.get(analysis(rated_study)).content.decode()
        assert "up to date" in html and "from 20 judgments" in html
        new = analysis_result(study=rated_study, group="humans", rater_ids=None, k=3, tie="higher")
        assert alpha_cell(html) == f"{new['agreement']['agreement']['krippendorff_alpha']['ordinal']:.3f}"
        assert [r["label"] for r in new["raters"]] == ["ann", "bob", "cy", "dan"]

    def test_a_small_study_is_computed_once_in_the_request_and_then_read(
        self, owner, rated_study, django_capture_on_commit_callbacks, monkeypatch
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert "Krippendorff" in owner.get(analysis(rated_study)).content.decode()
        assert callbacks == []

        def recomputed(*args, **kwargs):
            raise AssertionError("the page recomputed unchanged figures")

        monkeypatch.setattr("ratings.analysis.analysis_result", recomputed)
        assert "up to date" in owner.get(analysis(rated_study)).content.decode()

    def test_a_failed_computation_shows_its_reason_and_that_the_figures_are_stale(
        self, owner, rated_study, by_worker, django_capture_on_commit_callbacks, monkeypatch
    ):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        run_queued(callbacks)
        rate_all(rated_study, add_rater(rated_study, "eve"), [0, 0, 0, None])

        def broken(*args, **kwargs):
            raise MemoryError("out of memory while bootstrapping")

        monkeypatch.setattr("ratings.analysis.analysis_result", broken)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        run_queued(callbacks)
        html = text(owner.get(analysis(rated_study)).content.decode())
        assert "The last computation failed: MemoryError: out of memory while bootstrapping" in html
        assert "The figures shown are out of date (from 16 judgments, 19 now)" in html
        assert "Krippendorff" in html  # the earlier figures stay, labelled as such
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(analysis(rated_study))
        assert callbacks == []  # the same inputs are not retried in a loop


class TestTournamentPage:
    def test_the_poll_never_computes_and_the_worker_fills_in_the_same_numbers(
        self, client, researcher, django_capture_on_commit_callbacks
    ):
        judge_config, _ = judge_find_or_create(owner=researcher, baseline="random")
        tournament = played(researcher, judge_config)
        client.force_login(researcher)
        url = reverse("judging:tournament_detail", args=[tournament.pk])
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = client.get(url, headers={"HX-Request": "true"}).content.decode()
        assert "Computing…" in html and "<tbody>" not in html
        assert len(callbacks) == 1
        run_queued(callbacks)
        html = client.get(url, headers={"HX-Request": "true"}).content.decode()
        assert "up to date" in html
        board, verdicts = judge_leaderboard(study=tournament.match_study, rater_id=judge_config.rater_id)
        body = html[html.index("<tbody>") : html.index("</tbody>")]
        shown = [
            [unescape(c).strip() for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)][:9]
            for row in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
        ]
        direct = [["—" if c is None else str(c) for c in row.printed] for row in standing_rows(board, verdicts)]
        assert shown == direct


class TestProtocolReport:
    def test_the_stored_report_gives_the_same_tables_as_the_direct_computation(
        self, client, researcher, by_worker, django_capture_on_commit_callbacks
    ):
        judge_config, _ = judge_find_or_create(owner=researcher, baseline="random")
        study = played(researcher, judge_config).source_study
        client.force_login(researcher)
        url = reverse("ratings:protocol_report", args=[study.slug])
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = client.get(url).content.decode()
        assert "Computing…" in html and "Download the report" not in html
        run_queued(callbacks)
        html = client.get(url).content.decode()
        assert "up to date" in html and "Download the report as a workbook" in html
        stored = StudyReport.objects.get(study=study, kind="protocol")
        direct = report_json(protocol_report(study=study))
        assert report_json(report_from_stored(study, stored.result)) == direct


class TestUndefinedMCC:
    def test_the_alignment_page_says_why_a_judges_mcc_is_undefined(self, owner, researcher):
        study, items = voted_binary_study(researcher)
        mute = add_rater(study, "mute", Rater.Kind.LLM)  # every answer unparseable
        for item in items:
            judge(study, mute, item, None, status=Judgment.Status.UNPARSEABLE)
        yes_man = add_rater(study, "yes-man", Rater.Kind.LLM)  # always "good"
        for item in items:
            judge(study, yes_man, item, {"label": "good"})

        html = text(owner.get(f"/alignment/{study.slug}/?reference=humans").content.decode())
        assert "undefined (the judge gave no usable answers)" in html
        assert "undefined (the judge answered one class only)" in html
        assert "-1.000" not in html
        report = StudyReport.objects.get(study=study, kind="alignment").result
        rows = {row["label"]: row["vs_majority"] for row in report["overall"]["judges"]}
        assert (rows["mute"]["mcc"], rows["mute"]["mcc_undefined"]) == (None, "the judge gave no usable answers")
        assert (rows["yes-man"]["mcc"], rows["yes-man"]["mcc_undefined"]) == (
            None,
            "the judge answered one class only",
        )
        assert rows["yes-man"]["accuracy"] == 0.5


class TestAlignmentPage:
    def test_new_judgments_mark_the_report_out_of_date_and_it_is_recomputed_without_a_click(
        self, owner, researcher, by_worker, django_capture_on_commit_callbacks
    ):
        study, _raters = build_ordinal(researcher)
        url = f"/alignment/{study.slug}/"
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert "Computing…" in owner.get(url).content.decode()
        run_queued(callbacks)
        assert "up to date" in text(owner.get(url).content.decode())
        late = add_rater(study, "late")
        for item in study.items.filter(is_attention_check=False)[:2]:
            judge(study, late, item, {"rating": 1})
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = text(owner.get(url).content.decode())
        assert "out of date, 2 new judgments since; recomputing…" in html
        assert "Quadratic κ" in html  # the previous figures stay visible meanwhile
        assert len(callbacks) == 1
        run_queued(callbacks)
        report = StudyReport.objects.get(study=study, kind="alignment")
        assert report.status == "done" and report.result_inputs["judgments"] == report.inputs["judgments"]
        assert "up to date" in text(owner.get(url).content.decode())

    def test_a_stale_failure_is_retried_once_the_judgments_change(
        self, owner, researcher, by_worker, django_capture_on_commit_callbacks, monkeypatch
    ):
        study, _raters = build_ordinal(researcher)
        url = f"/alignment/{study.slug}/"

        def unavailable(**kwargs):
            raise RuntimeError("the bootstrap ran out of memory")

        monkeypatch.setattr("ratings.alignment.tasks.compute_alignment", unavailable)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            owner.get(url)
        run_queued(callbacks)
        html = text(owner.get(url).content.decode())
        assert "The last computation failed: RuntimeError: the bootstrap ran out of memory" in html
        assert "There are no figures to show" in html
        monkeypatch.undo()
        judge(study, add_rater(study, "late"), study.items.filter(is_attention_check=False).first(), {"rating": 2})
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            html = text(owner.get(url).content.decode())
        assert "computation failed" not in html and "Computing…" in html
        run_queued(callbacks)
        assert "Quadratic κ" in text(owner.get(url).content.decode())
