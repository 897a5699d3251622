import io
import random
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.demo.builder import DEMO_PASSWORD, DEMO_USERNAME
from annotation.media import item_media, media_bytes
from annotation.models import Candidate, Item, Judgment, MediaAttachment, MediaFile, Study
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import (
    enroll_crowdworker,
    enrollment_complete,
    enrollment_consent,
    enrollment_instructed,
)
from annotation.services.judgments import judgment_submit, value_from_form
from annotation.services.studies import study_set_state
from annotation.task_types import TIE, get_task_type
from annotation.task_types.free_text import marked_token

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    # The demo's cartoons are stored through the media home: keep them out of the real data folder.
    settings.MEDIA_ROOT = tmp_path / "media"


PROTOCOLS = {"humorrank", "jest", "oogiri", "chumor", "semeval2020t7"}
JEST_SLUG = "demo-jest-how-funny-is-it-0-to-3"


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def snapshot() -> dict:
    """Everything load_demo writes, in a comparable form."""
    return {
        "users": list(get_user_model().objects.order_by("pk").values_list("pk", "username", "password")),
        "studies": list(Study.objects.order_by("pk").values()),
        "items": list(Item.objects.order_by("pk").values()),
        "candidates": list(Candidate.objects.order_by("pk").values()),
        "media": list(MediaFile.objects.order_by("pk").values()),
        "attachments": list(MediaAttachment.objects.order_by("pk").values()),
    }


def form_data(assignment, rng: random.Random) -> dict[str, str]:
    """What a crowdworker's browser would post for this assignment: a valid answer."""
    study, item = assignment.study, assignment.item
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    if study.task_type == "pairwise":
        return {"choice": rng.choice(["0", "1", TIE])}
    if study.task_type == "ordinal":
        return {"rating": str(rng.choice(config["points"]))}
    if study.task_type == "binary":
        return {"label": rng.choice([str(o["value"]) for o in config["options"]])}
    if study.task_type == "vote_allocation":
        votes = Counter(rng.randrange(len(assignment.shown_order)) for _ in range(rng.randint(1, config["max_votes"])))
        return {f"votes_{position}": str(count) for position, count in votes.items()}
    if study.task_type == "micro_edit":
        word = rng.choice(["giraffes", "pudding", "kazoos", "socks"])
        assert word != marked_token(item.text)
        return {"replacement": word}
    pytest.fail(f"the simulated crowdworker cannot answer a {study.task_type} study")


def work_through(study: Study, participant_id: str, rng: random.Random) -> tuple[int, str]:
    """One crowdworker answers everything they are offered; returns (judged, final reason)."""
    enrollment = enroll_crowdworker(study=study, participant_id=participant_id, params={"STUDY_ID": "demo"})
    enrollment_consent(enrollment=enrollment)
    enrollment_instructed(enrollment=enrollment)
    judged = 0
    while (nxt := next_assignment(enrollment=enrollment)).assignment is not None:
        assignment = nxt.assignment
        if assignment.item.is_attention_check:
            value = assignment.item.gold  # an attentive worker
        else:
            value = value_from_form(assignment=assignment, data=form_data(assignment, rng))
        submitted = judgment_submit(assignment=assignment, rater=enrollment.rater, value=value)
        assert submitted.created
        judged += 1
    enrollment_complete(enrollment=enrollment)
    return judged, nxt.reason


