"""Export formats: one registry (ratings/exports/formats/), so a new format is one module.

A throwaway format registered here is offered by the page and the API, written
within the request and by the worker, downloaded from both, and gone again once
unregistered; and no module outside the registry names a format.
"""

import ast
import io
import json
import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Judgment
from ratings.exports.formats import (
    ExportFormat,
    export_formats,
    get_format,
    register_format,
    unregister_format,
)
from ratings.exports.services import export_create, write_export
from ratings.tasks import export_study_task
from tests.conftest import build_study
from tests.ratings.export_helpers import rate_as_crowd

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.ratings.export_urls")]

ROOT = Path(__file__).resolve().parents[2]


def write_tab_separated(study, out, *, rater_subset=(), progress=None) -> int:
    """The throwaway format: one "item<TAB>value" line per judgment."""
    judgments = Judgment.objects.filter(study=study).order_by("item__position", "pk")
    if rater_subset:
        judgments = judgments.filter(rater_id__in=rater_subset)
    n = 0
    for item, value in judgments.values_list("item__external_id", "value"):
        out.write(f"{item}\t{json.dumps(value, sort_keys=True)}\n")
        n += 1
    return n


TAB_SEPARATED = ExportFormat(
    name="tsv_test",
    label="Tab-separated lines (test format)",
    purpose="One judgment per line, for this test only.",
    extension="test.tsv",
    content_type="text/tab-separated-values; charset=utf-8",
    write=write_tab_separated,
    binary=False,
    newline="\n",
    holds_rater_ids=False,
)
EXPECTED_LINES = ['item-0\t{"rating": 3}', 'item-0\t{"rating": 2}', 'item-1\t{"rating": 1}', 'item-1\t{"rating": 1}']


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def tab_separated():
    register_format(TAB_SEPARATED)
    yield TAB_SEPARATED
    unregister_format(TAB_SEPARATED.name)


@pytest.fixture
def study(researcher):
    study = build_study(researcher, n_items=2, quota_per_item=2)
    rate_as_crowd(
        study,
        {
            "p1": {"item-0": {"rating": 3}, "item-1": {"rating": 1}},
            "p2": {"item-0": {"rating": 2}, "item-1": {"rating": 1}},
        },
    )
    return study


