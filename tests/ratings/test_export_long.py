"""Long-format CSV and JSON Lines: one record per judgment, round-tripped against the database."""

import csv
import io
import json

import pytest

from annotation.models import HUMAN_KINDS, Item, Judgment, Rater
from annotation.privacy import pseudonym
from ratings.exports.csv_jsonl import COLUMNS, stream_csv, stream_jsonl, write_csv, write_jsonl
from tests.conftest import build_study
from tests.ratings.export_helpers import judge_directly, rate_as_crowd

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def pairwise(researcher):
    study = build_study(researcher, task_type="pairwise", n_items=2, n_candidates=2, quota_per_item=2)
    rate_as_crowd(
        study,
        {
            "a": {"item-0": {"choice": "c0"}, "item-1": {"choice": "tie"}},
            "b": {"item-0": {"choice": "c1"}, "item-1": {"choice": "c1"}},
        },
    )
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name="judge-1")
    judge_directly(
        study,
        judge,
        Item.objects.get(study=study, external_id="item-0"),
        value={"choice": "c1"},
        provenance={"raw_response": '{"decision": "B"}', "api_key": "sk-abcdefghijklmnopqrstuv"},
        trial=1,
    )
    return study


def csv_records(study):
    out = io.StringIO()
    n = write_csv(study, out)
    records = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert n == len(records)
    return records


def jsonl_records(study):
    out = io.StringIO()
    n = write_jsonl(study, out)
    lines = out.getvalue().splitlines()
    assert n == len(lines)
    return [json.loads(line) for line in lines]


def _names(study):
    """{pseudonym: platform id} of the study's people, as the participant key links them."""
    people = Rater.objects.filter(judgments__study=study, kind__in=HUMAN_KINDS).distinct()
    return {pseudonym(study_id=study.pk, key=study.pseudonym_key, rater_id=r.pk): r.external_id for r in people}


class TestCsv:
    def test_one_row_per_judgment_with_the_documented_columns(self, pairwise):
        out = io.StringIO()
        write_csv(pairwise, out)
        reader = csv.reader(io.StringIO(out.getvalue()))
        assert next(reader) == COLUMNS
        assert len(list(reader)) == Judgment.objects.filter(study=pairwise).count() == 5

    def test_rows_round_trip_to_the_database(self, pairwise):
        for record in csv_records(pairwise):
            j = Judgment.objects.select_related("item", "rater", "assignment").get(pk=int(record["judgment_id"]))
            assert record["study"] == pairwise.slug
            assert record["item"] == j.item.external_id
            assert int(record["rater_id"]) == j.rater_id
            assert record["rater_kind"] == j.rater.kind
            # People by their pseudonym in the study, judges by name; never a platform id (annotation.privacy).
            assert record["rater_pseudonym"] == (
                pseudonym(study_id=pairwise.pk, key=pairwise.pseudonym_key, rater_id=j.rater_id)
                if j.rater.is_human
                else ""
            )
            assert (
                j.rater.external_id not in {record["rater_pseudonym"], record["rater_name"]} or not j.rater.external_id
            )
            assert int(record["trial"]) == j.assignment.trial
            assert record["status"] == j.status
            assert json.loads(record["value"]) == j.value
            assert json.loads(record["shown_order"]) == j.shown_order
            assert int(record["duration_ms"]) == j.duration_ms
            assert record["too_fast"] == ("true" if j.too_fast else "false")
            assert record["created_at"] == j.created_at.isoformat()

    def test_numeric_coding_follows_the_task_type(self, pairwise):
        names = _names(pairwise)
        coded = {
            (r["item"], names.get(r["rater_pseudonym"], r["rater_name"])): r["numeric"] for r in csv_records(pairwise)
        }
        assert coded[("item-0", "a")] == "1.0"
        assert coded[("item-0", "b")] == "0.0"
        assert coded[("item-1", "a")] == "0.5"

    def test_the_chosen_candidate_resolves_to_its_provenance(self, pairwise):
        names = _names(pairwise)
        by_rater = {(r["item"], names.get(r["rater_pseudonym"])): r for r in csv_records(pairwise)}
        chosen = by_rater[("item-0", "b")]
        assert json.loads(chosen["chosen_candidates"]) == ["c1"]
        assert json.loads(chosen["chosen_candidate_provenance"]) == {"c1": {"model": "secret-model-1"}}
        tie = by_rater[("item-1", "a")]
        assert json.loads(tie["chosen_candidates"]) == []

    def test_the_judge_row_keeps_its_raw_response_and_loses_its_key(self, pairwise):
        (judge_row,) = [r for r in csv_records(pairwise) if r["rater_kind"] == "llm"]
        provenance = json.loads(judge_row["provenance"])
        assert provenance == {"raw_response": '{"decision": "B"}'}
        assert judge_row["trial"] == "1"

    def test_streaming_gives_the_same_text_as_writing(self, pairwise):
        out = io.StringIO()
        write_csv(pairwise, out)
        assert "".join(stream_csv(pairwise)) == out.getvalue()


class TestJsonl:
    def test_records_keep_native_types(self, pairwise):
        records = jsonl_records(pairwise)
        assert len(records) == 5
        first = records[0]
        assert set(first) == set(COLUMNS)
        for record in records:
            j = Judgment.objects.get(pk=record["judgment_id"])
            assert record["value"] == j.value
            assert record["too_fast"] is j.too_fast
            assert record["attention_passed"] == j.attention_passed
            assert record["item_is_attention_check"] is False

    def test_values_are_not_prefixed_for_spreadsheets(self, researcher):
        study = build_study(researcher, task_type="explanation", n_items=1, quota_per_item=1)
        rate_as_crowd(study, {"p": {"item-0": {"text": "=SUM(A1) is the joke here"}}})
        (record,) = jsonl_records(study)
        assert record["value"] == {"text": "=SUM(A1) is the joke here"}
        assert record["value_label"] == "=SUM(A1) is the joke here"
        assert record["numeric"] is None

    def test_streaming_gives_the_same_lines_as_writing(self, pairwise):
        out = io.StringIO()
        write_jsonl(pairwise, out)
        assert "".join(stream_jsonl(pairwise)) == out.getvalue()

    def test_an_empty_study_writes_nothing(self, researcher):
        study = build_study(researcher, n_items=1)
        assert jsonl_records(study) == []
