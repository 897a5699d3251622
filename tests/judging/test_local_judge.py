"""The bundled local model judges every demo study with the judge's default settings (``make local-judge``):
llama.cpp's server with SmolLM2-135M serves one request at a time on this 2-core machine, and no unit
fails for it (before the judge adapted its concurrency, 6 of 24 pairwise units timed out)."""

import pytest
from django.core.exceptions import ValidationError

from annotation.demo.builder import demo_studies, load_demo
from judging.local_model import LOCAL_JUDGE_NAME, local_judge
from judging.models import JudgeConfig, JudgeRun
from judging.selectors import run_progress
from judging.services.runs import process_run, run_create

# One item per study keeps the test short; every demo study (so every task type the demo has) is judged. One
# pairwise study gets more units than the judge's default concurrency (4), so calls queue at the one-slot server
# as they did when the defaults failed (pairwise answers are the longest).
ITEMS_PER_STUDY = 1
QUEUED_ITEMS = 6


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


class TestTheLocalJudgeOnTheDemoStudies:
    def test_every_demo_study_is_judged_with_the_defaults_and_no_run_is_partial(self, db, llama_server):
        demo = load_demo()
        judge, created = local_judge(owner=demo.user, base_url=llama_server.base_url)
        defaults = JudgeConfig(name="defaults")
        assert created and judge.name == LOCAL_JUDGE_NAME
        assert (judge.concurrency, judge.timeout_seconds, judge.max_retries) == (
            defaults.concurrency,
            defaults.timeout_seconds,
            defaults.max_retries,
        )
        ended, unparseable, task_types = {}, set(), set()
        studies = sorted(demo.created + demo.existing, key=lambda study: study.pk)
        # SmolLM2 reads text only: the studies with pictures refuse it, and it judges the others.
        pictured = [study for study in studies if study.media_files.exists()]
        for study in pictured:
            with pytest.raises(ValidationError, match="text-only"):
                run_create(study=study, judge=judge, enqueue=False)
        studies = [study for study in studies if study not in pictured]
        queued = next(study for study in studies if study.task_type == "pairwise")
        wanted = {study.pk: QUEUED_ITEMS if study == queued else ITEMS_PER_STUDY for study in studies}
        for study in studies:
            items = study.items.filter(is_attention_check=False).order_by("position")[: wanted[study.pk]]
            run = run_create(study=study, judge=judge, items=items, enqueue=False)
            process_run(run_id=run.pk)
            run = JudgeRun.objects.get(pk=run.pk)
            progress = run_progress(run=run)
            ended[study.name] = (run.status, progress.failed, progress.judged + progress.unparseable)
            if progress.unparseable:
                unparseable.add(study.task_type)
            task_types.add(study.task_type)
        # No unit failed (no timeout, no refused call): every call got an answer.
        assert ended == {study.name: ("done", 0, wanted[study.pk]) for study in studies}
        # Every answer is read: a headline edit must be one word, and the schema's pattern now holds the
        # model to it (unconstrained, it wrote several words and the micro-edit study's answers were lost).
        assert not unparseable
        assert len(ended) + len(pictured) == len(demo_studies()) and len(pictured) == 3
        assert task_types == {study.task_type for study in demo_studies()}
