"""What the API tests share: a token client, and one of everything the API serves."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from judging.services.generation import generation_run_create, generator_create
from judging.services.judges import judge_find_or_create
from judging.services.runs import run_create
from judging.services.templates import template_save
from judging.services.tournaments import tournament_create
from ratings.exports.services import export_create
from ratings.tasks import export_study_task


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture(autouse=True)
def isolated_files(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FUNNYBONE_DATA_DIR = tmp_path / "data"


def contest(owner):
    source = study_create(owner=owner, name="contest", task_type="pick_one")
    items_create(
        study=source,
        items=[
            ItemSpec(
                external_id=f"p{n}",
                prompt=f"Headline {n}",
                candidates=[CandidateSpec(key=k, text="x" * size) for k, size in (("terse", 5), ("wordy", 40))],
            )
            for n in range(2)
        ],
    )
    return source


@pytest.fixture
def world(researcher, make_study):
    """One of everything the API serves, all owned by the researcher."""
    study = make_study(n_items=3, quota_per_item=1)
    enrollment = enroll_crowdworker(study=study, participant_id="p1")
    while (nxt := next_assignment(enrollment=enrollment)).assignment:
        judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value={"rating": 2})
    judge, _ = judge_find_or_create(owner=researcher, baseline="length")
    run = run_create(study=study, judge=judge, created_by=researcher, enqueue=False)
    tournament = tournament_create(
        owner=researcher, name="cup", source_study=contest(researcher), judge=judge, enqueue=False
    )
    export = export_create(study=study, user=researcher, fmt="csv")
    export_study_task.apply(args=[export.pk])
    generator = generator_create(owner=researcher, name="writer", base_url="http://127.0.0.1:9/v1", model="m")
    generation_run = generation_run_create(
        study=make_study(task_type="pick_one", n_items=1, n_candidates=2), generators=[generator], enqueue=False
    )
    template = template_save(owner=researcher, name="mine", task_type="ordinal", user_text="Rate: {{ text }}")
    item_import = token_client(researcher).post(
        f"/api/v1/studies/{study.pk}/imports/",
        {"file": items_csv()},
        format="multipart",
    )
    assert item_import.status_code == 201, item_import.content
    return {
        "study": study.pk,
        "judge": judge.pk,
        "run": run.pk,
        "tournament": tournament.pk,
        "export": export.pk,
        "import": item_import.json()["import_id"],
        "generator": generator.pk,
        "generation_run": generation_run.pk,
        "template": template.pk,
    }


def items_csv():
    return SimpleUploadedFile("more.csv", b"id,text\nextra-1,A new joke.\n", content_type="text/csv")
