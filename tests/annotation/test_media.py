"""Media on items: checked by content, imported from an archive all or nothing, served blind.

The hostile files are built in the test (tests/hostile_files.py). Every one is
refused with a 400 that names the file, and nothing is left in the database
or on disk.
"""

import io

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from PIL import Image

from annotation.media import item_media, media_bytes, media_data_uri, rater_media_url
from annotation.media.checks import MediaProblem, check_media
from annotation.models import Assignment, Item, ItemImport, MediaAttachment, MediaFile
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

    def test_deleting_the_study_removes_the_files(self, imported, isolated_media, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True):
            Item.objects.filter(study=imported).delete()
            MediaFile.objects.filter(study=imported).delete()
        assert stored_files(isolated_media / "media") == []


class TestServing:
    def _ref(self, study):
        item = Assignment.objects.get(study=study).item
        return MediaAttachment.objects.filter(item=item, role="item").select_related("media").get().media

    def test_a_rater_fetches_only_what_they_hold(self, imported, settings):
        rater = Client()
        begin(rater, imported, pid="worker-1")
        assert rater.get(url(imported, "item")).status_code == 200
        media = self._ref(imported)
        address = reverse("annotator:media", args=[media.public_id])
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
