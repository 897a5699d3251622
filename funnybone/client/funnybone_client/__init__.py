# SPDX-License-Identifier: GPL-3.0-or-later
"""A Python client for the Funnybone API v1 (docs/api.md in the Funnybone repository).

    from funnybone_client import Funnybone
    fb = Funnybone("https://funnybone.example.org", token="...")
    study = fb.create_study_from_file("study.yaml")

Every method is one or a few HTTP requests, sent again on connection errors, 429 and
5xx (honouring ``Retry-After``); lists are lazy iterators that ask for the next page
as you go; background work (imports, runs, tournaments, exports, the alignment
report) has a ``wait_*`` method that polls until it is finished, reports each state
to an ``on_progress`` callback, and raises if it failed.
"""

from .client import (
    JSON,
    OPERATIONS,
    ForeignAddress,
    Funnybone,
    FunnyboneError,
    JobFailed,
    Progress,
    UnexpectedRedirect,
    retry_after,
)

__all__ = [
    "JSON",
    "OPERATIONS",
    "ForeignAddress",
    "Funnybone",
    "FunnyboneError",
    "JobFailed",
    "Progress",
    "UnexpectedRedirect",
    "retry_after",
]
__version__ = "1.1.0"
