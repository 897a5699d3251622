"""Tiny typed readers for settings that come from the environment.

Secrets may also come from a file named by ``NAME_FILE`` (Docker/K8s secrets).
"""

import os
import warnings


def env_str(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        with open(file_path, encoding="utf-8") as fh:
            return fh.read().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int, *, formerly: tuple[str, ...] = ()) -> int:
    """``name`` as an int; when unset, the first of its ``formerly`` names that is set (with a warning)."""
    value = os.environ.get(name)
    if value in (None, ""):
        for old in formerly:
            value = os.environ.get(old)
            if value not in (None, ""):
                warnings.warn(f"{old} is deprecated; set {name} instead", FutureWarning, stacklevel=2)
                break
    return int(value) if value not in (None, "") else default


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in env_str(name, default).split(",") if part.strip()]
