"""Vision judges: an item's pictures reach the model as image parts; a text-only model is refused.

The caption contest demo's studies are the material: their cartoons are drawn, checked and stored
through the media home exactly as ``load_demo`` does it.
"""

import base64
import hashlib
import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from annotation.demo.builder import _build, demo_studies
from annotation.models import Candidate, Judgment, MediaFile
from annotation.services.studies import ItemSpec, items_create, study_create
from judging.prompts.images import blind_refusal
from judging.services.generation import generation_run_create, generator_create, process_generation_run
from judging.services.judges import ensure_baseline_judges, judge_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.django_db

PAIRS = "Demo: Caption contest — which caption is funnier?"
VERDICT = {
    "reasoning": "The first caption turns the castaway's escape into more work.",
    "decision": "A",
    "humor_mechanisms": ["irony"],
    "delivery_features": ["conciseness"],
    "failure_features": ["weak_punchline"],
}


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def demo_study(owner, name: str):
    return _build(next(d for d in demo_studies() if d.name == name), owner)


def user_content(request: dict):
    return next(m for m in request["messages"] if m["role"] == "user")["content"]


def decoded_sha(part: dict) -> str:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()


class TestAVisionJudge:
    def test_it_receives_the_cartoon_as_an_image_part_in_both_orders(self, researcher):
        study = demo_study(researcher, PAIRS)
        shas = dict(MediaFile.objects.filter(study=study).values_list("original_name", "sha256"))
        received: list[dict] = []

        def answer(request: dict) -> str:
            received.append(request)
            return json.dumps(VERDICT)

        with ScriptedServer(answer) as server:
            judge = judge_create(
                owner=researcher, name="seeing", base_url=server.url, model="vlm", sees_images=True, both_orders=True
            )
            run = run_create(study=study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        assert len(received) == 2 * study.items.count()
        by_item: dict[str, list[list]] = {}
        for request in received:
            content = user_content(request)
            # The picture first, then the template's text, which is what a text-only item would send.
            assert [part["type"] for part in content] == ["image_url", "text"]
            assert isinstance(content[1]["text"], str)
            scene = next(name for name, sha in shas.items() if sha == decoded_sha(content[0]))
            by_item.setdefault(scene, []).append(content[1]["text"])
        assert set(by_item) == {"desert-island.png", "office-cat.png", "robot-doctor.png", "moon-picnic.png"}
        # Both orders: each pair's text was sent twice, once with its captions swapped.
        assert all(len(texts) == 4 and texts[0] != texts[1] for texts in by_item.values())
        assert Judgment.objects.filter(study=study, status="ok").count() == 2 * study.items.count()

    def test_a_study_without_pictures_sends_the_same_plain_text_as_before(self, researcher, make_study):
        study = make_study(n_items=2)
        received: list[dict] = []
        with ScriptedServer(lambda request: received.append(request) or "2") as server:
            judge = judge_create(owner=researcher, name="seeing", base_url=server.url, model="vlm", sees_images=True)
            process_run(run_id=run_create(study=study, judge=judge, enqueue=False).pk)
        assert received and all(isinstance(user_content(r), str) for r in received)


class TestATextOnlyJudge:
    def test_it_is_refused_on_a_study_with_pictures_by_the_service_the_api_and_the_command(self, researcher, client):
        study = demo_study(researcher, PAIRS)
        judge = judge_create(owner=researcher, name="blind", base_url="http://127.0.0.1:9/v1", model="text-only")
        with pytest.raises(ValidationError) as refused:
            run_create(study=study, judge=judge, enqueue=False)
        reason = " ".join(refused.value.messages)
        assert "text-only" in reason and "8 item(s)" in reason and "sees_images" in reason
        client.force_login(researcher)
        answer = client.post(
            "/api/judging/runs/", {"study": study.pk, "judge": judge.pk}, content_type="application/json"
        )
        assert answer.status_code == 400 and "text-only" in answer.content.decode()
        page = client.post(f"/judging/studies/{study.pk}/runs/", {"judge": judge.pk})
        assert page.status_code == 200 and "text-only" in page.content.decode()
        with pytest.raises(CommandError, match="text-only"):
            call_command(
                "judge",
                study.slug,
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "text-only",
                "--inline",
                stderr=StringIO(),
            )
        assert not study.judge_runs.exists()
        # Baselines read no content: they may run. A judge that declares it sees images may too.
        assert blind_refusal(study=study, sees_images=True, who="x") == ""
        run_create(study=study, judge=ensure_baseline_judges(owner=researcher)[0], enqueue=False)


class TestGenerationFromAPicture:
    def test_a_generator_that_sees_images_captions_the_cartoon(self, researcher):
        # A study of bare prompts whose prompt is a cartoon: the generator writes a caption for it.
        demo = next(d for d in demo_studies() if d.name == "Demo: Caption contest — how funny is this caption?")
        study = study_create(owner=researcher, name="caption these", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id="desert-island:1", prompt="Write a caption.")])
        from annotation.demo.builder import StoredFiles, _attach

        _attach(study, {"desert-island:1": demo.pictures["desert-island:1"]}, StoredFiles())
        received: list[dict] = []
        with ScriptedServer(lambda request: received.append(request) or "Wi-Fi: excellent. Rescue: pending.") as server:
            blind = generator_create(owner=researcher, name="blind", base_url=server.url, model="m")
            with pytest.raises(ValidationError, match="text-only"):
                generation_run_create(study=study, generators=[blind], enqueue=False)
            seeing = generator_create(owner=researcher, name="seeing", base_url=server.url, model="m", sees_images=True)
            process_generation_run(run_id=generation_run_create(study=study, generators=[seeing], enqueue=False).pk)
        content = user_content(received[0])
        assert [part["type"] for part in content] == ["image_url", "text"]
        assert "Write a caption." in content[1]["text"]
        assert Candidate.objects.get(item__study=study, key="seeing").text == "Wi-Fi: excellent. Rescue: pending."
