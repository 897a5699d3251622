from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotation.logins import LoginView

urlpatterns = [
    path("", include("annotation.urls")),
    path("studies/", include("annotation.researcher_urls")),
    path("judging/", include("judging.urls")),
    path("api/judging/", include("judging.api_urls")),
    path("api/", include("annotation.api_urls")),
    path("analysis/", include("ratings.urls")),
    path("alignment/", include("ratings.alignment.urls")),
    path("exports/", include("ratings.export_urls")),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
