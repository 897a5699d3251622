"""SemEval-2020 Task 7 end to end on synthetic headlines whose funniness is known.

Forty edited headlines (two edits of each of twenty originals) get a latent
mean grade from a seeded generator; five noisy graders per headline give the
0–3 grades of a published-style file, imported through the protocol importer.
A scripted OpenAI-compatible judge that answers near the latent grade (two
trials whose mean rounds it to the nearest half) and the constant baseline
run through the real Celery worker. The report must then give the mean
baseline's RMSE as the spread of the mean grades, rank the scripted judge
ahead of it, and score Task 2 exactly as a hand count from the same numbers.
"""

import csv
import io
import math
import threading
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.semeval import GRADING
from judging.models import RunStatus
from judging.services.judges import judge_create, judge_find_or_create
from judging.services.runs import run_create
from judging.testing.scripted_server import Answer, prompt_text, reply_as_asked
from ratings.protocols import protocol_report, report_json
from tests.protocols.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 2020
ORIGINALS = 20
SUBJECTS = [f"Minister{n}" for n in range(ORIGINALS)]


def synthetic_headlines():
    """(rows of the import file, latent grade by edited headline text)."""
    rng = np.random.default_rng(SEED)
    rows, latent = [], {}
    for h, subject in enumerate(SUBJECTS):
        original = f"{subject} announces new <budget/> for the harbour"
        for e in range(2):
            word = f"pudding{h}x{e}"
            truth = float(rng.uniform(0.1, 2.9))
            grades = np.clip(np.rint(truth + rng.normal(0, 0.7, 5)), 0, 3).astype(int)
            rows.append({"id": f"{h}-{e}", "original": original, "edit": word, "grades": "".join(map(str, grades))})
            latent[original.replace("<budget/>", word)] = truth
    return rows, latent


def scripted_answers(truth: float) -> list[int]:
    # Two trials whose mean is the latent grade rounded to the nearest half.
    return [min(3, max(0, math.floor(truth + offset))) for offset in (0.25, 0.75)]


def grade_answers(latent: dict[str, float]) -> Answer:
    """A scripted judge answering each rating request from the latent grade of the headline in the prompt."""
    calls: Counter = Counter()
    lock = threading.Lock()

    def answer(request: dict) -> str:
        # The grading prompt (edited-headline-grade) shows the edit as "Edited headline: <text>".
        lines = {line.strip().removeprefix("Edited headline:").strip() for line in prompt_text(request).splitlines()}
        (text,) = [t for t in latent if t in lines]
        with lock:
            call = calls[text]
            calls[text] += 1
        rating = scripted_answers(latent[text])[call % 2]
        return reply_as_asked(request, "rating", rating)

    return answer


@pytest.fixture
def scripted_judge(scripted_model):
    rows, latent = synthetic_headlines()
    return scripted_model(grade_answers(latent)), rows, latent


def as_csv(rows) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "original", "edit", "grades"])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def finished(run) -> bool:
    run.refresh_from_db()
    return not run.is_active


def records(report, key):
    table = report["tables"][key]
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def hand_task2(rows, means, predicted):
    """Accuracy and reward over pairs of edits of one original, counted by hand."""
    by_original = {}
    for row in rows:
        by_original.setdefault(row["original"], []).append(row["id"])
    right = wrong = 0
    reward, skipped = 0.0, 0
    for ids in by_original.values():
        for a, b in combinations(ids, 2):
            if means[a] == means[b]:
                skipped += 1
                continue
            funnier = a if means[a] > means[b] else b
            guess = a if predicted[a] > predicted[b] else b if predicted[b] > predicted[a] else None
            gap = abs(means[a] - means[b])
            if guess == funnier:
                right, reward = right + 1, reward + gap
            else:
                wrong, reward = wrong + 1, reward - gap
    return right / (right + wrong), reward / (right + wrong), right + wrong, skipped


def test_the_report_recovers_the_known_grades_through_the_worker(researcher, celery_worker, scripted_judge):
    server, rows, latent = scripted_judge
    study = study_from_template(owner=researcher, template=GRADING, name="Synthetic headlines")
    result = protocol_import(study=study, data=as_csv(rows), filename="synthetic.csv")
    assert (result.items, result.judgments) == (40, 200), result.errors

    scripted = judge_create(
        owner=researcher, name="scripted judge", base_url=server.url, model="scripted", trials=2, concurrency=2
    )
    constant, _ = judge_find_or_create(owner=researcher, baseline="constant")
    runs = [run_create(study=study, judge=judge) for judge in (scripted, constant)]
    for run in runs:
        assert wait_until(lambda run=run: finished(run), timeout=120), f"run {run.pk} did not finish"
        assert run.status == RunStatus.DONE, run.error

    report = report_json(protocol_report(study=study))
    means = {r["id"]: float(np.mean([int(d) for d in r["grades"]])) for r in rows}
    gold = np.array([means[r["id"]] for r in rows])
    edited = {r["id"]: r["original"].replace("<budget/>", r["edit"]) for r in rows}
    predicted = {k: float(np.mean(scripted_answers(latent[text]))) for k, text in edited.items()}

    # Task 1: the mean baseline's RMSE is the spread (population SD) of the mean grades.
    task1 = {r["judge"]: r for r in records(report, "task1_rmse")}
    assert task1["Mean baseline"]["RMSE"] == pytest.approx(float(np.std(gold)))
    hand_rmse = math.sqrt(np.mean([(means[k] - predicted[k]) ** 2 for k in means]))
    assert task1["scripted judge"]["RMSE"] == pytest.approx(hand_rmse)
    assert task1["scripted judge"]["trials"] == 2
    assert task1["scripted judge"]["RMSE"] < task1["Mean baseline"]["RMSE"]
    assert task1["scripted judge"]["beats the mean baseline"] == "yes"
    nearest = min([0, 1, 2, 3], key=lambda p: (abs(p - gold.mean()), p))
    assert task1["baseline: constant"]["RMSE"] == pytest.approx(math.sqrt(np.mean((gold - nearest) ** 2)))
    assert report["summary"]["Task 1 best judge"].startswith("scripted judge")

    # The tails: the funniest 10% are the 4 headlines with the highest mean grade, the least funny the lowest 4.
    ranked = sorted(means, key=lambda k: means[k])
    tail = next(r for r in records(report, "task1_tails") if r["judge"] == "scripted judge" and r["X%"] == 10)
    assert tail["headlines in each tail"] == 4
    if means[ranked[3]] != means[ranked[4]] and means[ranked[-4]] != means[ranked[-5]]:  # no tie at the cut
        for column, keys in (("RMSE top X%", ranked[-4:]), ("RMSE bottom X%", ranked[:4])):
            assert tail[column] == pytest.approx(math.sqrt(np.mean([(means[k] - predicted[k]) ** 2 for k in keys])))

    # Task 2: accuracy and reward as counted by hand from the same grades and predictions.
    accuracy, reward, scored, skipped = hand_task2(rows, means, predicted)
    task2 = {r["judge"]: r for r in records(report, "task2_scores")}
    assert report["summary"]["Task 2 pairs scored"] == scored
    assert report["summary"]["Task 2 pairs skipped"] == skipped
    assert task2["scripted judge"]["accuracy"] == pytest.approx(accuracy)
    assert task2["scripted judge"]["reward"] == pytest.approx(reward)
    assert task2["scripted judge"]["accuracy"] > task2["First-edit baseline"]["accuracy"]
    # The constant judge grades every edit the same, so it never makes a choice.
    assert task2["baseline: constant"]["accuracy"] == 0.0
