"""OOGIRI-MASTER end to end against a known truth.

Synthetic prompts whose responses have a known latent funniness (the funnier,
the shorter); voters spread three votes each, drawn from that funniness. The
filter must drop the prompts with too few votes, the selection must find the
truly funniest responses, and the five benchmark studies get built. A crowd of
21 per item (a third of them noisy: they always answer "funny") plus three
careless workers who fail the attention checks answers through the real
annotator services; the report must leave the careless ones out, score the
majority vote and Dawid–Skene as computed by hand, and Dawid–Skene must win.
Judges (the length baseline, a scripted model that always takes the first
option shown, and one whose answers never parse) run through a real worker.
"""

import numpy as np
import pytest

from annotation.models import Item, Judgment
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.oogiri import VOTING
from annotation.protocols.oogiri_benchmark import benchmark_tasks_build, select_responses
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.imported_judgments import ImportedJudgment, judgments_import
from annotation.services.judgments import judgment_submit
from annotation.services.studies import study_set_state, study_update
from judging.models import JudgeRun, RunStatus
from judging.services.judges import judge_create, judge_find_or_create
from judging.services.runs import run_create
from judging.testing.fault_server import answer_for
from ratings import stats
from ratings.protocols import protocol_report, report_json

from .conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

KEPT_PROMPTS, THIN_PROMPTS, RESPONSES = 30, 4, 10
# Latent funniness of each prompt's responses: three clear favourites, then the rest.
FUNNINESS = np.array([2.2, 1.9, 1.6, 0.0, -0.3, -0.6, -0.9, -1.2, -1.5, -1.8])


def response_text(prompt: int, response: int) -> str:
    # Funnier responses are shorter: the feature comparison must find it.
    words = 3 + int(round(2.5 * (2.2 - FUNNINESS[response])))
    return f"Answer {prompt}-{response}: " + " ".join(["ha"] * words)


def voting_csv() -> bytes:
    lines = ["prompt_id,prompt,response_id,response"]
    for p in range(KEPT_PROMPTS + THIN_PROMPTS):
        for r in range(RESPONSES):
            lines.append(f"p{p:02d},Prompt number {p} asks for a punchline,r{r},{response_text(p, r)}")
    return "\n".join(lines).encode()


def simulated_votes(rng: np.random.Generator) -> list[ImportedJudgment]:
    """40 voters on each kept prompt (120 votes), 20 on the thin ones (60 votes, under the filter)."""
    weights = np.exp(3 * FUNNINESS)
    weights /= weights.sum()
    votes = []
    for p in range(KEPT_PROMPTS + THIN_PROMPTS):
        for v in range(40 if p < KEPT_PROMPTS else 20):
            picks = rng.choice(RESPONSES, size=3, p=weights)
            counts: dict[str, int] = {}
            for r in picks:
                counts[f"r{r}"] = counts.get(f"r{r}", 0) + 1
            votes.append(ImportedJudgment(rater=f"voter{v}", item=f"p{p:02d}", value={"votes": counts}, kind="crowd"))
    return votes


def build_tasks(researcher):
    voting = study_from_template(owner=researcher, template=VOTING, name="Synthetic oogiri")
    imported = protocol_import(study=voting, data=voting_csv(), filename="voting.csv")
    assert imported.ok, imported.errors
    judgments_import(study=voting, judgments=simulated_votes(np.random.default_rng(11)))
    return voting, benchmark_tasks_build(study=voting, owner=researcher, seed=5)


