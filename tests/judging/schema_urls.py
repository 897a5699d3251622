"""Only the judging API, so its schema test is about these endpoints alone."""

from django.urls import include, path

urlpatterns = [path("api/judging/", include("judging.api_urls"))]
