"""The annotator's pages, mounted at the site root."""

from django.urls import path

from .views import annotator

app_name = "annotator"

urlpatterns = [
    path("s/<str:entry_token>/", annotator.crowd_entry, name="entry"),
    path("invite/<str:token>/", annotator.invitation_entry, name="invite"),
    path("s/<str:entry_token>/preview/", annotator.preview, name="preview"),
    path("s/<str:entry_token>/consent/", annotator.consent, name="consent"),
    path("s/<str:entry_token>/declined/", annotator.declined, name="declined"),
    path("s/<str:entry_token>/instructions/", annotator.instructions, name="instructions"),
    path("s/<str:entry_token>/item/", annotator.item, name="item"),
    path("s/<str:entry_token>/done/", annotator.done, name="done"),
    path("s/<str:entry_token>/leaderboard/", annotator.leaderboard, name="leaderboard"),
]
