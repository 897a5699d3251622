"""Chumor 2.0 against a known truth, end to end: files imported, judges run by a real Celery worker, reports read.

The truth is drawn with a seeded numpy generator: every explanation is good or
bad, every joke carries one or two joke types, and every joke of the
preference study has a better explanation (human, LLM) or none (equal). Five
noisy annotators label each explanation; three noisy annotators vote on each
pair. Two scripted judges answer over HTTP from the truth with a known error
pattern — the "direct" one is wrong on every pun-based joke, the "step by step"
one gives no usable answer on cultural jokes — and the random baseline guesses.
The reports must give back the truth: the majority labels, exactly those error
patterns in the by-joke-type table, chance for the baseline, and the
preference win rates in the truth's proportions.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import numpy as np
import pytest

from annotation.protocols import protocol_import, study_from_template
from judging.models import JudgeRun
from judging.services.judges import judge_create, judge_find_or_create
from judging.services.runs import run_create
from judging.testing.scripted_server import Answer, prompt_text
from ratings.protocols import protocol_report
from tests.protocols.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SEED = 20260
TYPES = ("cultural", "situational", "pun-based", "homophonic", "glyph-based", "cross-lingual")
N_JOKES = 40  # each with a human and an LLM explanation: 80 items to label
N_PREFER = 60
# How often one annotator flips the true label, and how often a preference voter strays from the truth.
LABEL_NOISE = 0.1
VOTE_NOISE = 0.15
# The preference truth: which explanation is better, in these proportions.
PREFERENCE_TRUTH = {"human": 0.5, "llm": 0.3, "tie": 0.2}
RUN_LIMIT_S = 300


def simulate_labels(rng: np.random.Generator) -> tuple[list[dict], dict[str, str]]:
    """Rows of the label file (5 annotators per explanation) and the true label of each explanation."""
    rows, truth = [], {}
    for j in range(N_JOKES):
        types = sorted(rng.choice(TYPES, size=int(rng.integers(1, 3)), replace=False).tolist())
        for source, p_good in (("human", 0.75), ("gpt-4o", 0.4)):
            item = f"joke{j}:{source}"
            good = bool(rng.random() < p_good)
            truth[item] = "good" if good else "bad"
            for a in range(5):
                said = good != bool(rng.random() < LABEL_NOISE)
                rows.append(
                    {
                        "joke_id": f"joke{j}",
                        "joke": f"Synthetic joke number {j}.",
                        "explanation": f"Explanation {item} of joke {j}.",
                        "source": source,
                        "joke_types": ";".join(types),
                        "annotator": f"annotator{a}",
                        "label": "good" if said else "bad",
                    }
                )
    return rows, truth


def simulate_preferences(rng: np.random.Generator) -> tuple[list[dict], dict[str, str]]:
    """Rows of the preference file (3 annotators per joke, answers by position) and each joke's true winner."""
    outcomes = list(PREFERENCE_TRUTH)
    counts = [round(N_PREFER * PREFERENCE_TRUTH[o]) for o in outcomes]
    winners = rng.permutation(np.repeat(outcomes, counts)).tolist()
    rows, truth = [], {}
    for j, winner in enumerate(winners):
        joke = f"pref{j}"
        truth[joke] = winner
        for a in range(3):
            vote = winner if rng.random() >= VOTE_NOISE else str(rng.choice([o for o in outcomes if o != winner]))
            first = str(rng.choice(["human", "llm"]))
            order = [first, "llm" if first == "human" else "human"]
            choice = "equally good" if vote == "tie" else f"Explanation {order.index(vote) + 1}"
            rows.append(
                {
                    "joke_id": joke,
                    "joke": f"Preference joke {j}.",
                    "human_explanation": f"A person explains joke {j}.",
                    "llm_explanation": f"A model explains joke {j}.",
                    "annotator": f"voter{a}",
                    "choice": choice,
                    "shown_first": first,
                }
            )
    return rows, truth


