"""The annotator's pages, mounted at the site root."""

from django.urls import path

from .views import annotator, experts, media

app_name = "annotator"

urlpatterns = [
    path("s/<str:entry_token>/", annotator.crowd_entry, name="entry"),
    path("invite/<str:token>/", experts.invitation_entry, name="invite"),
    path("expert/", experts.expert_home, name="expert_home"),
    path("s/<str:entry_token>/preview/", annotator.preview, name="preview"),
    path("s/<str:entry_token>/consent/", annotator.consent, name="consent"),
    path("s/<str:entry_token>/declined/", annotator.declined, name="declined"),
    path("s/<str:entry_token>/instructions/", annotator.instructions, name="instructions"),
    path("s/<str:entry_token>/item/", annotator.item, name="item"),
    path("s/<str:entry_token>/lease/", annotator.lease, name="lease"),
    path("s/<str:entry_token>/done/", annotator.done, name="done"),
    path("s/<str:entry_token>/leaderboard/", annotator.leaderboard, name="leaderboard"),
    # A media file of an item, by its opaque public id (annotation.views.media decides who may fetch it).
    path("m/<str:public_id>", media.serve, name="media"),
]
