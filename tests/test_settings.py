"""Security defaults: what a fresh deployment gets without anyone remembering to ask."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


class TestSecurityDefaults:
    def test_debug_is_off_unless_asked(self):
        assert settings.DEBUG is False

    def test_csrf_and_clickjacking_protection_are_on(self):
        assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
        assert "django.middleware.clickjacking.XFrameOptionsMiddleware" in settings.MIDDLEWARE
        assert settings.X_FRAME_OPTIONS == "DENY"

    def test_hosts_are_not_a_wildcard(self):
        assert "*" not in settings.ALLOWED_HOSTS

    PRODUCTION = {
        "SECRET_KEY": "a-long-random-production-secret-" + "x7Q9" * 12,
        "FUNNYBONE_PRODUCTION": "1",
        "FUNNYBONE_HTTPS": "1",
        "ALLOWED_HOSTS": "funny.example.org",
        # The check only reads the setting; no Redis server is contacted.
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }

    def test_check_deploy_is_clean_under_production_settings(self, tmp_path):
        result = _manage(
            "check",
            "--deploy",
            "--fail-level",
            "WARNING",
            env={**self.PRODUCTION, "FUNNYBONE_DATA_DIR": str(tmp_path)},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "no issues" in result.stdout

    def test_check_deploy_warns_when_rate_limits_would_count_per_process(self, tmp_path):
        result = _manage(
            "check",
            "--deploy",
            "--fail-level",
            "WARNING",
            env={**self.PRODUCTION, "REDIS_URL": "", "FUNNYBONE_DATA_DIR": str(tmp_path)},
        )
        assert result.returncode != 0
        assert "funnybone.W001" in result.stderr + result.stdout
        assert "Set REDIS_URL" in result.stderr + result.stdout

    def test_pages_carry_a_content_security_policy(self):
        assert "django.middleware.csp.ContentSecurityPolicyMiddleware" in settings.MIDDLEWARE
        assert settings.SECURE_CSP["script-src"] == ["'self'"]
        assert settings.SECURE_CSP["frame-ancestors"] == ["'none'"]

    def test_production_refuses_to_start_without_a_secret_key(self, tmp_path):
        result = _manage(
            "check", env={"FUNNYBONE_PRODUCTION": "1", "SECRET_KEY": "", "FUNNYBONE_DATA_DIR": str(tmp_path)}
        )
        assert result.returncode != 0
        assert "SECRET_KEY must be set" in result.stderr
