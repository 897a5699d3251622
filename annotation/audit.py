# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit log of researchers' changes to studies.

``audit_record`` writes one ``AuditEntry``; the study services call it. Old
and new values are kept for settings; fields that hold secrets are never
written (the completion code and entry token let anyone finish or enter a
study, so only the fact that they changed is kept).

Item imports reach ``items_create`` through the importers, which do not pass
an actor along; a view wraps such a call in ``acting_as(user)`` so the entry
still names who did it.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from .models import AuditEntry, Study

# Values that grant access: the log says they changed, never what to.
SECRET_FIELDS = {
    "completion_code",
    "no_work_code",
    "failed_checks_code",
    "declined_code",
    "entry_token",
    "pseudonym_key",
}

_current_actor: ContextVar[AbstractBaseUser | None] = ContextVar("funnybone_audit_actor", default=None)


@contextmanager
def acting_as(user: AbstractBaseUser | None) -> Iterator[None]:
    """Changes made inside the block without an explicit actor are recorded as this user's."""
    token = _current_actor.set(user if user is not None and user.is_authenticated else None)
    try:
        yield
    finally:
        _current_actor.reset(token)


def _plain(value: Any) -> Any:
    """A value as JSON can hold it."""
    if value is None or isinstance(value, (bool, int, float, str, list, dict)):
        return value
    return str(value)


#: How a secret is shown: whether there was one and whether there is one, never what it says.
SECRET_SET, SECRET_OLD, SECRET_NEW = "(set, hidden)", "(old value, hidden)", "(new value, hidden)"


def _empty(value: Any) -> bool:
    return value is None or value == ""


def _secret(old: Any, new: Any) -> list[Any]:
    """A secret's change as the log keeps it: set, cleared, or changed; None stands for "none"."""
    if _empty(old):
        return [None, SECRET_SET]
    if _empty(new):
        return [SECRET_SET, None]
    return [SECRET_OLD, SECRET_NEW]


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for the fields whose value changed, secrets redacted.

    Nothing and an empty text are the same here: a new study's empty settings are no change.
    """
    changes: dict[str, list[Any]] = {}
    for name in sorted(after):
        old, new = before.get(name), after[name]
        if old == new or (_empty(old) and _empty(new)):
            continue
        changes[name] = _secret(old, new) if name in SECRET_FIELDS else [_plain(old), _plain(new)]
    return changes


def audit_record(
    *,
    study: Study,
    action: str,
    actor: AbstractBaseUser | None = None,
    changes: dict[str, Any] | None = None,
) -> AuditEntry:
    if actor is None:
        actor = _current_actor.get()
    elif not actor.is_authenticated:
        actor = None
    changes = {k: (_secret(*v) if k in SECRET_FIELDS else v) for k, v in (changes or {}).items()}
    return AuditEntry.objects.create(study=study, study_name=study.name, actor=actor, action=action, changes=changes)
