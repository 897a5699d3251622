# SPDX-License-Identifier: GPL-3.0-or-later
"""Prolific's API, as a researcher's token allows: submissions, approval, rejection, bonuses.

The calls, as Prolific documents them (``Authorization: Token <token>``):

- ``GET  /api/v1/studies/{study}/submissions/`` — each submission's ``id``,
  ``participant_id`` and ``status`` (``ACTIVE``, ``AWAITING REVIEW``,
  ``APPROVED``, ``REJECTED``, ``RETURNED``, ``TIMED-OUT``, ``SCREENED OUT``…);
  a page's ``_links.next.href`` leads on.
- ``POST /api/v1/submissions/{id}/transition/`` — ``{"action": "APPROVE"}`` or
  ``{"action": "REJECT", "message": …, "rejection_category": …}``; the message
  must be at least 100 characters.
- ``POST /api/v1/submissions/bulk-approve/`` — ``{"study_id", "participant_ids"}``.
- ``POST /api/v1/submissions/bonus-payments/`` — ``{"study_id", "csv_bonuses"}``
  with ``participant_id,amount`` lines (amounts in the study's currency), which
  sets the bonuses up and answers an ``id``; then
  ``POST /api/v1/bulk-bonus-payments/{id}/pay/`` pays them (not idempotent: sent once).

Every call goes out through the same guard as judges' calls
(``judging.outbound.GuardedBackend``: the address is checked on each
connection, no redirects, no proxies from the environment), to
``FUNNYBONE_PROLIFIC_API_URL`` (Prolific's own address unless an operator points
it elsewhere, as the tests do at a local server), with a time limit per call
(``FUNNYBONE_PROLIFIC_TIMEOUT``). Errors are raised as ``ProlificError`` whose
message is safe to show: it never holds the token.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
from django.conf import settings

from annotation.models import ProlificToken
from judging.keys import ApiKeyUnavailable, decrypt_api_key, encrypt_api_key
from judging.outbound import GuardedBackend, OutboundRefused, cause_in

#: Prolific's minimum length of a rejection's message.
REJECT_MESSAGE_MIN = 100
#: Prolific's rejection categories.
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
#: Statuses whose participant left without finishing: their places are given back at once.
LEFT = ("RETURNED", "TIMED-OUT", "REJECTED")
AWAITING_REVIEW = "AWAITING REVIEW"
#: Pages of submissions read at most (Prolific pages hold hundreds): bounds the time of one listing.
MAX_PAGES = 200


class ProlificError(Exception):
    """A call to Prolific failed; the message says why and is safe to show (never the token)."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class ProlificNotSetUp(ProlificError):
    """Nothing was asked of Prolific: the researcher has a step to take first (store a token, replace it)."""


@dataclass(frozen=True)
class Submission:
    id: str
    participant_id: str
    status: str


# -- the token ------------------------------------------------------------------------


def token_store(*, owner, token: str) -> None:
    """Keep the researcher's token, encrypted like judges' keys; it is never shown again."""
    token = (token or "").strip()
    if not token or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise ProlificError("The token must be one line of letters, digits and symbols, without spaces.")
    ProlificToken.objects.update_or_create(owner=owner, defaults={"token_encrypted": encrypt_api_key(token)})


def token_remove(*, owner) -> None:
    ProlificToken.objects.filter(owner=owner).delete()


def token_stored(*, owner) -> bool:
    return ProlificToken.objects.filter(owner=owner).exists()


def _token_of(owner) -> str:
    stored = ProlificToken.objects.filter(owner=owner).values_list("token_encrypted", flat=True).first()
    if stored is None:
        raise ProlificNotSetUp("No Prolific token is stored: add one on this page first.")
    try:
        return decrypt_api_key(stored)
    except ApiKeyUnavailable:
        raise ProlificNotSetUp(
            "The stored Prolific token cannot be read any more (the secret changed); replace it."
        ) from None


# -- the client -----------------------------------------------------------------------


