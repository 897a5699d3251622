"""API keys: typed in (stored encrypted) or named by an environment variable; never shown.

Which variables a key may be read from
    A researcher (pages, API, study files) may name only a variable the operator
    declared for judge keys: one listed in ``FUNNYBONE_JUDGE_KEY_ENVS``, or one
    whose name starts with ``FUNNYBONE_JUDGE_KEY_``. Anything else (``SECRET_KEY``,
    ``DATABASE_URL``...) is refused when saved and again before every run, so a
    judge saved before the rule never sends it either.

    An operator (``manage.py judge|generate --api-key-env NAME``) may name any
    variable. The command seals that choice as an *operator grant*: a Fernet
    token, under a key of its own, of the variable's name and the judge's base
    URL, kept in ``api_key_encrypted`` (unused otherwise while a variable is
    named). Nobody on the web can forge one (the server never encrypts a typed
    value under the grant key), and it holds only for that variable and that
    base URL: pointing the judge elsewhere from the web voids it, so an
    operator's key never follows a researcher's new URL.

Encryption and rotation
    Stored keys (and grants) are encrypted with Fernet (AES-128-CBC +
    HMAC-SHA256) under keys derived with HKDF-SHA256 from the current secret,
    ``FUNNYBONE_KEY_SECRET`` or else ``SECRET_KEY``. Decryption also tries the old
    secrets (``FUNNYBONE_KEY_SECRET_OLD``, and Django's ``SECRET_KEY_FALLBACKS``),
    so a rotation keeps every stored key readable; ``manage.py rotate_judge_keys`` then
    re-encrypts them under the current secret and the old ones can be dropped.
"""

import base64
import json
import os
import re

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ValidationError

# Sent when a judge has no key: local servers (llama.cpp, vLLM) ignore it,
# and the SDK refuses to send a request with none at all.
NO_KEY = "no-key"
REDACTED = "[redacted]"
# Any variable named like this holds a judge key by the operator's own naming.
DECLARED_PREFIX = "FUNNYBONE_JUDGE_KEY_"
GRANT_PREFIX = "operator-grant:"
_KEY_INFO = b"api-key-encryption"
_GRANT_INFO = b"operator-key-env-grant"


class ApiKeyUnavailable(Exception):
    """The judge's key cannot be read or may not be used; the message never contains a key."""


# -- encryption -------------------------------------------------------------------


def _secrets() -> list[str]:
    """The current secret first, then the old ones that may still have encrypted something."""
    current = getattr(settings, "FUNNYBONE_KEY_SECRET", "") or settings.SECRET_KEY
    old = [*getattr(settings, "FUNNYBONE_KEY_SECRET_OLD", []), *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    ordered = [current]
    ordered += [s for s in old if s and s not in ordered]
    return ordered


def _fernet(secret: str, info: bytes) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"funnybone-judging", info=info).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _multi(info: bytes) -> MultiFernet:
    """Encrypts with the current secret's key; decrypts with any of them."""
    return MultiFernet([_fernet(secret, info) for secret in _secrets()])


def encrypt_api_key(plain: str) -> str:
    return _multi(_KEY_INFO).encrypt(plain.encode()).decode()


def decrypt_api_key(token: str) -> str:
    try:
        return _multi(_KEY_INFO).decrypt(token.encode()).decode()
    except InvalidToken:
        raise ApiKeyUnavailable(
            "The stored API key cannot be decrypted (the secret it was encrypted with changed and is not among "
            "FUNNYBONE_KEY_SECRET_OLD); enter it again."
        ) from None


def rotate_stored_key(stored: str) -> str:
    """``stored`` (a key or a grant) encrypted again under the current secret; "" stays "".

    Raises ApiKeyUnavailable when no known secret opens it."""
    if not stored:
        return ""
    grant = stored.startswith(GRANT_PREFIX)
    token = stored.removeprefix(GRANT_PREFIX)
    try:
        rotated = _multi(_GRANT_INFO if grant else _KEY_INFO).rotate(token.encode()).decode()
    except InvalidToken:
        raise ApiKeyUnavailable("no known secret decrypts it") from None
    return GRANT_PREFIX + rotated if grant else rotated


# -- which variables may be named -------------------------------------------------


def key_env_declared(name: str) -> bool:
    """Whether the operator declared ``name`` for judge keys (by the list or by the prefix)."""
    if name in settings.FUNNYBONE_JUDGE_KEY_ENVS:
        return True
    return name.startswith(DECLARED_PREFIX) and name != "FUNNYBONE_JUDGE_KEY_ENVS" and len(name) > len(DECLARED_PREFIX)


def is_grant(stored: str) -> bool:
    return stored.startswith(GRANT_PREFIX)


def grant_key_env(config) -> None:
    """Record that an operator chose ``config.api_key_env`` for ``config.base_url`` (see the module's doc)."""
    payload = json.dumps({"env": config.api_key_env, "url": config.base_url}).encode()
    token = _multi(_GRANT_INFO).encrypt(payload).decode()
    config.api_key_encrypted = GRANT_PREFIX + token


def _grant_of(config) -> dict[str, str] | None:
    """What the operator's grant on ``config`` allows ({"env", "url"}), or None when there is none to trust."""
    stored = config.api_key_encrypted or ""
    if not is_grant(stored):
        return None
    try:
        return json.loads(_multi(_GRANT_INFO).decrypt(stored.removeprefix(GRANT_PREFIX).encode()))
    except (InvalidToken, ValueError):
        return None


