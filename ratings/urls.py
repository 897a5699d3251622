# SPDX-License-Identifier: GPL-3.0-or-later
from django.urls import path

from . import api, views

app_name = "ratings"

urlpatterns = [
    path("api/<slug:slug>/agreement", api.StudyAgreementView.as_view(), name="api_agreement"),
    path("<slug:slug>/", views.study_analysis, name="study_analysis"),
]
