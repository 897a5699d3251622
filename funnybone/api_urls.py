"""API v1, mounted at /api/v1/: every resource at one URL, the method says the operation.

Views live in their apps (``annotation.api``, ``judging.api``, ``ratings.api``); this
file only gives them their v1 addresses. The map with examples is docs/api.md; the
OpenAPI schema is served at /api/v1/schema/. The older /api/… URLs still answer,
with a Deprecation header pointing here (``funnybone.deprecation``).
"""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from annotation.api import resources as studies
from annotation.api import views as study_ops
from judging.api import generation_views as generation_ops
from judging.api import resources as judging
from judging.api import views as judging_ops
from judging.crowd import api as crowd
from ratings import api as ratings

app_name = "v1"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(api_version="v1"), name="schema"),
    # Studies and what belongs to one study.
    path("studies/", studies.StudiesApi.as_view(), name="study_list"),
    path("studies/from-study-file/", studies.StudyFileApi.as_view(), name="study_from_file"),
    path("studies/<int:pk>/", studies.StudyApi.as_view(), name="study_detail"),
    path("studies/<int:pk>/open/", study_ops.StudyOpenApi.as_view(), name="study_open"),
    path("studies/<int:pk>/close/", study_ops.StudyCloseApi.as_view(), name="study_close"),
    path("studies/<int:pk>/progress/", study_ops.StudyProgressApi.as_view(), name="study_progress"),
    path("studies/<int:pk>/rater-steps/", study_ops.StudyRaterStepsApi.as_view(), name="study_rater_steps"),
    path(
        "studies/<int:pk>/qualification/allowlist/",
        study_ops.QualificationAllowlistApi.as_view(),
        name="study_allowlist",
    ),
    path("studies/<int:pk>/items/", study_ops.ItemListApi.as_view(), name="item_list"),
    path("studies/<int:pk>/imports/", studies.ImportsApi.as_view(), name="import_list"),
    path("studies/<int:pk>/imports/<int:import_pk>/", study_ops.ItemImportDetailApi.as_view(), name="import_detail"),
    path("studies/<int:pk>/judgments/", study_ops.JudgmentListApi.as_view(), name="judgment_list"),
    path("studies/<int:pk>/reports/agreement/", ratings.StudyAgreementReportApi.as_view(), name="report_agreement"),
    path("studies/<int:pk>/reports/alignment/", ratings.StudyAlignmentReportApi.as_view(), name="report_alignment"),
    path("studies/<int:pk>/exports/", ratings.StudyExportsApi.as_view(), name="export_list"),
    path("studies/<int:pk>/withdrawals/", crowd.WithdrawalsApi.as_view(), name="withdrawal_create"),
    # Exports by id (their status and download URLs are handed out by the study's exports).
    path("exports/<int:pk>/", ratings.ExportApi.as_view(), name="export_detail"),
    path("exports/<int:pk>/download/", ratings.ExportDownloadApi.as_view(), name="export_download"),
    # Judges and their runs.
    path("judges/", judging.JudgesApi.as_view(), name="judge_list"),
    path("judges/<int:pk>/", judging_ops.JudgeDetail.as_view(), name="judge_detail"),
    path("prompt-templates/", judging.TemplatesApi.as_view(), name="template_list"),
    path("runs/", judging.RunsApi.as_view(), name="run_list"),
    path("runs/<int:pk>/", judging_ops.RunDetail.as_view(), name="run_detail"),
    path("runs/<int:pk>/cancel/", judging_ops.RunCancel.as_view(), name="run_cancel"),
    path("runs/<int:pk>/resume/", judging_ops.RunResume.as_view(), name="run_resume"),
    path("runs/<int:pk>/retry-failed/", judging_ops.RunRetryFailed.as_view(), name="run_retry_failed"),
    path("tournaments/", judging.TournamentsApi.as_view(), name="tournament_list"),
    path("tournaments/<int:pk>/", judging.TournamentApi.as_view(), name="tournament_detail"),
    path("tournaments/<int:pk>/cancel/", judging.TournamentCancelApi.as_view(), name="tournament_cancel"),
    path("tournaments/<int:pk>/standings/", judging.TournamentStandingsApi.as_view(), name="tournament_standings"),
    # Generation: models that write candidates for a study's prompts.
    path("generators/", judging.GeneratorsApi.as_view(), name="generator_list"),
    path("generators/<int:pk>/", generation_ops.GeneratorDetail.as_view(), name="generator_detail"),
    path("generation-runs/", judging.GenerationRunsApi.as_view(), name="generation_run_list"),
    path("generation-runs/<int:pk>/", generation_ops.GenerationRunDetail.as_view(), name="generation_run_detail"),
    path(
        "generation-runs/<int:pk>/cancel/",
        generation_ops.GenerationRunCancel.as_view(),
        name="generation_run_cancel",
    ),
    path(
        "generation-runs/<int:pk>/resume/",
        generation_ops.GenerationRunResume.as_view(),
        name="generation_run_resume",
    ),
]
