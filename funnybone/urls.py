from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from annotation.logins import LoginView

# An address under /api/ that no pattern matches is a JSON 404 in the API's error shape.
handler404 = "funnybone.api_errors.not_found"

urlpatterns = [
    # The root is the researcher's study list (the login page first); participants arrive by study links.
    path("", RedirectView.as_view(pattern_name="researcher:study_list"), name="home"),
    # Browsers ask for /favicon.ico whatever the page says; the pages link the SVG.
    path("favicon.ico", lambda request: HttpResponsePermanentRedirect(static("img/favicon.svg")), name="favicon"),
    path("", include("annotation.urls")),
    path("studies/", include("annotation.researcher_urls")),
    path("judging/", include("judging.urls")),
    path("crowd/", include("judging.crowd.urls")),
    path("api/v1/", include("funnybone.api_urls")),
    # Before v1, deprecated for one release (funnybone.deprecation marks their answers).
    path("api/judging/", include("judging.api_urls")),
    path("api/", include("annotation.api_urls")),
    path("analysis/", include("ratings.urls")),
    path("alignment/", include("ratings.alignment.urls")),
    path("exports/", include("ratings.export_urls")),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
