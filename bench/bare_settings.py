# SPDX-License-Identifier: GPL-3.0-or-later
"""Funnybone's settings with the bare reference (``bench/bare.py``) mounted beside the app, for the load harness."""

from funnybone.settings import *  # noqa: F403

ROOT_URLCONF = "bench.bare_urls"