def owner_client(client):
    assert client.login(username="rita", password="rita-password-123")
    return client


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def offered_on_page(client, study) -> dict[str, str]:
    page = client.get(reverse("exports:page", args=[study.slug])).content.decode()
    select = re.search(r'<select name="format"[^>]*>(.*?)</select>', page, re.S).group(1)
    return dict(re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', select))


def lines_of(response) -> list[str]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return sorted(body.decode("utf-8").splitlines())


class TestANewFormatIsOneModule:
    def test_the_page_offers_it_with_its_label_and_purpose(self, client, study, tab_separated):
        client = owner_client(client)
        assert offered_on_page(client, study)["tsv_test"] == "Tab-separated lines (test format)"
        page = client.get(reverse("exports:page", args=[study.slug])).content.decode()
        assert "One judgment per line, for this test only." in page

    def test_a_small_study_downloads_it_from_the_page_at_once(self, client, study, tab_separated):
        client = owner_client(client)
        response = client.post(reverse("exports:request", args=[study.slug]), {"format": "tsv_test"})
        assert response.status_code == 200
        assert response["Content-Type"] == "text/tab-separated-values; charset=utf-8"
        assert re.search(r'filename="ordinal-study-\d{8}-\d{6}\.test\.tsv"', response["Content-Disposition"])
        assert lines_of(response) == sorted(EXPECTED_LINES)

    def test_a_large_study_gets_it_written_by_the_worker_and_downloaded_from_the_page(
        self, client, study, tab_separated, settings, django_capture_on_commit_callbacks
    ):
        settings.FUNNYBONE_EXPORT_INLINE_MAX = 1
        client = owner_client(client)
        with django_capture_on_commit_callbacks(execute=False):
            queued = client.post(reverse("exports:request", args=[study.slug]), {"format": "tsv_test"})
        assert queued.status_code == 302
        export = study.exports.get()
        export_study_task.apply(args=[export.pk])
        status = client.get(reverse("exports:status", args=[export.pk])).content.decode()
        assert "Tab-separated lines (test format)" in status
        download = client.get(reverse("exports:download", args=[export.pk]))
        assert download["Content-Type"] == "text/tab-separated-values; charset=utf-8"
        assert lines_of(download) == sorted(EXPECTED_LINES)

    def test_the_api_accepts_it_and_hands_out_its_file(self, researcher, study, tab_separated):
        client = token_client(researcher)
        queued = client.post(f"/api/v1/studies/{study.pk}/exports/", {"format": "tsv_test"}, format="json")
        assert queued.status_code == 202
        assert queued.json()["format"] == "tsv_test"
        export_study_task.apply(args=[queued.json()["id"]])
        status = client.get(queued.json()["status_url"]).json()
        assert status["status"] == "done"
        download = client.get(status["download_url"])
        assert download.status_code == 200
        assert download["Content-Disposition"].endswith('.test.tsv"')
        assert lines_of(download) == sorted(EXPECTED_LINES)

    def test_once_unregistered_neither_the_page_nor_the_api_offers_it(self, client, researcher, study):
        register_format(TAB_SEPARATED)
        written = export_create(study=study, user=researcher, fmt="tsv_test")
        export_study_task.apply(args=[written.pk])
        unregister_format(TAB_SEPARATED.name)
        # A file written before the format was withdrawn still downloads, as plain bytes.
        download = token_client(researcher).get(f"/api/v1/exports/{written.pk}/download/")
        assert download["Content-Type"] == "application/octet-stream"
        assert lines_of(download) == sorted(EXPECTED_LINES)
        assert "tsv_test" not in offered_on_page(owner_client(client), study)
        refused = token_client(researcher).post(
            f"/api/v1/studies/{study.pk}/exports/", {"format": "tsv_test"}, format="json"
        )
        assert refused.status_code == 400
        assert "format" in refused.json()
        assert list(study.exports.all()) == [written]


class TestTheRegistry:
    def test_the_page_lists_the_formats_in_their_declared_order(self, client, study):
        assert list(offered_on_page(owner_client(client), study)) == [f.name for f in export_formats()]
        assert [f.name for f in export_formats()][0] == "xlsx"

    def test_the_page_says_which_files_hold_the_raters_own_ids(self, client, study, tab_separated):
        page = owner_client(client).get(reverse("exports:page", args=[study.slug])).content.decode()
        described = dict(re.findall(r"<dt>([^<]+)</dt>\s*<dd>(.*?)</dd>", page, re.S))
        assert set(described) == {f.label for f in export_formats()}
        for export_format in export_formats():
            warns = "keep the file private" in described[export_format.label]
            assert warns == export_format.holds_rater_ids, export_format.name

    def test_an_unknown_format_is_refused_with_the_known_ones_named(self, study, tmp_path):
        with pytest.raises(ValidationError, match="Unknown export format 'docx'; known formats: xlsx, csv"):
            write_export(study, "docx", tmp_path / "study.docx")

    def test_a_name_longer_than_the_stored_column_is_refused_at_registration(self):
        with pytest.raises(ValueError, match="1 to 10 characters"):
            register_format(ExportFormat(**{**TAB_SEPARATED.__dict__, "name": "tab_separated"}))
        with pytest.raises(ValidationError):
            get_format("tab_separated")

    def test_a_second_format_under_a_taken_name_is_refused(self, tab_separated):
        with pytest.raises(ValueError, match="registered already"):
            register_format(ExportFormat(**{**TAB_SEPARATED.__dict__, "label": "Another"}))

    def test_a_text_format_without_a_stream_is_written_to_a_binary_stream_and_left_open(self, study, tab_separated):
        buffer = io.BytesIO()
        assert write_export(study, "tsv_test", buffer) == 4
        assert not buffer.closed
        assert sorted(buffer.getvalue().decode().splitlines()) == sorted(EXPECTED_LINES)


# -- No format is named outside the registry --------------------------------------------------

#: Where a format could be named: the apps that show, request, queue or write exports, and the templates.
SCANNED_APPS = ("ratings", "judging", "funnybone")
REGISTRY = ROOT / "ratings" / "exports" / "formats"


def format_literals_in_python(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def format_literals_in_template(path: Path, names: set[str]) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for name in names:
            if re.search(rf"""["']{re.escape(name)}["']""", line):
                found.append(f"{path.relative_to(ROOT)}:{number} {name!r}")
    return found


def format_literals(names: set[str]) -> list[str]:
    found = []
    for app in SCANNED_APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if REGISTRY in path.parents or "migrations" in path.parts:
                continue
            found += format_literals_in_python(path, names)
    for path in sorted((ROOT / "templates").rglob("*.html")):
        found += format_literals_in_template(path, names)
    return found


def test_no_view_template_serializer_or_task_names_a_format():
    names = {f.name for f in export_formats()}
    assert format_literals(names) == []


def test_the_scan_catches_a_format_compared_by_name(tmp_path, monkeypatch):
    module = tmp_path / "views.py"
    module.write_text('def answer(fmt):\n    return fmt == "parquet"\n')
    template = tmp_path / "page.html"
    template.write_text("{% if export.format == 'parquet' %}binary{% endif %}\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert format_literals_in_python(module, {"parquet"}) == ["views.py:2 'parquet'"]
    assert format_literals_in_template(template, {"parquet"}) == ["page.html:1 'parquet'"]
