"""API keys: stored encrypted or named by an environment variable, never shown.

Stored keys are encrypted with Fernet (AES-128-CBC + HMAC-SHA256). The Fernet
key is derived with HKDF-SHA256 from ``settings.FUNNYBONE_KEY_SECRET`` when
set, else from ``settings.SECRET_KEY``: rotating that secret makes stored keys
unreadable (judges then fail with a clear error and the key must be entered
again), so deployments that rotate SECRET_KEY should set FUNNYBONE_KEY_SECRET.
"""

import base64
import os

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# Sent when a judge has no key: local servers (llama.cpp, vLLM) ignore it,
# and the SDK refuses to send a request with none at all.
NO_KEY = "no-key"
REDACTED = "[redacted]"


class ApiKeyUnavailable(Exception):
    """The judge's key cannot be read; the message never contains a key."""


def _fernet() -> Fernet:
    secret = getattr(settings, "FUNNYBONE_KEY_SECRET", "") or settings.SECRET_KEY
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"funnybone-judging", info=b"api-key-encryption").derive(
        secret.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt_api_key(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt_api_key(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ApiKeyUnavailable(
            "The stored API key cannot be decrypted (the secret it was encrypted with changed); enter it again."
        ) from None


def resolve_api_key(config) -> str:
    """The key to send: the decrypted stored key, else the named environment variable, else NO_KEY."""
    if config.api_key_encrypted:
        return decrypt_api_key(config.api_key_encrypted)
    if config.api_key_env:
        value = os.environ.get(config.api_key_env, "")
        if not value:
            raise ApiKeyUnavailable(f"The environment variable {config.api_key_env} is not set or empty.")
        return value
    return NO_KEY


def set_api_key(config, plain: str | None) -> None:
    """Store ``plain`` encrypted (clearing the env name); "" removes a stored key; None keeps it."""
    if plain is None:
        return
    plain = plain.strip()
    config.api_key_encrypted = encrypt_api_key(plain) if plain else ""
    if plain:
        config.api_key_env = ""


def redact(text: str, *secrets: str) -> str:
    """``text`` with every occurrence of each secret (longer than 3 characters) replaced."""
    for secret in secrets:
        if secret and secret != NO_KEY and len(secret) > 3:
            text = text.replace(secret, REDACTED)
    return text
