"""The researcher's REST API, mounted at /api/. The OpenAPI schema is at /api/schema/."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from .api import views

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("studies/", views.StudyListApi.as_view(), name="study_list"),
    path("studies/create/", views.StudyCreateApi.as_view(), name="study_create"),
    path("studies/<int:pk>/", views.StudyDetailApi.as_view(), name="study_detail"),
    path("studies/<int:pk>/update/", views.StudyUpdateApi.as_view(), name="study_update"),
    path("studies/<int:pk>/open/", views.StudyOpenApi.as_view(), name="study_open"),
    path("studies/<int:pk>/close/", views.StudyCloseApi.as_view(), name="study_close"),
    path("studies/<int:pk>/progress/", views.StudyProgressApi.as_view(), name="study_progress"),
    path("studies/<int:pk>/items/", views.ItemListApi.as_view(), name="item_list"),
    path("studies/<int:pk>/items/import/", views.ItemImportApi.as_view(), name="item_import"),
    path("studies/<int:pk>/imports/<int:import_pk>/", views.ItemImportDetailApi.as_view(), name="import_detail"),
    path("studies/<int:pk>/judgments/", views.JudgmentListApi.as_view(), name="judgment_list"),
]
