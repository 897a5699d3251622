# SPDX-License-Identifier: GPL-3.0-or-later
from django.urls import path

from . import api, export_views

app_name = "exports"

urlpatterns = [
    path("study/<slug:slug>/", export_views.export_page, name="page"),
    path("study/<slug:slug>/request/", export_views.export_request, name="request"),
    path("study/<slug:slug>/card/", export_views.dataset_card_save, name="card"),
    path("<int:pk>/", export_views.export_status, name="status"),
    path("<int:pk>/download/", export_views.export_download, name="download"),
    path("api/study/<slug:slug>/", api.api_export_create, name="api_create"),
    path("api/<int:pk>/", api.api_export_status, name="api_status"),
]
