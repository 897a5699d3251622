"""Django's database sessions, read with one plain query.

Every request with a session reads it, and the ORM took longer to build that
query than the database took to answer it (``annotation.plainsql``). Only the
read changes: writing, expiry, cycling keys and ``clearsessions`` are Django's.
"""

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.utils import timezone

from annotation.plainsql import fetch, shape, table


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        if not self._validate_session_key(self.session_key):
            self._session_key = None
            return None
        row = shape(self.model, "s")
        found = fetch(
            f"SELECT {row.select} FROM {table(self.model)} s WHERE s.session_key = %s AND s.expire_date > %s",  # noqa: S608
            [self.session_key, timezone.now()],
            row,
        )
        if found is None:
            self._session_key = None
            return None
        return found[0]
