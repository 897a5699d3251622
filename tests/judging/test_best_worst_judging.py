"""Best–worst scaling on the judging side: the prompt and schema, reading answers, LLM and baseline runs."""

import json

import pytest

from annotation.models import Judgment
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from annotation.task_types import get_task_type
from judging.parsing import parse_answer
from judging.prompts import builtin, default_schema, render_messages
from judging.prompts.render import sample_context
from judging.services.judges import judge_create, judge_find_or_create
from judging.services.runs import process_run, run_create
from judging.testing.scripted_server import ScriptedServer, prompt_text, requested_schema

pytestmark = pytest.mark.django_db

SHOWN = ["k-w", "k-x", "k-y", "k-z"]
CONFIG = get_task_type("best_worst").config(None)


def parse(text):
    return parse_answer(task_type="best_worst", text=text, shown_order=SHOWN, config=CONFIG)


def bws_study(owner, texts_by_item):
    study = study_create(owner=owner, name="Best-worst jokes", task_type="best_worst")
    items_create(
        study=study,
        items=[
            ItemSpec(
                external_id=f"set-{n}",
                prompt="Animals",
                candidates=[CandidateSpec(key=f"k{j}", text=t) for j, t in enumerate(texts)],
            )
            for n, texts in enumerate(texts_by_item)
        ],
    )
    study_set_state(study=study, state="open")
    return study


class TestAnswers:
    def test_the_json_numbers_name_the_jokes_in_the_order_shown(self):
        parsed = parse('{"best": 3, "worst": "1", "reasoning": "the yak pun lands"}')
        assert parsed.value == {"best": "k-y", "worst": "k-w"}
        assert parsed.method == "json"
        assert parsed.extras == {"reasoning": "the yak pun lands"}

    def test_plain_text_with_both_picks_is_read(self):
        parsed = parse("Best: joke 2\nWorst: joke 4")
        assert parsed.value == {"best": "k-x", "worst": "k-z"}
        assert parsed.method == "text_pattern:labelled"

    def test_the_same_joke_twice_is_unparseable_with_the_reason(self):
        parsed = parse('{"best": 2, "worst": 2}')
        assert not parsed.ok
        assert "must be different jokes" in parsed.error

    def test_a_missing_pick_is_unparseable(self):
        parsed = parse('{"best": 2}')
        assert parsed.error == "the JSON answer needs both a best and a worst joke"

    def test_a_number_past_the_jokes_shown_is_unparseable(self):
        assert parse('{"best": 5, "worst": 1}').error == "the choice 5 is not between 1 and 4"


class TestPrompt:
    def test_the_default_template_lists_the_numbered_jokes(self):
        template = builtin("best-worst")
        text = render_messages(system="", user=template.user, context=sample_context("best_worst"))[0]["content"]
        assert "Joke 1: First option" in text and "Joke 2: Second option" in text
        assert '"best"' in text and '"worst"' in text

    def test_the_schema_asks_for_two_numbers_within_the_jokes_shown(self):
        schema = default_schema(task_type="best_worst", config=CONFIG, n_candidates=4)
        assert schema["required"] == ["best", "worst"]
        assert schema["properties"]["best"] == {"type": "integer", "minimum": 1, "maximum": 4}


class TestRuns:
    def test_an_llm_judge_run_stores_the_parsed_picks(self, researcher):
        study = bws_study(researcher, [["ant", "bee!", "cat", "a dog joke"], ["eel", "fox", "gnu gag", "hen"]])

        def answer(request):
            # The scripted model likes "bee!" and "gnu gag", dislikes "ant" and "hen": it answers by the
            # numbers the prompt gave them, so the stored keys show the shuffled order was read back right.
            jokes = {
                line.split(": ", 1)[1]: n
                for n, line in enumerate((x for x in prompt_text(request).splitlines() if x.startswith("Joke ")), 1)
            }
            assert set(requested_schema(request)["properties"]) == {"best", "worst"}
            best = jokes.get("bee!") or jokes["gnu gag"]
            worst = jokes.get("ant") or jokes["hen"]
            return json.dumps({"best": best, "worst": worst})

        with ScriptedServer(answer) as server:
            judge = judge_create(owner=researcher, name="scripted", base_url=server.url, model="m", concurrency=1)
            run = run_create(study=study, judge=judge, enqueue=False)
            process_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "done"
        stored = {j.item.external_id: j for j in Judgment.objects.filter(rater=judge.rater).select_related("item")}
        assert {j.status for j in stored.values()} == {"ok"}
        assert stored["set-0"].value == {"best": "k1", "worst": "k0"}
        assert stored["set-1"].value == {"best": "k2", "worst": "k3"}
        # The judge asked with the JSON schema and the reply was exactly that object.
        assert stored["set-1"].provenance["parse"]["method"] == "structured"

    @pytest.mark.parametrize("kind", ["random", "constant", "length"])
    def test_every_baseline_answers_two_different_jokes(self, researcher, kind):
        study = bws_study(researcher, [["a", "bb", "ccc", "dddd"], ["eeee", "fff", "gg", "h"]])
        judge, _ = judge_find_or_create(owner=researcher, baseline=kind)
        run = run_create(study=study, judge=judge, enqueue=False)
        process_run(run_id=run.pk)
        judgments = Judgment.objects.filter(rater=judge.rater)
        assert judgments.count() == 2
        assert all(j.status == "ok" and j.value["best"] != j.value["worst"] for j in judgments)

    def test_the_length_baseline_marks_the_shortest_best_and_the_longest_worst(self, researcher):
        study = bws_study(researcher, [["a", "bb", "ccc", "dddd"], ["eeee", "fff", "gg", "h"]])
        judge, _ = judge_find_or_create(owner=researcher, baseline="length")
        process_run(run_id=run_create(study=study, judge=judge, enqueue=False).pk)
        values = dict(Judgment.objects.filter(rater=judge.rater).values_list("item__external_id", "value"))
        assert values == {"set-0": {"best": "k0", "worst": "k3"}, "set-1": {"best": "k3", "worst": "k0"}}
