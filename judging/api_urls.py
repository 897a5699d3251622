from django.urls import path

from .api import views

urlpatterns = [
    path("judges/", views.JudgeListCreate.as_view(), name="judging-api-judges"),
    path("judges/<int:pk>/", views.JudgeDetail.as_view(), name="judging-api-judge"),
    path("runs/", views.RunListCreate.as_view(), name="judging-api-runs"),
    path("runs/<int:pk>/", views.RunDetail.as_view(), name="judging-api-run"),
    path("runs/<int:pk>/cancel/", views.RunCancel.as_view(), name="judging-api-run-cancel"),
    path("runs/<int:pk>/resume/", views.RunResume.as_view(), name="judging-api-run-resume"),
    path("templates/", views.TemplateListCreate.as_view(), name="judging-api-templates"),
]
