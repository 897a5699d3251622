"""The researcher's pages, mounted at /studies/."""

from django.urls import path

from .views import builder, protocol_pages, researcher

app_name = "researcher"

urlpatterns = [
    path("", researcher.study_list, name="study_list"),
    path("new/", builder.study_new, name="study_new"),
    path("new/upload/", builder.study_upload, name="study_upload"),
    path("new/check/", builder.builder_check_new, name="builder_check_new"),
    path("new/from-template/", protocol_pages.study_from_template_view, name="study_from_template"),
    path("<int:pk>/", researcher.study_detail, name="study_detail"),
    path("<int:pk>/check/", builder.builder_check, name="builder_check"),
    path("<int:pk>/state/", researcher.study_state, name="study_state"),
    path("<int:pk>/items/", researcher.study_items, name="study_items"),
    path("<int:pk>/items/format/", researcher.item_format, name="item_format"),
    path("<int:pk>/protocol-import/", protocol_pages.protocol_import_view, name="protocol_import"),
    path("<int:pk>/oogiri-tasks/", protocol_pages.oogiri_tasks_view, name="oogiri_tasks"),
    path("<int:pk>/semeval-edits/", protocol_pages.semeval_edits_view, name="semeval_edits"),
    path("<int:pk>/imports/<int:import_pk>/", researcher.import_status, name="import_status"),
    path("<int:pk>/progress/", researcher.progress, name="progress"),
    path("<int:pk>/invitations/", researcher.invitation_new, name="invitation_new"),
    path("<int:pk>/study-file/", researcher.study_download, name="study_download"),
    path("<int:pk>/raters/", researcher.rater_steps_page, name="rater_steps"),
    path("<int:pk>/raters/allowlist.csv", researcher.qualification_allowlist, name="qualification_allowlist"),
]
