"""Who may see and change what: the one place the ownership rule lives.

A researcher sees and changes only what they own; anything else answers 404,
as if it did not exist, so ids and slugs of other researchers' objects reveal
nothing. Every page, API endpoint and form of every app asks these functions
instead of filtering on ``owner`` itself (``tests/security/test_ownership_helper.py``
checks that no view, API or form module does).

What a row's owner is:
- a model's ``owner_path`` class attribute when it has one (a lookup path such as ``"study__owner"``);
- else its own ``owner`` field (studies, judges, generators, tournaments, prompt templates);
- else the owner of its ``study`` (runs, imports, exports, alignment reports).

Rows with no owner (the built-in prompt templates) are shared: everyone may read them
through ``readable_by``/``get_readable_or_404``, nobody may change them (``owned_by`` never
returns them).

Staff and superusers get no exception here: on the researcher pages and the API they
see their own objects like anyone else (an administrator starting a run on someone
else's study would spend that researcher's API key). The Django admin is where staff
see everything.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db.models import Model, Q, QuerySet
from django.http import Http404, HttpRequest

from .models import Study

User = AbstractBaseUser | AnonymousUser | None


def _queryset(source: QuerySet | type[Model]) -> QuerySet:
    return source if isinstance(source, QuerySet) else source._default_manager.all()


def _has_field(model: type[Model], name: str) -> bool:
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return True


def owner_path(model: type[Model]) -> str:
    """The lookup from a row of ``model`` to the user who owns it."""
    explicit = getattr(model, "owner_path", None)
    if isinstance(explicit, str):
        return explicit
    if _has_field(model, "owner"):
        return "owner"
    if _has_field(model, "study"):
        return "study__owner"
    raise ImproperlyConfigured(f"{model.__name__} has no owner: give it an owner_path attribute.")


def _signed_in(user: User) -> bool:
    return user is not None and user.is_authenticated


def owned_by(source: QuerySet | type[Model], *, user: User) -> QuerySet:
    """The rows of ``source`` that ``user`` owns: the ones they may see and change."""
    queryset = _queryset(source)
    if not _signed_in(user):
        return queryset.none()
    return queryset.filter(**{owner_path(queryset.model): user})


def readable_by(source: QuerySet | type[Model], *, user: User) -> QuerySet:
    """The rows ``user`` owns plus the shared ones that have no owner (read-only to everyone)."""
    queryset = _queryset(source)
    if not _signed_in(user):
        return queryset.none()
    path = owner_path(queryset.model)
    return queryset.filter(Q(**{path: user}) | Q(**{f"{path}__isnull": True}))


def _get_or_404(queryset: QuerySet, lookup: dict[str, Any]) -> Model:
    found = queryset.filter(**lookup).first()
    if found is None:
        raise Http404(f"No such {queryset.model._meta.verbose_name}.")
    return found


def get_owned_or_404(source: QuerySet | type[Model], *, user: User, **lookup: Any) -> Any:
    """The one row matching ``lookup`` that ``user`` owns; 404 for anyone else's, so it stays unseen."""
    return _get_or_404(owned_by(source, user=user), lookup)


def get_readable_or_404(source: QuerySet | type[Model], *, user: User, **lookup: Any) -> Any:
    """The one row matching ``lookup`` that ``user`` owns or that is shared; 404 otherwise."""
    return _get_or_404(readable_by(source, user=user), lookup)


def owned_study_or_404(request: HttpRequest, **lookup: Any) -> Study:
    """The signed-in researcher's study by ``pk=`` or ``slug=``; 404 for anyone else's."""
    return get_owned_or_404(Study, user=request.user, **lookup)


# For class-based views (DRF ``APIView`` included): the request user's rows, and one of them or 404.
# A comment, not a docstring: drf-spectacular would publish a docstring as every API operation's description.
class OwnedObjectsMixin:
    request: Any

    def owned(self, source: QuerySet | type[Model]) -> QuerySet:
        return owned_by(source, user=self.request.user)

    def get_owned(self, source: QuerySet | type[Model], **lookup: Any) -> Any:
        return get_owned_or_404(source, user=self.request.user, **lookup)
