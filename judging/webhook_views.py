# SPDX-License-Identifier: GPL-3.0-or-later
"""The webhooks page: add an address, see its deliveries, send one again, remove it (``judging.webhooks``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.access import get_owned_or_404, owned_by
from annotation.models import Study
from annotation.views.researcher import researcher_required

from .models import Webhook, WebhookDelivery
from .outbound import base_url_problem
from .webhooks import EVENTS, new_secret, redeliver

RECENT_DELIVERIES = 20


class WebhookForm(forms.Form):
    url = forms.CharField(max_length=500, label="Address", help_text="An http(s) address that accepts a JSON POST.")
    study = forms.ModelChoiceField(queryset=Study.objects.none(), required=False, empty_label="Every study of mine")
    events = forms.MultipleChoiceField(
        choices=list(EVENTS.items()), widget=forms.CheckboxSelectMultiple, initial=list(EVENTS)
    )

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["study"].queryset = owned_by(Study, user=owner).order_by("name")

    def clean_url(self) -> str:
        url = self.cleaned_data["url"].strip()
        problem = base_url_problem(url)
        if problem:
            raise forms.ValidationError(problem.replace("base URL", "address"))
        return url


@researcher_required
def webhook_list(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None, owner=request.user)
    created = None
    if request.method == "POST" and form.is_valid():
        created = Webhook.objects.create(
            owner=request.user,
            url=form.cleaned_data["url"],
            study=form.cleaned_data["study"],
            events=form.cleaned_data["events"],
            secret=new_secret(),
        )
        form = WebhookForm(owner=request.user)
    hooks = owned_by(Webhook, user=request.user).select_related("study").order_by("-created_at")
    deliveries = (
        owned_by(WebhookDelivery, user=request.user)
        .select_related("webhook")
        .order_by("-created_at", "-id")[:RECENT_DELIVERIES]
    )
    context = {"form": form, "hooks": hooks, "deliveries": deliveries, "created": created, "events": EVENTS}
    return render(request, "judging/webhooks.html", context, status=400 if form.errors else 200)


@researcher_required
@require_POST
def webhook_delete(request: HttpRequest, pk: int) -> HttpResponse:
    hook = get_owned_or_404(Webhook.objects.all(), user=request.user, pk=pk)
    hook.delete()
    messages.success(request, f"The webhook to {hook.url} is removed.")
    return redirect("judging:webhook_list")


@researcher_required
@require_POST
def webhook_redeliver(request: HttpRequest, pk: int) -> HttpResponse:
    delivery = get_owned_or_404(WebhookDelivery.objects.select_related("webhook"), user=request.user, pk=pk)
    redeliver(delivery)
    messages.success(request, f"The {delivery.event} event is being sent again.")
    return redirect("judging:webhook_list")
