# SPDX-License-Identifier: GPL-3.0-or-later
"""Gunicorn settings for the load harness and the fault tests (``gunicorn -c bench/load_gunicorn.py``).

Each worker names its PostgreSQL connections ``funnybone-web-<worker pid>``
(``application_name``), so ``pg_stat_activity`` tells which worker a backend
serves: the fault tests use it to kill the worker, or end the backend, that
is in the middle of a given request. Settings are imported after the fork
(no ``preload_app``), so the worker's own environment is the one Django reads.
"""

import os


def post_fork(server, worker) -> None:  # noqa: ARG001 - gunicorn's hook signature
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        joiner = "&" if "?" in url else "?"
        os.environ["DATABASE_URL"] = f"{url}{joiner}application_name=funnybone-web-{os.getpid()}"