def as_csv(rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def scripted_labels(truth: dict[str, str], types: dict[str, list[str]], *, mode: str, joke_type: str) -> Answer:
    """A scripted judge answering each explanation from the truth, with chosen mistakes on one joke type.

    ``wrong-on`` flips the answer on jokes of that type, ``silent-on`` answers prose (unparseable) on them.
    """

    def answer(request: dict) -> str:
        prompt = prompt_text(request)
        item = next(key for key in truth if f"Explanation {key} of" in prompt)
        label = truth[item]
        affected = joke_type in types[item]
        if affected and mode == "wrong-on":
            label = "bad" if label == "good" else "good"
        return "I would rather not say." if affected and mode == "silent-on" else json.dumps({"label": label})

    return answer


def run_to_the_end(run: JudgeRun) -> JudgeRun:
    assert wait_until(lambda: not JudgeRun.objects.get(pk=run.pk).is_active, timeout=RUN_LIMIT_S), "run never ended"
    run.refresh_from_db()
    return run


def table(report, key: str):
    return next(t for t in report.tables() if t.key == key)


def test_the_explanation_report_recovers_the_truth_and_the_judges_error_patterns(
    celery_worker, researcher, scripted_model
):
    rows, truth = simulate_labels(np.random.default_rng(SEED))
    types = {f"{r['joke_id']}:{r['source']}": r["joke_types"].split(";") for r in rows}
    study = study_from_template(owner=researcher, template="chumor-explanation", name="Synthetic explanations")
    result = protocol_import(study=study, data=as_csv(rows), filename="labels.csv")
    assert result.ok, result.errors
    assert (result.items, result.judgments) == (2 * N_JOKES, 10 * N_JOKES)

    def scripted_judge(name: str, template: str, **mistakes):
        answer = scripted_labels(truth, types, **mistakes)
        fast = {"timeout_seconds": 10.0, "backoff_seconds": 0.05, "max_retries": 1, "concurrency": 4}
        base_url = scripted_model(answer).url
        return judge_create(
            owner=researcher, name=name, base_url=base_url, model="scripted", templates={"binary": template}, **fast
        )

    direct = scripted_judge("scripted direct", "explanation-quality", mode="wrong-on", joke_type="pun-based")
    stepwise = scripted_judge(
        "scripted step by step", "explanation-quality-stepwise", mode="silent-on", joke_type="cultural"
    )
    random_judge, _ = judge_find_or_create(owner=researcher, baseline="random")
    runs = [run_create(study=study, judge=j) for j in (direct, stepwise, random_judge)]
    for run in runs:
        assert run_to_the_end(run).status == "done"

    report = protocol_report(study=study)

    # Five annotators with 10% noise: the majority gives back every true label.
    majority = {r[0]: r[-1] for r in table(report, "majority_labels").rows}
    assert majority == truth

    overall = {r[0]: r for r in table(report, "judges_overall").rows}
    columns = table(report, "judges_overall").columns
    col = {name: columns.index(name) for name in columns}
    pun = {item for item, t in types.items() if "pun-based" in t}
    cultural = {item for item, t in types.items() if "cultural" in t}
    n = len(truth)
    assert overall["scripted direct"][col["accuracy"]] == pytest.approx(1 - len(pun) / n, abs=1e-3)
    assert overall["scripted direct"][col["prompt"]].startswith("direct")
    stepwise_row = overall["scripted step by step"]
    assert stepwise_row[col["prompt"]].startswith("step by step")
    assert stepwise_row[col["unparseable"]] == len(cultural)
    assert stepwise_row[col["accuracy"]] == pytest.approx(1 - len(cultural) / n, abs=1e-3)

    by_type = {(r[0], r[1]): r for r in table(report, "judges_by_joke_type").rows}
    for joke_type in TYPES:
        items = {item for item, t in types.items() if joke_type in t}
        direct_row, stepwise_row = (
            by_type[("scripted direct", joke_type)],
            by_type[("scripted step by step", joke_type)],
        )
        assert direct_row[2] == stepwise_row[2] == len(items)
        # Exactly the scripted pattern: all wrong on pun-based jokes, otherwise right unless also pun-based.
        expected_direct = 0.0 if joke_type == "pun-based" else 1 - len(items & pun) / len(items)
        assert direct_row[4] == pytest.approx(expected_direct, abs=1e-3)
        expected_stepwise = 0.0 if joke_type == "cultural" else 1 - len(items & cultural) / len(items)
        assert stepwise_row[4] == pytest.approx(expected_stepwise, abs=1e-3)
        assert stepwise_row[-1] == len(items & cultural)  # missing answers, counted wrong

    by_source = {(r[0], r[1]): r for r in table(report, "judges_by_source").rows}
    for source in ("human", "gpt-4o"):
        items = {item for item in truth if item.endswith(f":{source}")}
        assert by_source[("scripted direct", source)][4] == pytest.approx(1 - len(items & pun) / len(items), abs=1e-3)

    baseline = overall[random_judge.name]
    assert 0.35 <= baseline[col["accuracy"]] <= 0.65
    assert abs(baseline[col["MCC"]]) < 0.25
    assert {"accuracy-by-joke-type", "accuracy-by-source"} <= {f.key for f in report.figures()}


def test_the_preference_report_recovers_the_truths_win_rates(celery_worker, researcher):
    rows, truth = simulate_preferences(np.random.default_rng(SEED))
    study = study_from_template(owner=researcher, template="chumor-preference", name="Synthetic preferences")
    result = protocol_import(study=study, data=as_csv(rows), filename="preferences.csv")
    assert result.ok, result.errors
    random_judge, _ = judge_find_or_create(owner=researcher, baseline="random")
    assert run_to_the_end(run_create(study=study, judge=random_judge)).status == "done"

    report = protocol_report(study=study)
    majority = {r[0]: r[-1] for r in table(report, "per_joke_majority").rows}
    # The report's majority is the simulated voters' majority, "undecided" when all three differ.
    votes: dict[str, list[str]] = {}
    for row in rows:
        order = [row["shown_first"], "llm" if row["shown_first"] == "human" else "human"]
        vote = "tie" if row["choice"] == "equally good" else order[int(row["choice"][-1]) - 1]
        votes.setdefault(row["joke_id"], []).append(vote)
    expected = {}
    for joke, given in votes.items():
        top, count = Counter(given).most_common(1)[0]
        expected[joke] = top if count >= 2 else "undecided"
    assert majority == expected
    recovered = sum(majority[j] == truth[j] for j in truth) / len(truth)
    assert recovered >= 0.85

    wins = {r[0]: r[2] for r in table(report, "win_rates").rows}
    for outcome, share in PREFERENCE_TRUTH.items():
        assert wins[outcome] == pytest.approx(share, abs=0.08)
    assert wins["undecided"] <= 0.08
    agreement = {r[0]: r[1] for r in table(report, "agreement").rows}
    assert 0.6 <= agreement["raw percentage agreement"] <= 0.9
    judges = table(report, "judges_preference").rows
    assert [r[0] for r in judges] == [random_judge.name] and judges[0][1] == N_PREFER
