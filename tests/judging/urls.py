"""The project's URLs plus the judging app's, for tests (the lead wires them into funnybone/urls.py)."""

from django.urls import include, path

from funnybone.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("judging/", include("judging.urls")),
    path("api/judging/", include("judging.api_urls")),
    *project_urlpatterns,
]