class TestTheFilterAndSelection:
    def test_thin_prompts_are_dropped_and_the_true_favourites_selected(self, researcher):
        voting, tasks = build_tasks(researcher)
        selection = select_responses(study=voting)
        assert {p.prompt_id for p, _ in selection.excluded} == {f"p{p:02d}" for p in range(KEPT_PROMPTS, 34)}
        assert len(selection.kept) == KEPT_PROMPTS
        for kept in selection.kept:
            assert {r.key for r in kept.high} == {"r0", "r1", "r2"}
            assert {r.key for r in kept.low} <= {f"r{r}" for r in range(5, RESPONSES)}

        assert {task: s.items.filter(is_attention_check=False).count() for task, s in tasks.items()} == {
            "binary": 2 * KEPT_PROMPTS,
            "same": KEPT_PROMPTS,
            "diff": KEPT_PROMPTS,
            "triple": KEPT_PROMPTS,
            "quad": KEPT_PROMPTS,
        }
        quad = tasks["quad"].items.filter(is_attention_check=False).prefetch_related("candidates")
        roles = [[c.provenance["role"] for c in item.candidates.all()] for item in quad]
        assert all(sorted(r) == ["high", "low", "other_high", "other_high"] for r in roles)
        # Shuffled: the top-voted answer is not always in the same place.
        assert len({r.index("high") for r in roles}) == 4

        report = report_json(protocol_report(study=voting))
        assert report["summary"]["Prompts with at least 100 votes (kept)"] == KEPT_PROMPTS
        length = next(r for r in report["tables"]["features"]["rows"] if r[0] == "length (characters)")
        assert length[6] < -0.8 and length[7] == "large"  # high-rated responses are clearly shorter
        assert {row[0] for row in report["tables"]["across_tasks"]["rows"]} == {
            "Funny or not funny",
            "Pair, same prompt",
            "Pair, different prompts",
            "Three options",
            "Four options",
        }


def crowd_answer(kind: str, item: Item, shown: list[str], rng: np.random.Generator):
    """A simulated worker: careful (right 70% of the time: the gold 40%, else a coin), noisy (always "funny" / first shown) or careless."""
    if item.is_attention_check:
        if kind == "careless":
            wrong = {"funny": "not_funny", "not_funny": "funny"}
            return (
                {"label": wrong[item.gold["label"]]}
                if "label" in item.gold
                else {"choice": next(k for k in shown if k != item.gold["choice"])}
            )
        return item.gold
    if kind == "noisy":
        return {"label": "funny"} if "label" in item.gold else {"choice": shown[0]}
    if kind == "careful" and rng.random() < 0.4:
        return item.gold
    if "label" in item.gold:
        return {"label": str(rng.choice(["funny", "not_funny"]))}
    return {"choice": str(rng.choice(shown))}


def run_crowd(study, rng) -> dict[str, dict[str, dict]]:
    """21 kept workers (14 careful, 7 noisy) and 3 careless ones, through the annotator services."""
    study_update(study=study, quota_per_item=24)
    # A fixed seed fixes each worker's item and option order, so the run is the same every time.
    type(study).objects.filter(pk=study.pk).update(seed=1234)
    study.refresh_from_db()
    study_set_state(study=study, state="open")
    workers = [("careful", 14), ("noisy", 7), ("careless", 3)]
    answers: dict[str, dict[str, dict]] = {}
    for kind, count in workers:
        for n in range(count):
            name = f"{kind}-{n}"
            enrollment = enroll_crowdworker(study=study, participant_id=name)
            answers[name] = {}
            while (nxt := next_assignment(enrollment=enrollment)).assignment is not None:
                assignment = nxt.assignment
                value = crowd_answer(kind, assignment.item, assignment.shown_order, rng)
                judgment_submit(assignment=assignment, rater=enrollment.rater, value=value)
                if not assignment.item.is_attention_check:
                    answers[name][assignment.item.external_id] = value
    return answers


def by_hand(study, answers) -> tuple[float, float]:
    """Majority vote and Dawid–Skene accuracy of the kept workers, straight from the simulated answers."""
    items = list(study.items.filter(is_attention_check=False).order_by("position").prefetch_related("candidates"))
    binary = study.task_type == "binary"

    def code(item, value):
        if binary:
            return 1.0 if value["label"] == "funny" else 0.0
        return float([c.key for c in item.candidates.all()].index(value["choice"]))

    kept = [name for name in answers if not name.startswith("careless")]
    matrix = np.array([[code(item, answers[name][item.external_id]) for name in kept] for item in items])
    truth = np.array([code(item, item.gold) for item in items])
    cats = np.arange(2.0) if binary else np.arange(float(len(items[0].candidates.all())))
    vote = stats.majority_vote(matrix, categories=cats, tie="undecided")
    labels = stats.dawid_skene(matrix, categories=cats).labels
    return float(np.mean(vote == truth)), float(np.mean(labels == truth))


