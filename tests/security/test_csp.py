"""The Content-Security-Policy: on every page, only this site's scripts, styles and images."""

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.conftest import build_study
from tests.ratings.alignment_helpers import build_ordinal

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.request['PATH_INFO']}"
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


class TestTheHeader:
    def test_the_annotator_pages_carry_the_policy(self, client, researcher):
        study = build_study(researcher, n_items=2)
        entry = client.get(f"/s/{study.entry_token}/", {"PROLIFIC_PID": "csp-1"})
        assert policy(entry) == EXPECTED
        consent = client.get(f"/s/{study.entry_token}/consent/")
        assert consent.status_code == 200
        assert policy(consent) == EXPECTED

    def test_the_login_and_researcher_pages_carry_the_policy(self, client, researcher):
        assert policy(client.get("/accounts/login/")) == EXPECTED
        client.force_login(researcher)
        assert policy(client.get("/studies/")) == EXPECTED

    def test_the_reports_carry_the_policy(self, client, researcher):
        study, _raters = build_ordinal(researcher, name="CSP report study")
        client.force_login(researcher)
        assert policy(client.get(f"/alignment/{study.slug}/")) == EXPECTED
        assert policy(client.get(f"/analysis/{study.slug}/")) == EXPECTED

    def test_errors_and_the_admin_carry_it_too(self, client):
        assert policy(client.get("/s/no-such-study/", {"PROLIFIC_PID": "x"})) == EXPECTED
        assert policy(client.get("/admin/login/")) == EXPECTED

    def test_nothing_unsafe_is_allowed(self):
        header = Client().get("/accounts/login/").headers["Content-Security-Policy"]
        assert "unsafe" not in header
        assert "*" not in header


# Markup the policy would refuse: inline <script> (without src), <style>, style="", onclick= and friends.
INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"<style\b", re.I), "a <style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "a style attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an event-handler attribute"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
]


def test_no_template_holds_markup_the_policy_refuses():
    found = []
    for path in sorted(ROOT.glob("*/templates/**/*.html")) + sorted((ROOT / "templates").rglob("*.html")):
        if ".venv" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for pattern, what in INLINE:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not found, "move it to static/ (CSS class or script file): " + "; ".join(found)
