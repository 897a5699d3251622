"""Playwright fixtures: one real Chromium for the whole session, a fresh context per test.

Debian's Chromium is used (Playwright cannot download its own build here);
FUNNYBONE_CHROMIUM names another binary. Without one the browser tests skip
locally and fail in CI (FUNNYBONE_REQUIRE_SERVICES=1).
"""

import os
from pathlib import Path

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _chromium_path() -> str:
    return os.environ.get("FUNNYBONE_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def chromium():
    executable = _chromium_path()
    if not Path(executable).exists():
        if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
            pytest.fail(f"The browser tests need Chromium at {executable} (make browser installs it).")
        pytest.skip(f"no Chromium at {executable}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def csp_violations() -> list[str]:
    """What the browser refused under the site's Content-Security-Policy, as Chromium reports it on the console."""
    return []


@pytest.fixture
def browser_page(chromium, csp_violations):
    context = chromium.new_context(locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("console", lambda message: _record_csp_violation(message, csp_violations))
    yield page
    context.close()
    # Every page a browser test visits must work under the policy: a refused script or style is a bug.
    assert not csp_violations, f"Content-Security-Policy violations: {csp_violations}"


def _record_csp_violation(message, violations: list[str]) -> None:
    if "Content Security Policy" in message.text:
        violations.append(f"{message.location.get('url', '')}: {message.text}")