class TestTheCrowdBaseline:
    def test_careless_workers_are_left_out_and_dawid_skene_beats_the_majority(self, researcher):
        _voting, tasks = build_tasks(researcher)
        rng = np.random.default_rng(3)
        for task in ("binary", "same"):
            study = tasks[task]
            answers = run_crowd(study, rng)
            assert all(len(given) == study.items.filter(is_attention_check=False).count() for given in answers.values())
            report = report_json(protocol_report(study=study))
            summary = report["summary"]
            majority, dawid_skene = by_hand(study, answers)
            assert summary["Crowd raters kept"] == 21
            assert summary["Crowd raters left out (attention checks)"] == 3
            assert summary["Human accuracy, majority vote"] == pytest.approx(majority)
            assert summary["Human accuracy, Dawid–Skene"] == pytest.approx(dawid_skene)
            assert summary["Fleiss' κ among the crowd"] is not None
            if task == "binary":
                # A third always says "funny": the vote drowns the careful workers on the unfunny half.
                assert dawid_skene > majority + 0.1
            else:
                # Position bias on shuffled options is plain noise: both recover the truth well.
                assert min(majority, dawid_skene) > 0.75


def expected_length_choice(shown: list[str], texts: dict[str, str]) -> str:
    return sorted(shown, key=lambda key: (len(texts[key]), shown.index(key)))[0]


def rambling(request: dict) -> str:
    """A scripted model whose answers are prose: nothing to parse."""
    return "Honestly, both have their charms; it depends on the audience."


class TestJudgesThroughTheWorker:
    def test_judge_accuracies_match_the_truth_and_missing_answers_count_as_wrong(
        self, celery_worker, researcher, scripted_model
    ):
        _voting, tasks = build_tasks(researcher)
        study = tasks["same"]
        length, _ = judge_find_or_create(owner=researcher, baseline="length")
        fast = {"timeout_seconds": 2.0, "backoff_seconds": 0.05, "max_retries": 1, "concurrency": 2}
        # fault_server's answer_for always picks the first option shown, whatever the task's schema.
        first = judge_create(
            owner=researcher, name="first-option model", base_url=scripted_model(answer_for).url, model="m1", **fast
        )
        broken = judge_create(
            owner=researcher, name="rambling model", base_url=scripted_model(rambling).url, model="m2", **fast
        )
        runs = [run_create(study=study, judge=judge, trials=1) for judge in (length, first, broken)]

        def finished():
            states = set(JudgeRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True))
            return states <= {RunStatus.DONE, RunStatus.FAILED}

        assert wait_until(finished, timeout=300)

        items = list(study.items.filter(is_attention_check=False).prefetch_related("candidates"))
        texts = {c.key: c.text for item in items for c in item.candidates.all()}
        gold = {item.pk: item.gold["choice"] for item in items}

        def hand_accuracy(judge, pick) -> float:
            shown = dict(Judgment.objects.filter(study=study, rater=judge.rater).values_list("item_id", "shown_order"))
            return sum(1 for pk, key in gold.items() if pk in shown and pick(shown[pk]) == key) / len(gold)

        expected_length = hand_accuracy(length, lambda shown: expected_length_choice(shown, texts))
        expected_first = hand_accuracy(first, lambda shown: shown[0])
        # The funniest answers are the shortest ones, so the length baseline beats chance by far.
        assert expected_length > 0.9

        report = report_json(protocol_report(study=study))
        accuracy = {row[0]: row[2] for row in report["tables"]["accuracy"]["rows"]}
        assert accuracy[length.rater.name] == pytest.approx(expected_length)
        assert accuracy["first-option model"] == pytest.approx(expected_first)
        assert 0.2 < expected_first < 0.8  # options were shuffled, so "first shown" is right about half the time
        assert accuracy["rambling model"] == 0.0
        answered = {row[0]: row[4] for row in report["tables"]["accuracy"]["rows"]}
        assert answered["rambling model"] == 0
        assert any("No crowd answers yet" in note for note in report["notes"])
