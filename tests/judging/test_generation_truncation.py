"""A generated joke the model cut off at max_tokens is recorded and flagged as such, never passed off as complete."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from annotation.models import Candidate
from annotation.services.studies import ItemSpec, items_create, study_create
from judging.services.generation import generation_run_create, generator_create, process_generation_run
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create
from judging.testing.scripted_server import Reply, ScriptedServer
from ratings.exports.csv_jsonl import stream_jsonl

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def prompts_study(owner, n=2):
    study = study_create(owner=owner, name="bare prompts", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"h{k}", prompt=f"Headline number {k}") for k in range(n)])
    return study


def answer(request):
    # The "short" generator's model stops at its token limit; the "full" one finishes its joke.
    if request["model"] == "short-model":
        return Reply("Why did the walrus cross the", finish_reason="length")
    return "Why did the walrus cross the road? To prove it could."


@pytest.fixture
def server():
    with ScriptedServer(answer) as running:
        yield running


def make_generators(owner, server):
    return [
        generator_create(owner=owner, name=name, base_url=server.url, model=f"{name}-model", timeout_seconds=2)
        for name in ("short", "full")
    ]


class TestTruncatedCandidates:
    def test_the_finish_reason_is_recorded_and_length_is_flagged(self, researcher, server):
        study = prompts_study(researcher)
        run = generation_run_create(study=study, generators=make_generators(researcher, server), enqueue=False)
        process_generation_run(run_id=run.pk)
        short = Candidate.objects.filter(key="short")
        full = Candidate.objects.filter(key="full")
        assert short.count() == full.count() == 2
        assert {(c.provenance["finish_reason"], c.provenance["truncated"]) for c in short} == {("length", True)}
        assert {(c.provenance["finish_reason"], c.provenance["truncated"]) for c in full} == {("stop", False)}

    def test_the_run_page_counts_and_lists_the_cut_off_jokes(self, researcher, server):
        study = prompts_study(researcher)
        run = generation_run_create(study=study, generators=make_generators(researcher, server), enqueue=False)
        process_generation_run(run_id=run.pk)
        client = Client()
        client.force_login(researcher)
        page = client.get(f"/judging/generations/{run.pk}/").content.decode()
        assert "2 candidates cut off: the model reached its token limit" in page
        assert "short on h0: Why did the walrus cross the" in page
        assert "full on h0" not in page
        # Per generator: short wrote 2, failed 0, 2 cut off; full wrote 2 and none cut off.
        assert "<td>short</td><td>2</td><td>0</td><td>2</td>" in page
        assert "<td>full</td><td>2</td><td>0</td><td>0</td>" in page
        api = client.get(f"/api/judging/generation-runs/{run.pk}/").json()
        assert api["progress"]["truncated"] == 2

    def test_exports_of_the_tournament_carry_the_flag_of_the_chosen_candidate(self, researcher, server):
        study = prompts_study(researcher, n=1)
        process_generation_run(
            run_id=generation_run_create(study=study, generators=make_generators(researcher, server), enqueue=False).pk
        )
        judge, _ = judge_find_or_create(owner=researcher, baseline="random")
        tournament = tournament_create(owner=researcher, name="cup", source_study=study, judge=judge, enqueue=False)
        process_tournament(tournament_id=tournament.pk)
        records = [json.loads(line) for line in stream_jsonl(tournament.match_study) if line.strip()]
        assert records
        for record in records:
            for key, provenance in record["chosen_candidate_provenance"].items():
                assert provenance["truncated"] is (key == "short")
                assert provenance["finish_reason"] == ("length" if key == "short" else "stop")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_model_with_a_tiny_token_limit_is_flagged(researcher, llama_server, worker_env):
    study = prompts_study(researcher, n=1)
    result = subprocess.run(
        [sys.executable, "manage.py", "generate", study.slug, "--base-url", llama_server.base_url]
        + ["--model", "smollm2-135m", "--name", "tiny", "--max-tokens", "3", "--timeout", "120", "--inline"],
        cwd=ROOT,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    candidate = Candidate.objects.get(item__study=study, key="tiny")
    assert candidate.provenance["finish_reason"] == "length"
    assert candidate.provenance["truncated"] is True
    assert "cut off at max tokens 1" in result.stdout + result.stderr
