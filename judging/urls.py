from django.urls import path

from . import generation_views, views, webhook_views

app_name = "judging"

urlpatterns = [
    path("judges/", views.judge_list, name="judge_list"),
    path("judges/baselines/", views.baselines_add, name="baselines_add"),
    path("judges/<int:pk>/", views.judge_edit, name="judge_edit"),
    path("judges/<int:pk>/test/", views.judge_test, name="judge_test"),
    path("templates/", views.template_list, name="template_list"),
    path("webhooks/", webhook_views.webhook_list, name="webhook_list"),
    path("webhooks/<int:pk>/delete/", webhook_views.webhook_delete, name="webhook_delete"),
    path("webhooks/deliveries/<int:pk>/again/", webhook_views.webhook_redeliver, name="webhook_redeliver"),
    path("templates/<slug:name>/", views.template_edit, name="template_edit"),
    path("studies/<int:study_pk>/runs/", views.study_runs, name="study_runs"),
    path("studies/<int:study_pk>/tournaments/new/", views.tournament_new, name="tournament_new"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel_view, name="run_cancel"),
    path("runs/<int:pk>/resume/", views.run_resume_view, name="run_resume"),
    path("runs/<int:pk>/retry-failed/", views.run_retry_view, name="run_retry_failed"),
    path("tournaments/<int:pk>/", views.tournament_detail, name="tournament_detail"),
    path("tournaments/<int:pk>/cancel/", views.tournament_cancel_view, name="tournament_cancel"),
    path("tournaments/<int:pk>/human-check/", views.tournament_human_check, name="tournament_human_check"),
    path("generators/", generation_views.generator_list, name="generator_list"),
    path("generators/<int:pk>/", generation_views.generator_edit, name="generator_edit"),
    path("studies/<int:study_pk>/generate/", generation_views.generation_new, name="generation_new"),
    path("generations/<int:pk>/", generation_views.generation_detail, name="generation_detail"),
    path("generations/<int:pk>/cancel/", generation_views.generation_cancel_view, name="generation_cancel"),
    path("generations/<int:pk>/resume/", generation_views.generation_resume_view, name="generation_resume"),
]
