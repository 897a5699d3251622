"""The researcher's side of Mechanical Turk: the ExternalQuestion to paste, and links MTurk could not have sent."""

import html
import re

from defusedxml import ElementTree
from django.urls import reverse

from annotation.models import Rater, Study
from annotation.mturk import NAMESPACE
from tests.conftest import build_study


def test_the_study_page_gives_an_external_question_pointing_at_the_entry_link(client, researcher, other_researcher):
    study = build_study(researcher, n_items=1, recruitment=Study.Recruitment.MTURK)
    client.force_login(researcher)
    page = client.get(reverse("researcher:study_detail", args=[study.pk])).content.decode()
    xml = html.unescape(re.search(r'<textarea id="external-question"[^>]*>(.*?)</textarea>', page, re.S).group(1))
    root = ElementTree.fromstring(xml.encode())
    assert root.tag == f"{{{NAMESPACE}}}ExternalQuestion"
    url = root.find(f"{{{NAMESPACE}}}ExternalURL").text
    assert url.endswith(f"/s/{study.entry_token}/") and "PROLIFIC_PID" not in url
    assert int(root.find(f"{{{NAMESPACE}}}FrameHeight").text) > 0
    # Someone else's study: the crowd page does not exist for them.
    client.force_login(other_researcher)
    assert client.get(reverse("crowd:page", args=[study.pk])).status_code == 404


def test_links_mturk_could_not_have_sent_are_refused_and_enrol_nobody(client, researcher):
    study = build_study(researcher, n_items=1, recruitment=Study.Recruitment.MTURK)
    entry = reverse("annotator:entry", args=[study.entry_token])
    base = {"assignmentId": "ASG", "hitId": "H", "turkSubmitTo": "https://www.mturk.com"}
    assert client.get(entry, {**base, "workerId": "lower-case id"}).status_code == 400
    assert (
        client.get(entry, {**base, "workerId": "A1B2C3D4E5", "turkSubmitTo": "javascript:alert(1)"}).status_code == 400
    )
    assert client.get(entry, {k: v for k, v in base.items() if k != "hitId"}).status_code == 400  # no workerId
    assert not Rater.objects.exists()
    accepted = client.get(entry, {**base, "workerId": "A1B2C3D4E5"})
    assert accepted.status_code == 302 and Rater.objects.get().external_id == "A1B2C3D4E5"
