"""Pictures on the annotator's page: shown blind, sized, zoomable, lazy, in every task type's template."""

import re

import pytest
from django.test import Client
from django.utils import translation

from annotation.demo.builder import PictureSpec, StoredFiles, _attach
from annotation.services.studies import CandidateSpec, ItemSpec

from .test_annotator_flow import begin, fresh_rate_limits, url  # noqa: F401
from .test_annotator_item import HTMX, item_page, open_study, pair_item, submit

pytestmark = pytest.mark.django_db

IMG = re.compile(r"<img [^>]*>")


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def with_pictures(study, external_id: str, *specs: PictureSpec) -> None:
    _attach(study, {external_id: list(specs)}, StoredFiles())


def images(page: str) -> list[str]:
    return [tag for tag in IMG.findall(page) if "data-zoom-image" not in tag]


class TestPicturesOnTheItemPage:
    def test_a_pairwise_item_shows_its_prompt_picture_and_each_candidate_s_own_blind(self, csrf_client, researcher):
        study = open_study(researcher, "pairwise", [pair_item()])
        with_pictures(
            study,
            "pair-1",
            PictureSpec("desert-island", "prompt", "A castaway on a tiny island."),
            PictureSpec("office-cat", "candidate", "A cat chairs the meeting.", "key-zebra-17"),
            PictureSpec("moon-picnic", "candidate", "A picnic on the Moon.", "key-okapi-42"),
        )
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        tags = images(page)
        assert len(tags) == 3
        # The prompt's cartoon comes first and loads at once; the candidates' when near the screen.
        assert 'alt="A castaway on a tiny island."' in tags[0] and 'fetchpriority="high"' in tags[0]
        assert all('loading="lazy"' in tag for tag in tags[1:])
        assert all('width="640" height="480"' in tag for tag in tags)
        # Each candidate's picture is beside its own text, in the order shown to this rater.
        first = page.index("The zebra joke.") < page.index("The okapi joke.")
        order = ["A cat chairs the meeting.", "A picnic on the Moon."]
        assert [re.search(r'alt="([^"]+)"', tag).group(1) for tag in tags[1:]] == (order if first else order[::-1])
        # Blind: no original name, no candidate key, nothing but an opaque address.
        for hidden in ("desert-island", "office-cat", ".png", "key-zebra-17", "key-okapi-42"):
            assert hidden not in page
        address = re.search(r'src="([^"]+)"', tags[0]).group(1)
        assert re.fullmatch(r"/m/[A-Za-z0-9_-]{16,}", address)
        # Each is a link that opens it larger; the page's dialog is there for it.
        assert page.count("data-zoom ") == 3 and 'id="picture-dialog"' in page
        served = csrf_client.get(address)
        assert (served.status_code, served["Content-Type"]) == (200, "image/png")
        # Someone who does not hold the item gets nothing.
        assert Client().get(address).status_code == 404

    def test_the_next_item_swapped_in_by_htmx_carries_its_pictures_too(self, csrf_client, researcher):
        items = [ItemSpec(external_id=f"cap-{n}", text=f"Caption number {n}.") for n in range(2)]
        study = open_study(researcher, "ordinal", items, config={"points": [1, 2, 3], "labels": ["a", "b", "c"]})
        for n, scene in enumerate(("robot-doctor", "moon-picnic")):
            with_pictures(study, f"cap-{n}", PictureSpec(scene, "item", f"Cartoon {n}."))
        begin(csrf_client, study)
        first = item_page(csrf_client, study).content.decode()
        response, _ = submit(csrf_client, study, {"rating": "2"}, **HTMX)
        swapped = response.content.decode()
        assert "<html" not in swapped and len(images(swapped)) == 1
        assert {re.search(r'alt="([^"]+)"', images(page)[0]).group(1) for page in (first, swapped)} == {
            "Cartoon 0.",
            "Cartoon 1.",
        }

    def test_pick_one_keeps_the_zoom_link_out_of_the_answer_button(self, csrf_client, researcher):
        item = ItemSpec(
            external_id="pick-1",
            prompt="Which caption fits?",
            candidates=[CandidateSpec(f"k{n}", f"Option {n}.") for n in range(3)],
        )
        study = open_study(researcher, "pick_one", [item], config={"question": "Which is funniest?"})
        with_pictures(study, "pick-1", PictureSpec("office-cat", "candidate", "A cat in a tie.", "k1"))
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        buttons = re.findall(r"<button[^>]*>.*?</button>", page, flags=re.S)
        assert not any("data-zoom" in button or "<img" in button for button in buttons)
        assert len(images(page)) == 1

    def test_a_picture_without_alt_text_still_has_a_name_in_the_rater_s_language(self, csrf_client, researcher):
        study = open_study(
            researcher, "ordinal", [ItemSpec(external_id="ja-1", text="一言")], config={"language": "ja"}
        )
        with_pictures(study, "ja-1", PictureSpec("moon-picnic", "item", ""))
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        with translation.override("ja"):
            unnamed = translation.gettext("A picture without a description")
            closing = translation.gettext("Close")
        assert unnamed != "A picture without a description" and f'alt="{unnamed}"' in page
        assert closing in page
