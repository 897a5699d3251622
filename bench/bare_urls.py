# SPDX-License-Identifier: GPL-3.0-or-later
"""The app's URLs plus the bare reference's ``/bare/...`` (load harness only)."""

from bench.bare import urlpatterns as bare_urlpatterns
from funnybone.urls import urlpatterns as app_urlpatterns

urlpatterns = [*bare_urlpatterns, *app_urlpatterns]
