"""The invited expert's side: the invitation link, the account it creates, and the expert's own studies.

An invitation link opened by someone without an account offers to create one
(name, username, password under Django's password validators) or to sign in;
a signed-in expert accepts with one click and goes on to consent. Accepting is
a deliberate step, so a researcher who opens a link to check it does not turn
into an annotator. Once accepted, the link (or signing in, which lands experts
on their studies page) brings the expert back to where they stopped.
"""

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from ..api.permissions import is_researcher
from ..expert_panel import expert_studies
from ..forms import USERNAME_UNUSABLE, ExpertSignupForm
from ..languages import in_language
from ..models import Invitation
from ..ratelimit import entry_rate_limited
from ..services.enrollment import expert_account_create, invitation_accept, invitation_taken_by_another
from .annotator import _invited_study_config, _language, _message, _remember, _unavailable

# The account is created here, not by a login form: tell Django which backend vouches for it.
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _taken(request: HttpRequest) -> HttpResponse:
    return _message(
        request,
        _("This invitation is taken"),
        _("This invitation was already accepted by someone else."),
        status=403,
    )


def _start(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    """Accept (or find the acceptance again) and go to the step the expert is on."""
    try:
        enrollment = invitation_accept(invitation=invitation, user=request.user)
    except ValidationError:
        return _taken(request)
    _remember(request, enrollment)
    return redirect("annotator:consent", invitation.study.entry_token)


def _page(request: HttpRequest, invitation: Invitation, *, status: int = 200, **extra) -> HttpResponse:
    context = {
        "invitation": invitation,
        "study": invitation.study,
        "language": _language(invitation.study),
        "login_url": f"{reverse('login')}?next={request.path}",
        **extra,
    }
    return render(request, "annotation/invitation.html", context, status=status)


@in_language(_invited_study_config)
@entry_rate_limited
@never_cache
@require_http_methods(["GET", "POST"])
def invitation_entry(request: HttpRequest, token: str) -> HttpResponse:
    invitation = get_object_or_404(Invitation.objects.select_related("study", "study__owner"), token=token)
    if not invitation.study.is_open:
        return _unavailable(request, invitation.study)
    if not request.user.is_authenticated:
        if invitation.rater_id is not None:
            # Accepted already: only its expert can go on, by signing in.
            return redirect_to_login(request.get_full_path())
        return _sign_up(request, invitation)
    if invitation_taken_by_another(invitation=invitation, user=request.user):
        # Refuse before invitation_accept: it makes the account an expert rater first, which
        # would silently turn a researcher who opened someone else's link into an annotator.
        return _taken(request)
    if invitation.rater_id is not None:
        return _start(request, invitation)  # back again: resume
    if request.method == "POST" and request.POST.get("decision") == "accept":
        return _start(request, invitation)
    # Said before she accepts: a researcher's account stays one (invitation_accept keeps it so).
    researcher = is_researcher(request.user)
    return _page(
        request, invitation, mode="accept", researcher=researcher, status=400 if request.method == "POST" else 200
    )


def _sign_up(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    form = ExpertSignupForm(
        request.POST if request.method == "POST" else None,
        initial={"name": invitation.name, "email": invitation.email},
    )
    if request.method == "POST" and form.is_valid():
        try:
            user, enrollment = expert_account_create(
                invitation=invitation,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"] or "",
            )
        except ValidationError:
            return _taken(request)  # someone else accepted it a moment ago
        except IntegrityError:
            form.add_error("username", USERNAME_UNUSABLE)
        else:
            login(request, user, backend=MODEL_BACKEND)
            _remember(request, enrollment)
            return redirect("annotator:consent", invitation.study.entry_token)
    return _page(request, invitation, mode="sign_up", form=form, status=400 if form.errors else 200)


@never_cache
@require_GET
@login_required
def expert_home(request: HttpRequest) -> HttpResponse:
    """The studies this account accepted, with progress and the way back in."""
    return render(request, "annotation/expert_home.html", {"rows": expert_studies(user=request.user)})
