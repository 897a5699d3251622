"""URLconf for the export tests: the project's URLs with the export pages mounted at /exports/."""

from funnybone.urls import urlpatterns as project_urlpatterns
from tests.ratings.export_helpers import include_export_urls

urlpatterns = include_export_urls(project_urlpatterns)
