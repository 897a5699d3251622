"""docs/production.md's layout booted on this machine, and a crowdworker walked through a study.

nginx terminates HTTPS and appends X-Forwarded-For; gunicorn runs with
FUNNYBONE_PRODUCTION and the settings the guide lists (``check --deploy`` passes
first); a Celery worker, PostgreSQL and Redis complete it. The worker's browser is
an HTTP client with a cookie jar that sends what a browser sends on a form post
(Origin, the CSRF field), entering by the Prolific link.
"""

import hashlib
import re
import ssl

import httpx2 as httpx
import pytest
import redis
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from annotation.media.checks import check_media
from annotation.media.store import stored_name_for
from annotation.models import Judgment, MediaAttachment, MediaFile, Study
from tests import hostile_files
from tests.conftest import build_study, require_postgres
from tests.integration.conftest import broker_url

from .conftest import running_site

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ASSIGNMENT = re.compile(r'name="assignment" value="(\d+)"')
RATING = re.compile(r'name="rating" value="(-?\d+)"')
CODE = re.compile(r'<output id="completion-code">([^<]+)</output>')
STYLESHEET = re.compile(r'<link rel="stylesheet" href="(/static/[^"]+)"')


class CrowdBrowser:
    """One participant's browser: cookies, redirects followed, the CSRF field posted back."""

    def __init__(self, site_url: str, trust: ssl.SSLContext) -> None:
        self.site = site_url
        self.http = httpx.Client(base_url=site_url, verify=trust, follow_redirects=True, timeout=60)
        self.page = ""

    def get(self, path: str, **params) -> httpx.Response:
        response = self.http.get(path, params=params)
        self.page = response.text
        return response

    def post(self, path: str, form: dict[str, str]) -> httpx.Response:
        token = CSRF.search(self.page)
        assert token, f"no CSRF field on the page before POST {path}"
        response = self.http.post(
            path,
            data={**form, "csrfmiddlewaretoken": token.group(1)},
            headers={"Origin": self.site, "Referer": f"{self.site}{path}"},
        )
        self.page = response.text
        return response


def forget_entry_counts(url: str) -> None:
    """The entry budgets of earlier runs (counted per minute in Redis) must not refuse this one."""
    client = redis.Redis.from_url(url)
    for key in client.scan_iter("*funnybone:rate:*"):
        client.delete(key)


def attach_picture(study: Study, media_root) -> MediaFile:
    """One checked picture on every item, written where the site's storage keeps it."""
    checked = check_media(hostile_files.png(), "cartoon.png")
    sha = hashlib.sha256(checked.data).hexdigest()
    name = stored_name_for(checked, sha)
    (media_root / name).parent.mkdir(parents=True, exist_ok=True)
    (media_root / name).write_bytes(checked.data)
    picture = MediaFile.objects.create(
        study=study,
        sha256=sha,
        content_type=checked.content_type,
        kind=checked.kind,
        size_bytes=len(checked.data),
        width=checked.width,
        height=checked.height,
        original_name="gpt5_caption.png",
        file=name,
    )
    MediaAttachment.objects.bulk_create(
        MediaAttachment(media=picture, item=item, alt_text="A cartoon") for item in study.items.all()
    )
    return picture