class TestLoadDemo:
    def test_it_creates_one_open_study_per_protocol(self):
        output = load_demo()
        studies = list(Study.objects.all())
        # Template keys start with the family; the caption contest follows no protocol of PROTOCOLS.md.
        assert {s.protocol.split("-")[0] for s in studies} - {""} == PROTOCOLS
        assert {s.state for s in studies} == {Study.State.OPEN}
        assert {s.owner.username for s in studies} == {DEMO_USERNAME}
        for study in studies:
            assert study.consent_text and study.instructions_text and study.completion_code
            assert study.items.filter(is_attention_check=False).exists()
        assert "Created demo study" in output

    def test_it_creates_the_demo_login_with_a_local_use_notice(self):
        output = load_demo()
        user = get_user_model().objects.get(username=DEMO_USERNAME)
        assert user.check_password(DEMO_PASSWORD)
        assert not user.is_superuser
        assert "local use only" in output

    def test_the_demo_login_reaches_the_admin_outside_production(self, client):
        load_demo()
        user = get_user_model().objects.get(username=DEMO_USERNAME)
        assert user.is_staff and not user.is_superuser
        client.force_login(user)
        assert client.get("/admin/").status_code == 200
        assert client.get("/admin/annotation/invitation/").status_code == 200
        assert client.get("/admin/annotation/study/").status_code == 200
        # Accounts stay out of its reach: it could make itself a superuser there.
        assert client.get("/admin/auth/user/").status_code == 403

    def test_an_older_demo_login_gets_the_admin_on_the_next_load(self):
        get_user_model().objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
        load_demo()
        assert get_user_model().objects.get(username=DEMO_USERNAME).is_staff

    def test_in_production_an_owner_named_for_the_demo_is_not_made_staff(self, settings, researcher):
        settings.FUNNYBONE_PRODUCTION = True
        call_command("load_demo", "--owner", researcher.username, stdout=io.StringIO())
        researcher.refresh_from_db()
        assert not researcher.is_staff
        assert not get_user_model().objects.filter(username=DEMO_USERNAME).exists()

    def test_every_item_satisfies_its_study_task_type(self):
        load_demo()
        for study in Study.objects.all():
            task_type = get_task_type(study.task_type)
            config = task_type.config(study.config)
            for item in study.items.prefetch_related("candidates"):
                keys = [c.key for c in item.candidates.all()]
                task_type.check_candidates(keys)
                if study.task_type == "micro_edit":
                    marked_token(item.text)
                if item.gold is not None:
                    assert task_type.validate(item.gold, candidate_keys=keys, config=config, item_text=item.text)

    def test_running_it_twice_changes_nothing(self):
        load_demo()
        before = snapshot()
        output = load_demo()
        assert snapshot() == before
        assert "Created" not in output
        assert output.count("left as is") == Study.objects.count()

    def test_a_demo_study_the_researcher_changed_is_left_as_is(self):
        load_demo()
        study = Study.objects.get(slug=JEST_SLUG)
        study_set_state(study=study, state=Study.State.CLOSED)
        load_demo()
        assert Study.objects.filter(name=study.name).count() == 1
        assert Study.objects.get(slug=JEST_SLUG).state == Study.State.CLOSED

    def test_an_existing_demo_user_keeps_its_password(self):
        user = get_user_model().objects.create_user(DEMO_USERNAME, password="a-better-password-42")
        output = load_demo()
        user.refresh_from_db()
        assert user.check_password("a-better-password-42")
        assert "local use only" not in output
        assert set(Study.objects.values_list("owner", flat=True)) == {user.pk}


