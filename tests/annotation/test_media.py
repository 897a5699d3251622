"""Media on items: checked by content, imported from an archive all or nothing, served blind.

The hostile files are built in the test (tests/hostile_files.py). Every one is
refused with a 400 that names the file, and nothing is left in the database
or on disk.
"""

import io
import json
import zipfile

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from PIL import Image

from annotation.media import item_media, media_bytes, media_data_uri, rater_media_url
from annotation.media.checks import MediaProblem, check_media
from annotation.models import Assignment, Item, ItemImport, Judgment, MediaAttachment, MediaFile, Rater
from annotation.services.studies import study_create, study_set_state
from tests import hostile_files as hostile
from tests.annotation.test_annotator_flow import begin, url
from tests.annotation.test_hostile_tables import csrf_upload, page_text, stored_files

pytestmark = pytest.mark.django_db

ITEMS_CSV = (
    "id,prompt,text,media,media.alt,candidate.a,candidate.a.media,candidate.a.media.alt,candidate.b\n"
    "c1,Caption this,,cartoons/gpt5_caption.png,A cat at a desk,Caption A,cartoons/side.gif,A waving cat,Caption B\n"
    "c2,Caption this,,cartoons/gpt5_caption.png,A cat at a desk,Caption C,,,Caption D\n"
)


@pytest.fixture(autouse=True)
def isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()
    yield settings.MEDIA_ROOT
    cache.clear()


@pytest.fixture
def study(researcher):
    return study_create(owner=researcher, name="Caption contest", task_type="pairwise")


@pytest.fixture
def plain_study(researcher):
    return study_create(owner=researcher, name="Hostile media", task_type="ordinal")


def good_archive() -> bytes:
    return hostile.archive(
        {
            "items.csv": ITEMS_CSV.encode(),
            "cartoons/gpt5_caption.png": hostile.jpeg_with_gps(),  # a JPEG under a .png name: typed by content
            "cartoons/side.gif": hostile.animated_gif(),
        }
    )


def upload(csrf_client, researcher, study, name: str, data: bytes):
    return csrf_upload(csrf_client, researcher, reverse("researcher:study_items", args=[study.pk]), name, data)


class TestChecks:
    def test_it_strips_exif_and_gps_and_types_by_content(self):
        checked = check_media(hostile.jpeg_with_gps(), "photo.png")
        assert (checked.content_type, checked.extension, checked.kind) == ("image/jpeg", "jpg", "image")
        with Image.open(io.BytesIO(checked.data)) as image:
            assert not image.getexif()
        assert b"SecretCam" not in checked.data

    def test_an_animation_keeps_its_frames(self):
        checked = check_media(hostile.animated_gif(4), "wave.gif")
        assert checked.kind == "animated"
        with Image.open(io.BytesIO(checked.data)) as image:
            assert image.n_frames == 4

    def test_limits_come_from_the_settings(self, settings):
        settings.FUNNYBONE_MEDIA_MAX_PIXELS = 100
        with pytest.raises(MediaProblem, match=r"small\.png: 40×30 pixels"):
            check_media(hostile.png(), "small.png")


HOSTILE = [
    # (archive name, entries, what the message names)
    ("zip-polyglot.zip", {"x.png": hostile.png_polyglot_zip()}, ["x.png", "second file"]),
    ("html-polyglot.zip", {"x.png": hostile.gif_polyglot_html()}, ["x.png", "second file"]),
    ("svg.zip", {"x.png": hostile.svg_with_script()}, ["x.png", "SVG"]),
    ("bomb.zip", {"x.png": hostile.png_pixel_bomb()}, ["x.png: the image has too many pixels"]),
    ("wrong.zip", {"x.png": b"<p>not a picture</p>"}, ["x.png", "not an image"]),
    ("missing.zip", {}, ["Row 2", "x.png", "is not in missing.zip"]),
]