def test_a_crowd_worker_completes_a_study_through_the_production_layout(
    transactional_db, tmp_path, tmp_path_factory, monkeypatch
):
    require_postgres()
    researcher = get_user_model().objects.create_user("prod-rita", password="prod-rita-password-1")
    study = build_study(researcher, task_type="ordinal", n_items=3, quota_per_item=1)
    token = Token.objects.create(user=researcher)
    forget_entry_counts(broker_url())

    # A small entry budget per client address, to see that the address is the one nginx saw.
    budget = {"FUNNYBONE_ENTRY_RATE_PER_MINUTE": "4"}
    with running_site(tmp_path, tmp_path_factory, production=True, extra_env=budget) as site:
        picture = attach_picture(study, site.data_dir / "media")
        # The proxy's throw-away certificate is the one authority trusted, as a browser would trust a real one.
        trust = ssl.create_default_context(cafile=str(tmp_path / "nginx" / "cert.pem"))
        worker = CrowdBrowser(site.url, trust)
        base = f"/s/{study.entry_token}/"

        # Entry by the Prolific link, consent, instructions.
        entry = worker.get(base, PROLIFIC_PID="prod-worker-1", STUDY_ID="s1", SESSION_ID="sess-1")
        assert entry.status_code == 200 and str(entry.url).endswith("/consent/"), site.logs()
        assert entry.url.scheme == "https"
        assert "Secure" in entry.history[0].headers.get("set-cookie", "") + entry.headers.get("set-cookie", "")
        instructions = worker.post(f"{base}consent/", {"decision": "agree"})
        assert str(instructions.url).endswith("/instructions/"), instructions.text[:500]
        item = worker.post(f"{base}instructions/", {})
        assert str(item.url).endswith("/item/")

        # Every item answered with plain form posts, until the study sends the worker to the end.
        answered = 0
        while str(worker.http.get(f"{base}item/").url).endswith("/item/") and answered < 10:
            worker.get(f"{base}item/")
            assignment = ASSIGNMENT.search(worker.page)
            points = RATING.findall(worker.page)
            assert assignment and points, worker.page[:1000]
            worker.post(f"{base}item/", {"assignment": assignment.group(1), "rating": points[answered % len(points)]})
            answered += 1
        done = worker.get(f"{base}done/")
        assert done.status_code == 200
        code = CODE.search(done.text)
        assert code and code.group(1).strip() == Study.objects.get(pk=study.pk).completion_code

        # The items' picture comes from nginx (X-Accel-Redirect), blind, to the worker who held them only.
        address = f"/m/{picture.public_id}"
        served = worker.http.get(address)
        assert served.status_code == 200, site.logs()
        assert served.content == (site.data_dir / "media" / picture.file.name).read_bytes()
        assert served.headers["content-type"] == "image/png"
        assert served.headers["x-content-type-options"] == "nosniff"
        assert served.headers["content-disposition"] == 'inline; filename="media.png"'
        assert "x-accel-redirect" not in served.headers
        assert httpx.get(f"{site.url}{address}", verify=trust).status_code == 404
        assert httpx.get(f"{site.url}/_protected_media/{picture.file.name}", verify=trust).status_code == 404

        # The answers are in the database, one judgment per item.
        assert answered == 3
        assert Judgment.objects.filter(study=study).count() == 3

        # The security settings reached the answers through the proxy.
        assert done.headers["strict-transport-security"].startswith("max-age=")
        assert "default-src 'self'" in done.headers["content-security-policy"]

        # Static files are the collected, hashed ones.
        stylesheet = STYLESHEET.search(done.text)
        assert stylesheet and re.search(r"\.[0-9a-f]{12}\.css$", stylesheet.group(1)), done.text[:800]
        assert worker.http.get(stylesheet.group(1)).status_code == 200

        # The researcher's API answers a token through the proxy.
        api = httpx.get(
            f"{site.url}/api/v1/studies/{study.pk}/progress/",
            headers={"Authorization": f"Token {token.key}"},
            verify=trust,
        )
        assert api.status_code == 200 and api.json()["judgments_done"] == 3

        # FUNNYBONE_TRUSTED_PROXY_COUNT=1: the address counted is the one nginx appended, so a client
        # that writes its own X-Forwarded-For still spends the one budget (4 a minute; one entry so far).
        statuses = []
        for n in range(4):
            spoofer = httpx.get(
                f"{site.url}{base}",
                params={"PROLIFIC_PID": f"spoof-{n}"},
                headers={"X-Forwarded-For": f"198.51.100.{n}"},
                verify=trust,
            )
            statuses.append(spoofer.status_code)
        assert statuses == [302, 302, 302, 429]

        # gunicorn, asked directly over plain HTTP, sends the browser to HTTPS.
        direct = httpx.get(f"{site.server.url}/s/{study.entry_token}/", headers={"Host": "localhost"})
        assert direct.status_code == 301 and direct.headers["location"].startswith("https://")
