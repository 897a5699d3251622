"""OOGIRI-MASTER: templates, importers, the benchmark builder command and the reports."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Judgment, Study
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.oogiri import TASKS, VOTING
from annotation.protocols.oogiri_benchmark import select_responses
from ratings.protocols import protocol_report, report_json, write_report_workbook

pytestmark = pytest.mark.django_db


def voting_file(votes: dict[str, list[int]]) -> bytes:
    lines = ["prompt_id,prompt,response_id,response,votes"]
    for pid, counts in votes.items():
        for r, n in enumerate(counts):
            lines.append(f"{pid},What would a cat say at a job interview?,r{r},Answer {pid}{r} {'!' * (r + 1)},{n}")
    return "\n".join(lines).encode()


@pytest.fixture
def voting(researcher):
    return study_from_template(owner=researcher, template=VOTING, name="Cats at work")


class TestTheTemplates:
    def test_the_voting_template_gives_three_hidden_votes_per_prompt(self, voting):
        assert voting.task_type == "vote_allocation"
        assert voting.config["max_votes"] == 3 and voting.config["allow_repeat"] is True
        assert voting.protocol == "oogiri-voting"
        # OOGIRI-MASTER is Japanese: the template's texts are stored in Japanese.
        assert voting.config["language"] == "ja"
        assert "3票" in voting.instructions_text

    def test_each_benchmark_task_asks_21_crowdworkers_and_checks_attention(self, researcher):
        for task, key in TASKS.items():
            study = study_from_template(owner=researcher, template=key, name=task)
            assert study.task_type == ("binary" if task == "binary" else "pick_one")
            assert study.quota_per_item == 21
            assert study.attention_check_rate > 0
            assert study.attention_check_policy == Study.AttentionPolicy.FLAG
            assert study.consent_text and study.instructions_text


class TestTheVotingImporter:
    def test_a_good_file_gives_one_item_per_prompt_with_its_vote_totals(self, voting):
        result = protocol_import(
            study=voting, data=voting_file({"p1": [50, 30, 20, 5, 0, 0, 0], "p2": [1, 2]}), filename="v.csv"
        )
        assert result.ok, result.errors
        assert result.items == 2
        item = voting.items.get(external_id="p1")
        assert [c.provenance["imported_votes"] for c in item.candidates.order_by("position")] == [
            50,
            30,
            20,
            5,
            0,
            0,
            0,
        ]

        selection = select_responses(study=voting)
        assert [s.prompt.prompt_id for s in selection.kept] == ["p1"]
        assert [r.key for r in selection.kept[0].high] == ["r0", "r1", "r2"]
        assert {r.key for r in selection.kept[0].low} == {"r4", "r5", "r6"}
        assert selection.excluded[0][1] == "3 votes, fewer than 100"

    def test_every_bad_row_is_named_and_nothing_is_written(self, voting):
        data = (
            b"prompt_id,prompt,response_id,response,votes\n"
            b"p1,A prompt,r1,fine,3\n"
            b"p1,A prompt,r1,duplicate id,2\n"
            b"p1,Another text,r2,changed prompt,1\n"
            b",A prompt,r3,no prompt id,1\n"
            b"p1,A prompt,r4,,1\n"
            b"p1,A prompt,r5,bad votes,2.5\n"
            b"p2,Lonely prompt,r1,only answer,0\n"
        )
        result = protocol_import(study=voting, data=data, filename="bad.csv")
        assert not result.ok
        joined = "\n".join(result.errors)
        for row in (3, 4, 5, 6, 7, 8):
            assert f"Row {row}:" in joined
        assert "only one response" in joined
        assert voting.items.count() == 0

    def test_a_file_without_the_needed_columns_is_refused(self, voting):
        result = protocol_import(study=voting, data=b"prompt,response\nx,y\n", filename="v.csv")
        assert "prompt_id" in result.errors[0] and voting.items.count() == 0


class TestTheBenchmarkImporter:
    def test_items_and_crowd_answers_are_read_together(self, researcher):
        study = study_from_template(owner=researcher, template=TASKS["triple"], name="Triple")
        data = (
            b"item_id,prompt,option_1,option_2,option_3,gold,attention_check,rater,answer\n"
            b"t1,Prompt one,a,b,c,2,,w1,2\n"
            b"t1,,,,,,,w2,3\n"
            b"chk,Pick the second,x,y,z,2,yes,w1,2\n"
        )
        result = protocol_import(study=study, data=data, filename="t.csv")
        assert result.ok, result.errors
        assert (result.items, result.judgments) == (2, 3)
        assert study.items.get(external_id="t1").gold == {"choice": "option_2"}
        assert study.items.get(external_id="chk").is_attention_check

    def test_unknown_answers_are_named_by_row(self, researcher):
        study = study_from_template(owner=researcher, template=TASKS["binary"], name="Binary")
        data = b"item_id,prompt,response,gold,rater,answer\nb1,P,R,hilarious,w1,funny\nb2,P,R,funny,w1,maybe\n"
        result = protocol_import(study=study, data=data, filename="b.csv")
        assert [e.split(":")[0] for e in result.errors] == ["Row 2", "Row 3"]
        assert study.items.count() == 0


class TestTheBuilderCommand:
    def test_it_creates_the_five_studies_from_the_kept_prompts(self, voting):
        votes = {f"p{i}": [60, 40, 20, 10, 5, 0, 0, 0] for i in range(5)}
        protocol_import(study=voting, data=voting_file(votes), filename="v.csv")
        out = io.StringIO()
        call_command("oogiri_tasks", voting.slug, "--seed", "2", stdout=out)
        lines = out.getvalue().splitlines()
        assert [line.split(":")[0] for line in lines] == list(TASKS)
        binary = Study.objects.get(protocol=TASKS["binary"])
        assert binary.items.filter(is_attention_check=False).count() == 10
        assert binary.items.filter(is_attention_check=True).count() == 2

    def test_it_says_why_when_no_prompt_passes_the_filter(self, voting):
        protocol_import(study=voting, data=voting_file({"p1": [5, 4, 3, 2, 1, 0, 0]}), filename="v.csv")
        with pytest.raises(CommandError, match="at least 100 votes"):
            call_command("oogiri_tasks", voting.slug)
        with pytest.raises(CommandError, match="No study"):
            call_command("oogiri_tasks", "nope")


class TestTheReports:
    def test_an_empty_voting_study_still_renders_and_says_what_is_missing(self, voting):
        report = report_json(protocol_report(study=voting))
        assert report["summary"]["Prompts"] == 0
        assert any("no prompts yet" in n for n in report["notes"])

    def test_an_empty_benchmark_study_still_renders(self, researcher):
        study = study_from_template(owner=researcher, template=TASKS["quad"], name="Quad")
        report = report_json(protocol_report(study=study))
        assert report["summary"]["Human accuracy, majority vote"] is None
        assert any("No crowd answers yet" in n for n in report["notes"])

    def test_a_benchmark_report_scores_the_crowd_and_exports_to_the_workbook(self, researcher):
        study = study_from_template(owner=researcher, template=TASKS["binary"], name="Binary")
        rows = ["item_id,prompt,response,gold,attention_check,rater,answer"]
        golds = {"b1": "funny", "b2": "not_funny", "b3": "funny"}
        for item, gold in golds.items():
            for w in ("w1", "w2", "w3"):
                answer = gold if w != "w3" else "funny"
                rows.append(f"{item},Prompt,Response {item},{gold},,{w},{answer}")
        rows.append("chk,Check,Press not funny,not_funny,yes,w1,not_funny")
        rows.append("chk,,,,,w4,funny")  # w4 fails the check
        rows.append("b1,,,,,w4,not_funny")
        result = protocol_import(study=study, data="\n".join(rows).encode(), filename="b.csv")
        assert result.ok, result.errors
        report = protocol_report(study=study)
        summary = dict(report.summary)
        assert summary["Crowd raters kept"] == 3
        assert summary["Crowd raters left out (attention checks)"] == 1
        assert summary["Human accuracy, majority vote"] == 1.0
        assert Judgment.objects.filter(study=study).count() == 12
        workbook = io.BytesIO()
        write_report_workbook(report, workbook)
        assert workbook.getvalue()[:2] == b"PK"
