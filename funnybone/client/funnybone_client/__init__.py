# SPDX-License-Identifier: GPL-3.0-or-later
"""A Python client for the Funnybone API v1 (docs/api.md in the Funnybone repository).

    from funnybone_client import Funnybone
    fb = Funnybone("https://funnybone.example.org", token="...")
    study = fb.create_study_from_file("study.yaml")

Every method is one or a few HTTP requests; lists follow the server's pages to
the end; background work (imports, runs, tournaments, exports) has a ``wait_*``
method that polls until it is finished and raises if it failed.
"""

from .client import ForeignAddress, Funnybone, FunnyboneError, JobFailed, UnexpectedRedirect

__all__ = ["ForeignAddress", "Funnybone", "FunnyboneError", "JobFailed", "UnexpectedRedirect"]
__version__ = "1.0.0"