class TestHostileArchives:
    @pytest.mark.parametrize(("name", "entries", "named"), HOSTILE)
    def test_a_bad_media_file_is_refused_by_name_and_nothing_is_kept(
        self, csrf_client, researcher, plain_study, isolated_media, name, entries, named
    ):
        data = hostile.archive({"items.csv": b"id,text,media\na,hello,x.png\n", **entries})
        response = upload(csrf_client, researcher, plain_study, name, data)
        assert response.status_code == 400
        for words in named:
            assert words in page_text(response)
        assert not Item.objects.exists() and not MediaFile.objects.exists()
        assert stored_files(isolated_media) == []

    @pytest.mark.parametrize(
        ("name", "build", "named"),
        [
            ("many.zip", lambda: hostile.archive_of_many(10_000), ["many.zip: holds 10,001 entries"]),
            ("bomb.zip", hostile.archive_zip_bomb, ["bomb.zip: 'big.png': inflates", "(a zip bomb)"]),
            ("climb.zip", lambda: hostile.archive({"items.csv": b"id\na\n", "../evil.png": b"x"}), ["'../evil.png'"]),
            ("nofile.zip", lambda: hostile.archive({"a.png": hostile.png()}), ["exactly one item file"]),
            ("notzip.zip", lambda: b"PK\x03\x04 not really", ["notzip.zip: not a readable ZIP"]),
        ],
    )
    def test_a_bad_archive_is_refused_before_it_is_stored(
        self, csrf_client, researcher, plain_study, isolated_media, name, build, named
    ):
        response = upload(csrf_client, researcher, plain_study, name, build())
        assert response.status_code == 400
        for words in named:
            assert words in page_text(response)
        assert not ItemImport.objects.exists()
        assert stored_files(isolated_media) == []

    def test_a_plain_item_file_naming_media_says_to_upload_an_archive(self, csrf_client, researcher, plain_study):
        response = upload(csrf_client, researcher, plain_study, "items.csv", b"id,text,media\na,hello,x.png\n")
        assert not Item.objects.exists()
        assert "upload a .zip holding the item file and its media" in page_text(
            csrf_client.get(response["Location"]) if response.status_code == 302 else response
        )


@pytest.fixture
def imported(csrf_client, researcher, study):
    response = upload(csrf_client, researcher, study, "contest.zip", good_archive())
    assert response.status_code == 302, page_text(response)
    study_set_state(study=study, state="open")
    return study


class TestArchiveImport:
    def test_items_carry_their_media_stored_once_by_content(self, imported, isolated_media):
        items = {item.external_id: item.pk for item in imported.items.all()}
        refs = item_media(items.values())
        first = refs[items["c1"]]
        assert [(r.role, r.candidate_key, r.alt, r.kind) for r in first] == [
            ("candidate", "a", "A waving cat", "animated"),
            ("item", None, "A cat at a desk", "image"),
        ]
        # The same picture on two items is one file, stored under its hash with the type its bytes have.
        assert refs[items["c2"]][0].id == first[1].id and MediaFile.objects.count() == 2
        photo = first[1]
        assert photo.content_type == "image/jpeg" and len(stored_files(isolated_media / "media")) == 2
        stored = MediaFile.objects.get(public_id=photo.id)
        assert stored.file.name == f"media/{photo.sha256[:2]}/{photo.sha256}.jpg"
        assert stored.original_name == "cartoons/gpt5_caption.png"
        with media_bytes(photo) as stream, Image.open(stream) as image:
            assert not image.getexif()
        assert media_data_uri(photo).startswith("data:image/jpeg;base64,/9j/")
        # The public id is neither the hash nor the name.
        assert photo.id not in (photo.sha256, "gpt5_caption") and "gpt5" not in rater_media_url(photo)

    def test_replacing_the_items_removes_their_files(
        self, imported, csrf_client, researcher, isolated_media, django_capture_on_commit_callbacks
    ):
        address = reverse("researcher:study_items", args=[imported.pk])
        csrf_client.force_login(researcher)
        csrf_client.get(address)
        form = {"file": SimpleUploadedFile("new.csv", b"id,candidate.a,candidate.b\nn1,A,B\n"), "replace": "on"}
        with django_capture_on_commit_callbacks(execute=True):
            response = csrf_client.post(
                address, {**form, "csrfmiddlewaretoken": csrf_client.cookies["csrftoken"].value}
            )
        assert response.status_code == 302
        assert list(imported.items.values_list("external_id", flat=True)) == ["n1"]
        assert not MediaFile.objects.exists() and stored_files(isolated_media / "media") == []


class TestServing:
    def _ref(self, study):
        item = Assignment.objects.get(study=study).item
        return MediaAttachment.objects.filter(item=item, role="item").select_related("media").get().media

    def test_a_rater_fetches_only_what_they_hold(self, imported, settings, django_assert_max_num_queries):
        rater = Client()
        begin(rater, imported, pid="worker-1")
        assert rater.get(url(imported, "item")).status_code == 200
        media = self._ref(imported)
        address = reverse("annotator:media", args=[media.public_id])
        # The session, the file with its study, the rater's enrollment, whether they hold an item it is on.
        with django_assert_max_num_queries(4):
            response = rater.get(address)
        assert response.status_code == 200
        assert response["Content-Type"] == "image/jpeg"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Content-Disposition"] == 'inline; filename="media.jpg"'
        assert "gpt5" not in str(response.headers) and "private" in response["Cache-Control"]
        assert b"".join(response.streaming_content)[:2] == b"\xff\xd8"
        # Another rater who holds nothing, and nobody at all, find nothing there.
        other = Client()
        begin(other, imported, pid="worker-2")
        assert other.get(address).status_code == 404
        assert Client().get(address).status_code == 404

    def test_the_owner_fetches_and_production_hands_the_bytes_to_nginx(self, imported, researcher, settings):
        settings.FUNNYBONE_MEDIA_X_ACCEL = True
        media = MediaFile.objects.filter(study=imported).first()
        owner = Client()
        owner.force_login(researcher)
        response = owner.get(reverse("annotator:media", args=[media.public_id]))
        assert response.status_code == 200 and response.content == b""
        assert response["X-Accel-Redirect"] == f"/_protected_media/{media.file.name}"
        assert response["Content-Type"] == media.content_type


