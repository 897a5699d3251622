"""The researcher's pages, mounted at /studies/."""

from django.urls import path

from .views import researcher

app_name = "researcher"

urlpatterns = [
    path("", researcher.study_list, name="study_list"),
    path("new/", researcher.study_new, name="study_new"),
    path("<int:pk>/", researcher.study_detail, name="study_detail"),
    path("<int:pk>/state/", researcher.study_state, name="study_state"),
    path("<int:pk>/items/", researcher.study_items, name="study_items"),
    path("<int:pk>/imports/<int:import_pk>/", researcher.import_status, name="import_status"),
    path("<int:pk>/progress/", researcher.progress, name="progress"),
    path("<int:pk>/invitations/", researcher.invitation_new, name="invitation_new"),
    path("<int:pk>/study-file/", researcher.study_download, name="study_download"),
]
