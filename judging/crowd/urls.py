"""The crowd pages, mounted at /crowd/."""

from django.urls import path

from . import views

app_name = "crowd"

urlpatterns = [
    path("studies/<int:pk>/", views.crowd_page, name="page"),
    path("studies/<int:pk>/token/", views.token_save, name="token"),
    path("studies/<int:pk>/link/", views.link, name="link"),
    path("studies/<int:pk>/withdraw/", views.withdraw, name="withdraw"),
    path("studies/<int:pk>/prolific/<str:action>/", views.act, name="act"),
]