class TestDemoContent:
    @pytest.fixture(autouse=True)
    def _demo(self):
        load_demo()

    def test_the_caption_contest_shows_each_caption_under_its_drawn_cartoon(self):
        rating = Study.objects.get(slug="demo-caption-contest-how-funny-is-this-caption")
        pairs = Study.objects.get(slug="demo-caption-contest-which-caption-is-funnier")
        assert (rating.task_type, rating.config["labels"]) == ("ordinal", ["Unfunny", "Somewhat funny", "Funny"])
        assert (pairs.task_type, pairs.items.count()) == ("pairwise", 8)
        for study in (rating, pairs):
            media = item_media(study.items.values_list("pk", flat=True))
            assert len(media) == study.items.count()  # every item has its cartoon
            refs = [ref for refs in media.values() for ref in refs]
            assert {(ref.role, ref.content_type, ref.width, ref.height) for ref in refs} == {
                ("prompt", "image/png", 640, 480)
            }
            assert all(ref.alt for ref in refs)
            # Four cartoons, each stored once per study however many captions it carries.
            assert MediaFile.objects.filter(study=study).count() == 4
            with media_bytes(refs[0]) as stream:
                assert stream.read(8) == b"\x89PNG\r\n\x1a\n"

    def test_the_image_oogiri_study_is_in_japanese_with_a_picture_per_prompt(self):
        study = Study.objects.get(slug="demo-image-oogiri-in-japanese")
        assert (study.task_type, study.config["language"], study.protocol) == ("vote_allocation", "ja", "oogiri-voting")
        media = item_media(study.items.values_list("pk", flat=True))
        assert sorted(len(refs) for refs in media.values()) == [1, 1]
        assert all("。" in refs[0].alt for refs in media.values())  # alt text in the study's language

    def test_humorrank_pairs_jokes_from_four_contestant_models(self):
        contest = Study.objects.get(protocol="humorrank-contest")
        assert all(item.candidates.count() == 4 for item in contest.items.all())
        study = Study.objects.get(slug="demo-humorrank-which-joke-is-funnier")
        assert (study.task_type, study.config["source_study"]) == ("pairwise", contest.slug)
        items = list(study.items.prefetch_related("candidates"))
        models = Counter(c.key for item in items for c in item.candidates.all())
        assert len(models) == 4
        assert max(models.values()) - min(models.values()) <= 1  # every contestant appears about equally
        assert all(item.prompt for item in items)
        assert len({item.prompt for item in items}) >= 8

    def test_the_humorrank_report_shows_the_people_s_votes(self):
        from ratings.protocols import protocol_report, report_json

        report = report_json(protocol_report(study=Study.objects.get(protocol="humorrank-contest")))
        voted = {row[0]: row for row in report["tables"]["human_agreement"]["rows"]}[
            "Demo: HumorRank — a voted human check"
        ]
        assert voted[2:4] == [3, 72]  # three raters, 72 votes
        assert report["tables"]["leaderboard"]["rows"][0][2] == "quipster-7b"

    def test_jest_is_a_fully_crossed_0_to_3_scale_in_a_shared_order(self):
        study = Study.objects.get(slug=JEST_SLUG)
        assert study.config["labels"] == ["Not funny", "Somewhat funny", "Funny", "Very funny"]
        assert (study.quota_per_item, study.item_order) == (7, Study.ItemOrder.SHARED_RANDOM)
        assert all(item.prompt and item.text for item in study.items.all())

    def test_the_rated_jest_panel_has_seven_raters_on_every_text_and_a_report(self):
        from ratings.protocols import protocol_report, report_json

        study = Study.objects.get(slug="demo-jest-a-rated-expert-panel")
        per_item = Counter(Judgment.objects.filter(study=study).values_list("item_id", flat=True))
        assert len(per_item) == study.items.count() == 12
        assert set(per_item.values()) == {7}
        report = report_json(protocol_report(study=study))
        assert report["summary"]["Selected raters"] == "Ada, Bea, Cal"
        assert len(report["tables"]["dataset-a"]["rows"]) == 12

    def test_oogiri_has_a_vote_study_and_a_binary_study_with_attention_checks(self):
        from ratings.protocols import protocol_report, report_json

        votes = Study.objects.get(slug="demo-oogiri-spread-your-three-votes")
        assert votes.config["max_votes"] == 3
        assert all(item.candidates.count() >= 8 for item in votes.items.all())
        # The imported vote totals give the report a filter and a selection to show.
        report = report_json(protocol_report(study=votes))
        assert report["summary"]["Prompts with at least 100 votes (kept)"] == 3
        assert len(report["tables"]["selection"]["rows"]) == 3 * 6
        binary = Study.objects.get(protocol="oogiri-binary", task_type="binary")
        assert binary.attention_check_rate == pytest.approx(0.2)
        checks = binary.items.filter(is_attention_check=True)
        assert checks.exists() and all(check.gold for check in checks)

    def test_oogiri_has_a_japanese_vote_study_whose_pages_are_japanese(self):
        japanese = Study.objects.get(slug="demo-oogiri-in-japanese")
        assert (japanese.protocol, japanese.task_type, japanese.config["language"]) == (
            "oogiri-voting",
            "vote_allocation",
            "ja",
        )
        for text in [
            japanese.consent_text,
            japanese.instructions_text,
            *japanese.items.values_list("prompt", flat=True),
        ]:
            assert any("\u3040" <= ch <= "\u30ff" for ch in text), text  # kana

    def test_chumor_studies_are_in_chinese_with_joke_types_and_sources(self):
        explain = Study.objects.get(slug="demo-chumor-does-the-explanation-get-the-joke")
        prefer = Study.objects.get(slug="demo-chumor-which-explanation-is-better")
        assert (explain.protocol, prefer.protocol) == ("chumor-explanation", "chumor-preference")
        assert explain.config["language"] == prefer.config["language"] == "zh"
        assert [o["label"] for o in explain.config["options"]] == ["Fully explains", "Does not fully explain"]
        for item in explain.items.all():
            assert item.metadata["joke_types"] and item.metadata["source"] in {"llm", "human"}
            assert any("\u4e00" <= ch <= "\u9fff" for ch in item.prompt)
        assert prefer.config["labels"] == ["Explanation 1", "Explanation 2", "Equally good"]
        for item in prefer.items.prefetch_related("candidates"):
            assert sorted(c.provenance["source"] for c in item.candidates.all()) == ["human", "llm"]

    def test_the_answered_chumor_studies_have_reports_with_numbers(self):
        from ratings.protocols import protocol_report, report_json

        labelled = report_json(protocol_report(study=Study.objects.get(slug="demo-chumor-labelled-explanations")))
        assert labelled["summary"]["Items with a majority label"] == 8
        assert labelled["summary"]["Human annotators"] == 5
        compared = report_json(protocol_report(study=Study.objects.get(slug="demo-chumor-compared-explanations")))
        wins = {row[0]: row[1] for row in compared["tables"]["win_rates"]["rows"]}
        assert wins == {"human": 2, "llm": 1, "tie": 1, "undecided": 1}

    def test_semeval_has_an_editing_study_and_grading_studies(self):
        edit = Study.objects.get(protocol="semeval2020t7-editing", task_type="micro_edit")
        assert all(marked_token(item.text) for item in edit.items.all())
        grading = Study.objects.filter(protocol="semeval2020t7-grading", task_type="ordinal")
        assert grading.count() == 2
        for grade in grading:
            assert grade.config["labels"] == ["Not funny", "Slightly funny", "Moderately funny", "Funny"]
            assert grade.quota_per_item == 5
            for item in grade.items.all():
                assert item.prompt != item.text and "<" not in item.text
                assert item.metadata["replacement"] in item.text

    def test_the_graded_semeval_demo_has_five_grades_per_headline_and_a_report(self):
        from ratings.protocols import protocol_report, report_json

        study = Study.objects.get(slug="demo-semeval-2020-task-7-graded-headlines-ready-to-analyse")
        per_item = Counter(Judgment.objects.filter(study=study).values_list("item_id", flat=True))
        assert len(per_item) == 8 and set(per_item.values()) == {5}
        report = report_json(protocol_report(study=study))
        assert report["summary"]["Task 2 pairs scored"] == 4
        assert report["tables"]["task1_rmse"]["rows"][0][4] > 0  # the mean baseline's RMSE


