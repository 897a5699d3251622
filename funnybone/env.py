"""Typed readers for settings that come from the environment: the one place the settings read it.

Values are parsed by ``environs`` (a maintained library on marshmallow): a boolean must be
one of the usual spellings (1/0, true/false, yes/no, on/off, any case) and an integer a whole
number; anything else stops the start with an error that names the variable and its value
(``FUNNYBONE_HTTPS='yes # on'`` is not silently false). A variable set to nothing
(``NAME=``) counts as unset. Secrets may also come from a file named by ``NAME_FILE``
(systemd credentials, Docker/K8s secrets); a ``NAME_FILE`` that cannot be read names itself.
"""

import os
import warnings

from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvError

_env = Env(eager=True, expand_vars=False)


def _set(name: str) -> bool:
    return os.environ.get(name, "").strip() != ""


def _refused(name: str, kind: str, exc: EnvError) -> ImproperlyConfigured:
    value = os.environ.get(name, "")
    return ImproperlyConfigured(f"{name}={value!r} is not {kind} ({exc}); fix it in the environment or its file.")


def env_str(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            with open(file_path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc.strerror}.") from None
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    if not _set(name):
        return default
    try:
        return bool(_env.bool(name))
    except EnvError as exc:
        raise _refused(name, "a boolean (1/0, true/false, yes/no, on/off)", exc) from None


def env_int(name: str, default: int, *, formerly: tuple[str, ...] = ()) -> int:
    """``name`` as an int; when unset, the first of its ``formerly`` names that is set (with a warning)."""
    read = name
    if not _set(name):
        read = next((old for old in formerly if _set(old)), "")
        if not read:
            return default
        warnings.warn(f"{read} is deprecated; set {name} instead", FutureWarning, stacklevel=2)
    try:
        return int(_env.int(read))
    except EnvError as exc:
        raise _refused(read, "a whole number", exc) from None


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in env_str(name, default).split(",") if part.strip()]
