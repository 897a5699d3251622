# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures shared by the tests of stored reports (a test module may define its own ``rated_study``)."""

import pytest

from annotation.models import Rater
from tests.ratings.test_selectors import add_rater, rate_all


@pytest.fixture
def rated_study(make_study):
    """4 items rated 0–3 by three crowdworkers and an LLM."""
    study = make_study(n_items=4, quota_per_item=10, name="Cat jokes")
    for name, ratings in (("ann", [0, 1, 2, 3]), ("bob", [0, 1, 3, 3]), ("cy", [1, 1, 2, 2])):
        rate_all(study, add_rater(study, name), ratings)
    rate_all(study, add_rater(study, "gpt", Rater.Kind.LLM), [1, 1, 2, 3])
    return study


@pytest.fixture
def by_worker(settings):
    """No report is computed in a request: every one goes through the worker's task."""
    settings.FUNNYBONE_REPORT_INLINE_JUDGMENTS = 0