class TestAnsweringTheDemo:
    @pytest.mark.parametrize(
        "slug",
        [
            "demo-humorrank-which-joke-is-funnier",
            "demo-jest-how-funny-is-it-0-to-3",
            "demo-oogiri-spread-your-three-votes",
            "demo-oogiri-funny-or-not-funny",
            "demo-chumor-does-the-explanation-get-the-joke",
            "demo-chumor-which-explanation-is-better",
            "demo-semeval-2020-task-7-make-the-headline-funny",
            "demo-semeval-2020-task-7-grade-the-edited-headlines",
        ],
    )
    def test_crowdworkers_can_answer_every_demo_study_until_it_is_complete(self, slug):
        load_demo()
        study = Study.objects.get(slug=slug)
        rng = random.Random(slug)
        regular = study.items.filter(is_attention_check=False)
        reasons = []
        for n in range(study.quota_per_item):
            judged, reason = work_through(study, f"{slug}-worker-{n}", rng)
            assert judged >= regular.count()  # nobody is stopped early on an uncapped study
            reasons.append(reason)
        assert set(reasons) == {"exhausted"}
        per_item = Counter(Judgment.objects.filter(item__in=regular).values_list("item_id", flat=True))
        assert set(per_item.values()) == {study.quota_per_item}
        assert len(per_item) == regular.count()
        # a latecomer finds the study complete, and the attentive workers all passed their checks
        assert work_through(study, f"{slug}-latecomer", rng) == (0, "exhausted")
        assert not Judgment.objects.filter(study=study, attention_passed=False).exists()
        assert not study.enrollments.filter(excluded=True).exists()
