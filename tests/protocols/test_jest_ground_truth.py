"""JEST end to end on data with a known truth: the report must find the balanced raters and the good judge.

A seeded latent funniness per text; three balanced raters (whole scale, little
noise) and four biased ones (always low, always high, compressed to the middle,
shifted down and noisy). Their ratings are imported as a wide sheet; an LLM
judge whose answers are the truth plus a little noise (a scripted
OpenAI-compatible server on loopback) and the random baseline are run by a
real Celery worker; then the protocol report is built from the database.
"""

import io

import numpy as np
import pytest
from django.db import transaction

from annotation.models import Study
from annotation.protocols import protocol_import, study_from_template
from judging.models import JudgeRun
from judging.services.judges import ensure_baseline_judges, judge_create
from judging.services.runs import run_create
from judging.testing.scripted_server import Answer, prompt_text, reply_as_asked
from ratings.protocols import protocol_report, report_json, write_report_workbook

from .conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SEED = 20260122
N_TEXTS = 48
BALANCED = ["bal-1", "bal-2", "bal-3"]
BIASED = ["low", "high", "middle", "shifted"]


class Truth:
    """Latent funniness of each text and every rater's ratings, drawn from one seed."""

    def __init__(self, seed: int = SEED):
        rng = np.random.default_rng(seed)
        # Spread evenly over the scale, so a faithful rater uses every point about equally.
        self.latent = rng.permutation(np.linspace(-0.45, 3.45, N_TEXTS))
        self.truth = np.clip(np.rint(self.latent), 0, 3).astype(int)

        def rate(values, noise):
            return np.clip(np.rint(values + rng.normal(0, noise, N_TEXTS)), 0, 3).astype(int)

        self.ratings = {name: rate(self.latent, 0.35) for name in BALANCED}
        self.ratings["low"] = rate(0.35 * self.latent, 0.5)
        self.ratings["high"] = rate(2.1 + 0.35 * self.latent, 0.5)
        self.ratings["middle"] = rate(1.5 + 0.15 * (self.latent - 1.5), 0.45)
        self.ratings["shifted"] = rate(self.latent - 1.3, 1.0)
        self.judge = rate(self.latent, 0.3)  # what the scripted LLM answers

    def ids(self) -> list[str]:
        return [f"t{n:02d}" for n in range(N_TEXTS)]

    def response(self, n: int) -> str:
        return f"Response number {n} lands its twist at the end."

    def wide_csv(self) -> bytes:
        names = BALANCED + BIASED
        lines = ["id,setup,response," + ",".join(names)]
        for n, item in enumerate(self.ids()):
            cells = [str(self.ratings[name][n]) for name in names]
            lines.append(f"{item},Setup number {n} sets the scene.,{self.response(n)}," + ",".join(cells))
        return ("\n".join(lines) + "\n").encode()


def rating_answer(answers: dict[str, int]) -> Answer:
    """A scripted model whose rating of a text is looked up from the truth."""

    def answer(request: dict) -> str:
        prompt = prompt_text(request)
        rating = next((r for text, r in answers.items() if text in prompt), None)
        if rating is None:
            return "I cannot tell."
        return reply_as_asked(request, "rating", rating)

    return answer


@pytest.fixture(scope="module")
def truth():
    return Truth()


@pytest.fixture
def scripted_judge(truth, scripted_model):
    return scripted_model(rating_answer({truth.response(n): int(truth.judge[n]) for n in range(N_TEXTS)}))


def finished(run: JudgeRun) -> bool:
    run.refresh_from_db()
    return not run.is_active


def run_through_worker(study: Study, judge, worker) -> JudgeRun:
    with transaction.atomic():
        run = run_create(study=study, judge=judge)  # queued on commit, picked up by the worker
    assert wait_until(lambda: finished(run), timeout=300), worker.log_text()[-3000:]
    return run


def test_the_report_recovers_the_balanced_raters_and_the_faithful_judge(
    celery_worker, researcher, truth, scripted_judge
):
    study = study_from_template(owner=researcher, template="jest", name="Synthetic JEST panel")
    result = protocol_import(study=study, data=truth.wide_csv(), filename="panel.csv")
    assert (result.ok, result.items, result.judgments) == (True, N_TEXTS, N_TEXTS * 7), result.errors

    llm = judge_create(
        owner=researcher, name="scripted-llm", base_url=scripted_judge.url, model="scripted", timeout_seconds=10
    )
    random_baseline = next(j for j in ensure_baseline_judges(owner=researcher) if j.baseline == "random")
    for judge in (llm, random_baseline):
        run = run_through_worker(study, judge, celery_worker)
        assert run.status == "done", (run.status, celery_worker.log_text()[-3000:])
    assert scripted_judge.requests >= N_TEXTS  # the worker really asked the model about every text

    report = protocol_report(study=study)
    data = report_json(report)

    selected = [row[0] for row in data["tables"]["balance"]["rows"] if row[-1] == "yes"]
    assert selected == BALANCED
    agreement = {row[0]: row[1:] for row in data["tables"]["agreement"]["rows"]}
    alpha_all, alpha_subset = agreement["Krippendorff's α (ordinal)"]
    assert alpha_subset > alpha_all
    assert alpha_subset > 0.8  # three faithful raters agree closely
    icc_all, icc_subset = agreement["ICC(2,k)"]
    assert icc_subset > icc_all

    # Dataset A's consensus is the median of the balanced raters: close to the truth.
    by_id = {row[1]: row[4] for row in data["tables"]["dataset-a"]["rows"]}
    consensus = np.array([by_id[item] for item in truth.ids()])
    assert np.mean(np.abs(consensus - truth.truth)) < 0.25

    judges = {
        row[0]: dict(zip(data["tables"]["judges"]["columns"], row, strict=True))
        for row in data["tables"]["judges"]["rows"]
    }
    faithful, chance = judges["scripted-llm"], judges[random_baseline.rater.name]
    assert faithful["Missing"] == 0 and faithful["Texts"] == N_TEXTS
    assert faithful["κ (quadratic)"] > 0.6 and faithful["κ CI low"] > 0.6
    assert faithful["Spearman ρ"] > 0.8
    assert faithful["κ p"] < 0.01
    # The random baseline's answers are seeded by judge and item ids, which differ from run to run, so
    # its κ over 48 texts wanders around 0 with an SD near 0.14: bound it where chance cannot reach.
    assert chance["κ (quadratic)"] < faithful["κ (quadratic)"] - 0.3
    assert chance["κ CI low"] < 0.3

    # The same report goes to the workbook, with both figures drawn from these data.
    buffer = io.BytesIO()
    write_report_workbook(report, buffer)
    assert buffer.getvalue().startswith(b"PK")
    for key in ("spearman-heatmap", "rater-distributions"):
        assert report.figure(key).plot.png.startswith(b"\x89PNG")
