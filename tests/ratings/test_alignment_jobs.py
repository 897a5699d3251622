# SPDX-License-Identifier: GPL-3.0-or-later
"""Alignment reports as leased jobs: staleness from the last heartbeat, recovery, lease loss."""

from datetime import timedelta

import pytest
from django.utils import timezone

from ratings.alignment import AlignmentParams
from ratings.alignment_tasks import report_request
from ratings.models import AlignmentReport
from tests.ratings.alignment_helpers import build_ordinal

pytestmark = pytest.mark.django_db


@pytest.fixture
def ordinal(researcher):
    study, raters = build_ordinal(researcher)
    return study


@pytest.mark.xfail(strict=True, reason="staleness is measured from started_at: a live report is re-queued")
def test_a_running_report_whose_worker_is_alive_is_not_queued_again(ordinal, django_capture_on_commit_callbacks):
    params = AlignmentParams(seed=ordinal.seed)
    with django_capture_on_commit_callbacks(execute=False):
        report = report_request(study=ordinal, params=params, inline=False)
    long_ago = timezone.now() - timedelta(minutes=20)
    # Started 20 minutes ago and still working (the worker reported progress just now).
    AlignmentReport.objects.filter(pk=report.pk).update(status="running", started_at=long_ago, stage="bootstrap")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = report_request(study=ordinal, params=params, inline=False)
    assert again.status == "running" and again.stage == "bootstrap"
    assert callbacks == []