def _granted(config) -> bool:
    return _grant_of(config) == {"env": config.api_key_env, "url": config.base_url}


def _declared_hint() -> str:
    listed = ", ".join(settings.FUNNYBONE_JUDGE_KEY_ENVS)
    return f"FUNNYBONE_JUDGE_KEY_ENVS ({listed})" if listed else "FUNNYBONE_JUDGE_KEY_ENVS (empty)"


def key_env_help() -> str:
    """Which variables a researcher may name, for a form's help text."""
    listed = ", ".join(settings.FUNNYBONE_JUDGE_KEY_ENVS)
    return (
        "Environment variable of the workers holding the API key: one the operator declared for judge keys "
        f"(named {DECLARED_PREFIX}…{', or one of: ' + listed if listed else ''})."
    )


def key_env_problem(config) -> str:
    """Why ``config`` may not read its key from ``api_key_env``; "" when it may (or names none)."""
    name = config.api_key_env
    if not name or key_env_declared(name) or _granted(config):
        return ""
    if (_grant_of(config) or {}).get("env") == name:
        return (
            f"The operator allowed the variable {name} for this endpoint's earlier base URL only. With another "
            "base URL, type the key itself or name a variable declared for judge keys."
        )
    return (
        f"{name} is not a variable the operator declared for judge keys. Type the key itself, or name a variable "
        f"listed in {_declared_hint()} or starting with {DECLARED_PREFIX}."
    )


def settle_key_source(config, *, by_operator: bool = False) -> None:
    """After a change to ``config``: seal an operator's variable with a grant, or check a researcher's.

    Raises ValidationError on ``api_key_env`` when a researcher named a variable they may not use."""
    if config.api_key_env and by_operator:
        grant_key_env(config)
        return
    if is_grant(config.api_key_encrypted or "") and not _granted(config):
        # The variable or the base URL changed since the operator set them: the grant no longer holds.
        problem = key_env_problem(config)
        config.api_key_encrypted = ""
    else:
        problem = key_env_problem(config)
    if problem:
        raise ValidationError({"api_key_env": problem})


# -- using a key --------------------------------------------------------------------


def resolve_api_key(config) -> str:
    """The key to send: from the named variable (when it may be used), else the stored key, else NO_KEY."""
    if config.api_key_env:
        problem = key_env_problem(config)
        if problem:
            raise ApiKeyUnavailable(f"The API key was not sent: {problem}")
        value = os.environ.get(config.api_key_env, "")
        if not value:
            raise ApiKeyUnavailable(f"The environment variable {config.api_key_env} is not set or empty.")
        return value
    if config.api_key_encrypted and not is_grant(config.api_key_encrypted):
        return decrypt_api_key(config.api_key_encrypted)
    return NO_KEY


def set_api_key(config, plain: str | None) -> None:
    """Store ``plain`` encrypted (clearing the env name); "" removes a stored key; None keeps it."""
    if plain is None:
        return
    plain = plain.strip()
    if plain:
        config.api_key_encrypted = encrypt_api_key(plain)
        config.api_key_env = ""
    elif not is_grant(config.api_key_encrypted or ""):
        config.api_key_encrypted = ""


def redact(text: str, *secrets: str) -> str:
    """``text`` with every occurrence of each secret (longer than 3 characters) replaced."""
    for secret in secrets:
        if secret and secret != NO_KEY and len(secret) > 3:
            text = text.replace(secret, REDACTED)
    return text


# What usually follows a credential in an error page, a header dump or a config echo.
_CREDENTIAL = re.compile(
    r"(?i)(bearer\s+|basic\s+|(?:api[_-]?key|token|secret|password|passwd|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"',;&}]+"
)
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|ghp|gho|xox[bap])[-_][A-Za-z0-9_-]{8,}")


def scrub(text: str, *secrets: str) -> str:
    """``redact`` plus anything shaped like a credential (Bearer tokens, ``api_key=...``, ``sk-...``)."""
    text = redact(text, *secrets, settings.SECRET_KEY, getattr(settings, "FUNNYBONE_KEY_SECRET", ""))
    text = _CREDENTIAL.sub(lambda m: m.group(1) + REDACTED, text)
    return _KEY_LIKE.sub(REDACTED, text)


def stored_keys_rotate() -> tuple[dict[str, int], list[str]]:
    """Encrypt every stored key and grant again under the current secret.

    Returns how many were rotated per kind ("judge", "generator") and the configs no known secret opens."""
    from .models import GeneratorConfig, JudgeConfig

    counts, unreadable = {}, []
    for kind, model in (("judge", JudgeConfig), ("generator", GeneratorConfig)):
        counts[kind] = 0
        for pk, name, stored in model.objects.exclude(api_key_encrypted="").values_list(
            "pk", "name", "api_key_encrypted"
        ):
            try:
                rotated = rotate_stored_key(stored)
            except ApiKeyUnavailable:
                unreadable.append(f"{kind} {name!r} (id {pk})")
                continue
            # Conditional: a key changed meanwhile is left as it was written.
            counts[kind] += model.objects.filter(pk=pk, api_key_encrypted=stored).update(api_key_encrypted=rotated)
    return counts, unreadable
