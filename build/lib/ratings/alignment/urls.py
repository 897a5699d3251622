# SPDX-License-Identifier: GPL-3.0-or-later
"""URLs of the alignment report; mounted with ``path("alignment/", include("ratings.alignment.urls"))``."""

from django.urls import path

from . import views as alignment_views

app_name = "alignment"

urlpatterns = [
    path("<slug:slug>/", alignment_views.alignment_report, name="report"),
    path("<slug:slug>/recompute/", alignment_views.alignment_recompute, name="recompute"),
    path("<slug:slug>/judges/", alignment_views.judge_comparison_page, name="judges"),
    path("<slug:slug>/judges/recompute/", alignment_views.judge_comparison_recompute, name="judges-recompute"),
    path("<slug:slug>/reports/<int:pk>/", alignment_views.alignment_status, name="status"),
    path(
        "<slug:slug>/reports/<int:pk>/plots/<slug:name>.<str:fmt>",
        alignment_views.alignment_plot,
        name="plot",
    ),
]
