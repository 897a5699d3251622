from django.urls import path

from .api import generation_views, views

urlpatterns = [
    path("judges/", views.JudgeListCreate.as_view(), name="judging-api-judges"),
    path("judges/<int:pk>/", views.JudgeDetail.as_view(), name="judging-api-judge"),
    path("runs/", views.RunListCreate.as_view(), name="judging-api-runs"),
    path("runs/<int:pk>/", views.RunDetail.as_view(), name="judging-api-run"),
    path("runs/<int:pk>/cancel/", views.RunCancel.as_view(), name="judging-api-run-cancel"),
    path("runs/<int:pk>/resume/", views.RunResume.as_view(), name="judging-api-run-resume"),
    path("templates/", views.TemplateListCreate.as_view(), name="judging-api-templates"),
    path("generators/", generation_views.GeneratorListCreate.as_view(), name="judging-api-generators"),
    path("generators/<int:pk>/", generation_views.GeneratorDetail.as_view(), name="judging-api-generator"),
    path("generation-runs/", generation_views.GenerationRunListCreate.as_view(), name="judging-api-generations"),
    path("generation-runs/<int:pk>/", generation_views.GenerationRunDetail.as_view(), name="judging-api-generation"),
    path(
        "generation-runs/<int:pk>/cancel/",
        generation_views.GenerationRunCancel.as_view(),
        name="judging-api-generation-cancel",
    ),
    path(
        "generation-runs/<int:pk>/resume/",
        generation_views.GenerationRunResume.as_view(),
        name="judging-api-generation-resume",
    ),
]
