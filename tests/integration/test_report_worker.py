"""A real Celery worker fills in the analysis page, and recomputes it when a judgment arrives."""

import pytest

from annotation.models import Rater
from ratings.analysis import analysis_result
from ratings.models import StudyReport
from tests.ratings.test_selectors import add_rater, rate_all
from tests.ratings.test_stored_reports import alpha_cell, text

from .conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def report_done(study) -> bool:
    report = StudyReport.objects.filter(study=study, kind="analysis").first()
    return report is not None and report.status == "done"


def test_the_worker_computes_the_analysis_page_once_per_change(celery_worker, client, researcher, make_study, settings):
    settings.FUNNYBONE_REPORT_INLINE_JUDGMENTS = 0  # this web process never computes a report
    study = make_study(n_items=4, quota_per_item=10, name="Worker jokes")
    for name, ratings in (("ann", [0, 1, 2, 3]), ("bob", [0, 1, 3, 3])):
        rate_all(study, add_rater(study, name), ratings)
    rate_all(study, add_rater(study, "gpt", Rater.Kind.LLM), [1, 1, 2, 3])
    client.force_login(researcher)
    url = f"/analysis/{study.slug}/"

    first = client.get(url).content.decode()
    assert "Computing…" in first and "Krippendorff" not in first
    assert wait_until(lambda: report_done(study)), celery_worker.log_text()
    html = client.get(url, {"poll": "1"}, headers={"HX-Request": "true"}).content.decode()
    assert "up to date" in text(html) and "from 12 judgments" in text(html)
    direct = analysis_result(study=study, group="humans", rater_ids=None, k=3, tie="higher")
    assert StudyReport.objects.get(study=study, kind="analysis").result == direct
    assert alpha_cell(html) == f"{direct['agreement']['agreement']['krippendorff_alpha']['ordinal']:.3f}"

    rate_all(study, add_rater(study, "cy"), [3, 2, 1, 0])
    html = text(client.get(url).content.decode())
    assert "out of date, 4 new judgments since; recomputing…" in html
    assert wait_until(lambda: report_done(study)), celery_worker.log_text()
    html = client.get(url).content.decode()
    assert "up to date" in text(html) and "from 16 judgments" in text(html)
    direct = analysis_result(study=study, group="humans", rater_ids=None, k=3, tie="higher")
    assert alpha_cell(html) == f"{direct['agreement']['agreement']['krippendorff_alpha']['ordinal']:.3f}"