class TestExportsCarryMedia:
    def test_the_bundle_loads_back_into_a_new_study(self, imported, csrf_client, researcher, tmp_path):
        from ratings.exports.services import write_export

        path = tmp_path / "bundle.zip"
        write_export(imported, "bundle", path)
        names = set(zipfile.ZipFile(path).namelist())
        assert {"items.jsonl", "judgments.jsonl", "study.json"} <= names
        assert not any("gpt5" in name for name in names)
        copy = study_create(owner=researcher, name="Copy", task_type="pairwise")
        response = upload(csrf_client, researcher, copy, "bundle.zip", path.read_bytes())
        assert response.status_code == 302, page_text(response)

        def shown(study):
            items = dict(study.items.values_list("pk", "external_id"))
            return {
                items[item_id]: [(r.role, r.candidate_key, r.alt, r.kind, r.content_type) for r in refs]
                for item_id, refs in item_media(items).items()
            }

        assert shown(copy) == shown(imported) and len(shown(copy)) == 2
        original = {m.original_name for m in MediaFile.objects.filter(study=copy)}
        assert all(name.startswith("media/") for name in original)  # the bundle's paths, never the first names

    def test_study_files_and_the_long_formats_name_each_file(self, imported, tmp_path):
        import pyarrow.parquet as pq

        from annotation.study_files import study_file_data
        from ratings.exports.long_rows import COLUMNS
        from ratings.exports.services import write_export

        entry = next(e for e in study_file_data(imported)["items"] if e["id"] == "c1")
        photo = entry["media"][0]
        assert photo["original_name"] == "cartoons/gpt5_caption.png" and photo["alt"] == "A cat at a desk"
        assert entry["candidates"][0]["media"][0]["alt"] == "A waving cat"
        assert "media" in COLUMNS
        item = imported.items.get(external_id="c1")
        rater = Rater.objects.create(kind=Rater.Kind.LLM, name="judge")
        now = timezone.now()
        assignment = Assignment.objects.create(
            study=imported, item=item, rater=rater, state="done", leased_at=now, lease_expires_at=now
        )
        Judgment.objects.create(assignment=assignment, study=imported, item=item, rater=rater, value={"choice": "a"})
        path = tmp_path / "out.parquet"
        write_export(imported, "parquet", path)
        written = json.loads(pq.read_table(path).column("media")[0].as_py())
        assert [(m["role"], m["candidate_key"], m["original_name"]) for m in written] == [
            ("candidate", "a", "cartoons/side.gif"),
            ("item", None, "cartoons/gpt5_caption.png"),
        ]


class TestMediaByUrl:
    @pytest.fixture
    def picture_server(self):
        """A loopback server on a free port with one picture (and a redirect everywhere else)."""
        import http.server
        import threading

        picture = hostile.png((16, 16))

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                if self.path == "/cartoon.png":
                    self.send_response(200)
                    self.send_header("Content-Type", "image/png")
                    self.send_header("Content-Length", str(len(picture)))
                    self.end_headers()
                    self.wfile.write(picture)
                else:
                    self.send_response(302)
                    self.send_header("Location", "http://10.0.0.1/x.png")
                    self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()
        server.server_close()

    def test_a_plain_item_file_names_pictures_by_url_fetched_once(
        self, csrf_client, researcher, plain_study, picture_server
    ):
        rows = (
            f"id,text,media,media.alt\na,one,{picture_server}/cartoon.png,Cat\nb,two,{picture_server}/cartoon.png,Cat\n"
        )
        response = upload(csrf_client, researcher, plain_study, "items.csv", rows.encode())
        assert response.status_code == 302, page_text(response)
        refs = item_media(plain_study.items.values_list("pk", flat=True))
        assert len(refs) == 2 and MediaFile.objects.get().original_name == f"{picture_server}/cartoon.png"

    @pytest.mark.parametrize(
        ("path", "named"),
        [("/moved.png", "HTTP 302"), ("http://10.0.0.1/x.png", "10.0.0.1")],
    )
    def test_redirects_and_private_addresses_are_refused_by_url(
        self, csrf_client, researcher, plain_study, picture_server, isolated_media, path, named
    ):
        address = path if path.startswith("http") else picture_server + path
        response = upload(csrf_client, researcher, plain_study, "items.csv", f"id,text,media\na,x,{address}\n".encode())
        assert response.status_code == 400
        assert address in page_text(response) and named in page_text(response)
        assert not Item.objects.exists() and stored_files(isolated_media) == []
