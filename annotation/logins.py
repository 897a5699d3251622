"""Login throttling: too many failed logins pause logging in, for an account and for a client address.

A failed login for a username counts against that username and against the client
address it came from. Once a username reaches ``FUNNYBONE_LOGIN_FAILURE_LIMIT``
failures (or an address ``FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT``, which is larger
because a campus network can hold many users) within the pause length, logging in
is refused for ``FUNNYBONE_LOGIN_LOCKOUT_SECONDS`` after the last counted failure,
even with the right password: otherwise a guesser simply keeps going until the
right password is let in. A successful login clears its username's count (not the
address's: one valid account must not buy unlimited guesses at the others).

Failures are counted wherever Django checks a password (``user_login_failed``);
the refusal is checked by the site's and the admin's login forms before the
password is. The counts live in the cache (:mod:`annotation.ratelimit`), shared by
every web process when the cache is Redis.
"""

from math import ceil
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve, reverse
from django.utils.decorators import method_decorator
from django.utils.translation import ngettext

from .api.permissions import is_researcher
from .json_limits import has_nul
from .languages import in_language
from .ratelimit import client_address, count, forget, hit, prolong

USERNAME_SCOPE = "login-user"
ADDRESS_SCOPE = "login-address"


def _username(username: str) -> str:
    # One count for "Rita" and "rita ": a guesser gains nothing by varying the spelling.
    return username.strip().casefold()


def _budgets(*, username: str, address: str) -> list[tuple[str, str, int]]:
    budgets = [(USERNAME_SCOPE, _username(username), settings.FUNNYBONE_LOGIN_FAILURE_LIMIT)]
    if address:
        budgets.append((ADDRESS_SCOPE, address, settings.FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT))
    return [(scope, client, limit) for scope, client, limit in budgets if limit > 0 and client]


def login_refusal(*, username: str, address: str) -> str:
    """Why a login for ``username`` from ``address`` is refused before its password is checked; "" if not."""
    minutes = ceil(settings.FUNNYBONE_LOGIN_LOCKOUT_SECONDS / 60)
    for scope, client, limit in _budgets(username=username, address=address):
        if count(scope=scope, client=client) >= limit:
            if scope == USERNAME_SCOPE:
                return ngettext(
                    "Too many failed logins for this account. For its safety, logging in to it is paused "
                    "for %(minutes)d minute after the last failed attempt, even with the right password. "
                    "Please try again later, or ask an administrator to lift the pause.",
                    "Too many failed logins for this account. For its safety, logging in to it is paused "
                    "for %(minutes)d minutes after the last failed attempt, even with the right password. "
                    "Please try again later, or ask an administrator to lift the pause.",
                    minutes,
                ) % {"minutes": minutes}
            return ngettext(
                "Too many failed logins from your network. Logging in from it is paused "
                "for %(minutes)d minute after the last failed attempt. Please try again later.",
                "Too many failed logins from your network. Logging in from it is paused "
                "for %(minutes)d minutes after the last failed attempt. Please try again later.",
                minutes,
            ) % {"minutes": minutes}
    return ""


def login_failed(*, username: str, address: str) -> None:
    """Count a failed login; the one that reaches a limit starts the pause."""
    pause = settings.FUNNYBONE_LOGIN_LOCKOUT_SECONDS
    for scope, client, limit in _budgets(username=username, address=address):
        if hit(scope=scope, client=client, window=pause) >= limit:
            prolong(scope=scope, client=client, seconds=pause)


def login_succeeded(*, username: str) -> None:
    forget(scope=USERNAME_SCOPE, client=_username(username))


def login_unlock(*, username: str = "", address: str = "") -> None:
    """Lift the pause (and the count) of a username and/or a client address: the operator's remedy."""
    if username:
        forget(scope=USERNAME_SCOPE, client=_username(username))
    if address:
        forget(scope=ADDRESS_SCOPE, client=address)


# -- signal receivers (connected in AnnotationConfig.ready) -------------------------


def on_login_failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs) -> None:
    from django.contrib.auth import get_user_model

    username = str(credentials.get(get_user_model().USERNAME_FIELD) or credentials.get("username") or "")
    login_failed(username=username, address=client_address(request) if request is not None else "")


def on_logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs) -> None:
    login_succeeded(username=user.get_username())


# -- the login forms ----------------------------------------------------------------


class ThrottledLoginMixin:
    """Refuse a paused username or address before the password is checked, with a clear message."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        refusal = login_refusal(
            username=self.cleaned_data.get("username") or "",
            address=client_address(self.request) if self.request is not None else "",
        )
        if refusal:
            raise ValidationError(refusal, code="throttled")
        return super().clean()  # type: ignore[misc]


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


def _invited_study_config(request: HttpRequest, **_kwargs: Any) -> dict[str, Any] | None:
    """The config of the study whose invitation link sent this person to log in (``next``); None otherwise.

    An invited expert who already accepted comes back through their link and is asked to log in
    first: the page speaks the study's language, as the invitation page did.
    """
    from .views.annotator import _invited_study_config as invited

    target = request.POST.get("next") or request.GET.get("next") or ""
    if has_nul(target):  # PostgreSQL cannot even compare one (funnybone.middleware)
        return None
    try:
        match = resolve(target.split("?", 1)[0]) if target.startswith("/") else None
    except Resolver404:
        return None
    if match is None or match.view_name != "annotator:invite":
        return None
    return invited(request, **match.kwargs)


@method_decorator(in_language(_invited_study_config), name="dispatch")
class LoginView(auth_views.LoginView):
    """Django's login page with the throttled form; a paused login answers 429 Too Many Requests.

    In the language of the study when an invitation link sent the person here, else English.
    """

    authentication_form = ThrottledAuthenticationForm

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().dispatch(request, *args, **kwargs)
        # Rendered here, while the study's language is active (a TemplateResponse renders later otherwise).
        if getattr(response, "is_rendered", True) is False:
            response.render()
        return response

    def get_default_redirect_url(self) -> str:
        # An invited expert signing in without their link lands on their studies, not the researcher pages.
        if self.request.user.is_authenticated and not is_researcher(self.request.user):
            return reverse("annotator:expert_home")
        return super().get_default_redirect_url()

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, code="throttled"):
            response.status_code = 429
        return response