class ProlificClient:
    """One researcher's calls to Prolific's API, through the outbound guard."""

    def __init__(self, token: str, *, base_url: str | None = None, timeout: float | None = None):
        self.base_url = (base_url or settings.FUNNYBONE_PROLIFIC_API_URL).rstrip("/") + "/"
        transport = httpx2.HTTPTransport(trust_env=False)
        transport._pool._network_backend = GuardedBackend()
        self._http = httpx2.Client(
            transport=transport,
            timeout=timeout or settings.FUNNYBONE_PROLIFIC_TIMEOUT,
            follow_redirects=False,
            trust_env=False,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
        )

    @classmethod
    def for_owner(cls, owner) -> ProlificClient:
        return cls(_token_of(owner))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProlificClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = path if path.startswith(("http://", "https://")) else urljoin(self.base_url, path.lstrip("/"))
        if urlsplit(url)[:2] != urlsplit(self.base_url)[:2]:
            raise ProlificError("Prolific's answer pointed to another address; not followed.")
        try:
            response = self._http.request(method, url, json=body)
        except httpx2.HTTPError as exc:
            refused = cause_in(exc, OutboundRefused)
            if refused is not None:
                raise ProlificError(f"This server may not call {self.base_url}: {refused}") from None
            raise ProlificError(f"Prolific could not be reached ({type(exc).__name__}).") from None
        if response.status_code >= 400:
            raise ProlificError(_failure(response), status=response.status_code)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise ProlificError(f"Prolific answered {response.status_code} with something that is not JSON.") from None

    def submissions(self, study_id: str) -> Iterator[Submission]:
        """Every submission of the Prolific study, page by page (at most ``MAX_PAGES``)."""
        path: str | None = f"/api/v1/studies/{study_id}/submissions/"
        for _ in range(MAX_PAGES):
            if not path:
                return
            page = self._call("GET", path)
            for row in page.get("results", []):
                yield Submission(str(row.get("id", "")), str(row.get("participant_id", "")), str(row.get("status", "")))
            path = ((page.get("_links") or {}).get("next") or {}).get("href")

    def approve(self, submission_id: str) -> None:
        self._call("POST", f"/api/v1/submissions/{submission_id}/transition/", {"action": "APPROVE"})

    def reject(self, submission_id: str, *, message: str, category: str) -> None:
        body = {"action": "REJECT", "message": message, "rejection_category": category}
        self._call("POST", f"/api/v1/submissions/{submission_id}/transition/", body)

    def bulk_approve(self, study_id: str, participant_ids: Iterable[str]) -> None:
        body = {"study_id": study_id, "participant_ids": list(participant_ids)}
        self._call("POST", "/api/v1/submissions/bulk-approve/", body)

    def bonuses_set_up(self, study_id: str, amounts: dict[str, Decimal]) -> str:
        """Set bonuses up (not paid yet); returns the bulk payment's id."""
        csv = "".join(f"{pid},{amount:.2f}\n" for pid, amount in amounts.items())
        answer = self._call("POST", "/api/v1/submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv})
        payment_id = str(answer.get("id") or "")
        if not payment_id:
            raise ProlificError("Prolific set the bonuses up but gave no payment id.")
        return payment_id

    def bonuses_pay(self, payment_id: str) -> None:
        self._call("POST", f"/api/v1/bulk-bonus-payments/{payment_id}/pay/")


def _failure(response: httpx2.Response) -> str:
    """Prolific's reason for refusing a call, shortened; the token is never in it."""
    reason = ""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            detail = error.get("detail", error.get("title", ""))
            reason = detail if isinstance(detail, str) else "; ".join(f"{k}: {v}" for k, v in dict(detail).items())
        else:
            reason = str(error)
    status = response.status_code
    if status == 401:
        return "Prolific refused the token (401): replace it with a valid one."
    if status == 404:
        return f"Prolific does not know this study or submission (404). {reason}".strip()
    return f"Prolific refused the call ({status}). {reason}"[:500].strip()
