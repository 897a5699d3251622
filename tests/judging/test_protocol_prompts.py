"""Each protocol's studies are judged with a prompt that asks that protocol's question, with its labels.

The demo loads one or more studies per protocol template; a judge with no template pinned runs over the
first item of each, against a scripted server that keeps the prompts it was sent.
"""

import pytest

from annotation.demo.builder import load_demo
from annotation.protocols import TEMPLATES
from judging.services.judges import judge_create
from judging.services.runs import process_run, run_create
from judging.testing.fault_server import answer_for
from judging.testing.scripted_server import ScriptedServer, prompt_text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    # The demo's cartoons are stored through the media home: keep them out of the real data folder.
    settings.MEDIA_ROOT = tmp_path / "media"


#: Stands for the question the study itself sets (a pick-one study's ``config["question"]``).
QUESTION = "{question}"
#: What the prompt of each protocol's study must say: its question and its answer labels.
ASKS = {
    "chumor-explanation": ["fully account for what makes the joke funny", '"good" means Fully explains'],
    "chumor-preference": ["Which explanation better makes clear", "Explanation 1:", '"equal"'],
    "humorrank-contest": [QUESTION],
    "humorrank-human-check": ["which joke would get the bigger laugh", "Joke A:", "TIE"],
    "jest": ["How funny would a typical adult audience find this?", "0 = Not funny", "3 = Very funny"],
    "oogiri-voting": ["You have up to 3 votes"],
    "oogiri-binary": ["Would most people find this funny?", '"funny" means Funny'],
    "oogiri-same": [QUESTION],
    "oogiri-diff": [QUESTION],
    "oogiri-triple": [QUESTION],
    "oogiri-quad": [QUESTION],
    "semeval2020t7-editing": ["with a single different word so that the headline becomes funny"],
    "semeval2020t7-grading": ["How funny is the edited headline?", "1 = Slightly funny", "2 = Moderately funny"],
}


def test_every_protocol_template_is_listed_here():
    assert set(ASKS) == set(TEMPLATES)


def test_each_demo_study_is_judged_with_its_protocols_question(researcher):
    prompts: list[str] = []

    def answer(request):
        prompts.append(prompt_text(request))
        return answer_for(request)

    # The caption contest demo follows no protocol; the image Oogiri one does, and has pictures.
    studies = [study for study in load_demo(owner=researcher).created if study.protocol]
    assert {s.protocol for s in studies} >= {"chumor-explanation", "chumor-preference", "semeval2020t7-grading"}
    with ScriptedServer(answer) as server:
        judge = judge_create(
            owner=researcher, name="default prompts", base_url=server.url, model="fake", sees_images=True
        )
        for study in studies:
            prompts.clear()
            item = study.items.filter(is_attention_check=False).order_by("pk").first()
            run = run_create(study=study, judge=judge, items=[item], trials=1, both_orders=False, enqueue=False)
            process_run(run_id=run.pk)
            assert prompts, study.protocol
            for phrase in ASKS[study.protocol]:
                phrase = study.config["question"] if phrase == QUESTION else phrase
                assert phrase in prompts[0], (study.protocol, phrase, prompts[0])


def test_the_chumor_explanation_judge_no_longer_asks_whether_the_joke_is_funny(researcher):
    studies = {s.protocol: s for s in load_demo(owner=researcher).created}
    judge = judge_create(owner=researcher, name="chumor", base_url="http://127.0.0.1:9/v1", model="fake")
    run = run_create(study=studies["chumor-explanation"], judge=judge, enqueue=False)
    assert run.template.name == "explanation-quality"
    assert "Would most people find this funny" not in run.template.user_text
