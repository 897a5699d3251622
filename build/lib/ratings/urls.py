# SPDX-License-Identifier: GPL-3.0-or-later
from django.urls import path

from . import api, protocol_views, views

app_name = "ratings"

urlpatterns = [
    path("api/<slug:slug>/agreement", api.StudyAgreementView.as_view(), name="api_agreement"),
    path("<slug:slug>/", views.study_analysis, name="study_analysis"),
    path("<slug:slug>/protocol/", protocol_views.protocol_report_page, name="protocol_report"),
    path("<slug:slug>/protocol/workbook.xlsx", protocol_views.protocol_workbook, name="protocol_workbook"),
    path("<slug:slug>/protocol/figures/<slug:key>.<str:fmt>", protocol_views.protocol_figure, name="protocol_figure"),
]
