"""Analysis-grade exports: pandas, R and Hugging Face datasets read back exactly what the database holds.

The spreadsheet CSV changes text that starts with = + - @ (an apostrophe in
front); the raw CSV and Parquet exports must not, and must keep unicode,
empty text, missing values and numbers as stored.
"""

import io
import json
import math
import shutil
import subprocess
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotation.models import Item, Judgment, Rater
from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
from ratings.exports import parquet
from ratings.exports.csv_jsonl import COLUMNS, write_csv, write_csv_raw
from ratings.exports.long_rows import judgment_rows
from ratings.exports.parquet import PARQUET_CELLS, SCHEMA, write_parquet
from ratings.exports.services import write_export
from ratings.exports.study_data import load_study
from tests.conftest import build_study
from tests.ratings.export_helpers import judge_directly, rate_as_crowd

pytestmark = pytest.mark.django_db

# Texts a spreadsheet would run, unicode, and the empty text.
TEXTS = [
    "=SUM(A1) is the joke",
    "+1 for cats",
    "-2 degrees of funny",
    "@everyone laughs",
    "猫が笑った。",
    "笑话很好笑",
    "",
]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def written(researcher):
    """A written-answer study whose items, rater ids and answers are all awkward, plus a judge that failed."""
    study = study_create(
        owner=researcher, name="Awkward texts", task_type="explanation", quota_per_item=1, config={"min_length": 0}
    )
    items_create(
        study=study,
        items=[
            ItemSpec(external_id=f"=item{i}" if i % 2 else f"項目-{i}", text=f"Joke {i}") for i in range(len(TEXTS))
        ],
    )
    study_set_state(study=study, state="open")
    answers = {item.external_id: {"text": TEXTS[i]} for i, item in enumerate(study.items.order_by("position"))}
    raters = rate_as_crowd(study, {"worker-1": answers})
    Rater.objects.filter(pk=raters["worker-1"].pk).update(external_id="-worker 労働者")
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name="@judge")
    judge_directly(
        study,
        judge,
        Item.objects.get(study=study, position=0),
        value=None,
        status=Judgment.Status.UNPARSEABLE,
        provenance={"raw_response": "=1+1 ¯\\_(ツ)_/¯", "api_key": "sk-abcdefghijklmnopqrstuv"},
    )
    return study


@pytest.fixture
def ratings(researcher):
    """Negative points: numbers must stay numbers."""
    study = build_study(
        researcher, n_items=3, quota_per_item=1, config={"points": [-2, -1, 0, 3], "labels": list("abcd")}
    )
    rate_as_crowd(study, {"p": {"item-0": {"rating": -2}, "item-1": {"rating": 3}, "item-2": {"rating": 0}}})
    return study


def expected(study):
    """What the database holds, judgment by judgment."""
    rows = {}
    for j in Judgment.objects.filter(study=study).select_related("item", "rater", "assignment"):
        rows[j.pk] = j
    return rows


def raw_csv(study, tmp_path):
    path = tmp_path / "judgments.raw.csv"
    write_export(study, "csv_raw", path)
    return path


class TestRawCsvInPandas:
    def test_text_comes_back_exactly_as_stored(self, written, tmp_path):
        # keep_default_na=False: an empty cell is the empty text, as a careful pandas user reads text.
        frame = pd.read_csv(raw_csv(written, tmp_path), dtype=str, keep_default_na=False)
        held = expected(written)
        assert list(frame.columns) == COLUMNS
        assert len(frame) == len(held) == len(TEXTS) + 1
        for record in frame.to_dict("records"):
            j = held[int(record["judgment_id"])]
            assert record["item"] == j.item.external_id
            assert record["rater_external_id"] == j.rater.external_id
            assert record["rater_name"] == j.rater.name
            if j.value is None:
                assert record["value"] == record["value_label"] == ""
            else:
                assert json.loads(record["value"]) == j.value
                assert record["value_label"] == j.value["text"]
            assert json.loads(record["provenance"]).get("raw_response", "") == j.provenance.get("raw_response", "")
        assert set(frame["value_label"]) == set(TEXTS)

    def test_the_spreadsheet_csv_differs_only_where_a_spreadsheet_needs_it(self, written, tmp_path):
        safe = io.StringIO()
        write_csv(written, safe)
        raw = io.StringIO()
        write_csv_raw(written, raw)
        safe_frame = pd.read_csv(io.StringIO(safe.getvalue()), dtype=str, keep_default_na=False)
        raw_frame = pd.read_csv(io.StringIO(raw.getvalue()), dtype=str, keep_default_na=False)
        assert (safe_frame["judgment_id"] == raw_frame["judgment_id"]).all()
        for column in COLUMNS:
            for s, r in zip(safe_frame[column], raw_frame[column], strict=True):
                assert s == r or s == "'" + r, (column, s, r)
        assert "'=SUM(A1) is the joke" in set(safe_frame["value_label"])

    def test_numbers_are_numbers(self, ratings, tmp_path):
        frame = pd.read_csv(raw_csv(ratings, tmp_path))
        assert frame["numeric"].dtype.kind == "f"
        assert frame["judgment_id"].dtype.kind == "i"
        held = expected(ratings)
        for record in frame.to_dict("records"):
            assert record["numeric"] == held[record["judgment_id"]].value["rating"]
            assert record["duration_ms"] == held[record["judgment_id"]].duration_ms


class TestParquet:
    def test_columns_have_the_documented_types(self, written, tmp_path):
        path = tmp_path / "judgments.parquet"
        assert write_parquet(written, str(path)) == len(TEXTS) + 1
        schema = pq.read_schema(path)
        assert schema.names == COLUMNS
        assert schema.remove_metadata().equals(SCHEMA.remove_metadata())
        assert schema.metadata[b"funnybone.study"] == written.slug.encode()

    def test_pandas_gets_every_value_as_stored_with_missing_apart_from_empty(self, written, tmp_path):
        path = tmp_path / "judgments.parquet"
        write_parquet(written, str(path))
        frame = pd.read_parquet(path)
        held = expected(written)
        for record in frame.to_dict("records"):
            j = held[record["judgment_id"]]
            assert record["item"] == j.item.external_id
            assert record["rater_id"] == j.rater_id
            assert record["status"] == j.status
            assert record["trial"] == j.assignment.trial
            assert record["created_at"] == pd.Timestamp(j.created_at)
            if j.value is None:
                assert pd.isna(record["value"]) and pd.isna(record["value_label"])
                assert math.isnan(record["numeric"])
            else:
                assert json.loads(record["value"]) == j.value
                assert record["value_label"] == j.value["text"]
            if j.duration_ms is None:
                assert pd.isna(record["duration_ms"])
            else:
                assert record["duration_ms"] == j.duration_ms
            assert record["too_fast"] == j.too_fast
            assert json.loads(record["shown_order"]) == j.shown_order
            assert "api_key" not in json.loads(record["provenance"])
        # The empty answer is the empty text, not a missing value.
        assert "" in set(frame["value_label"].dropna())

    def test_numbers_keep_their_values(self, ratings, tmp_path):
        path = tmp_path / "judgments.parquet"
        write_parquet(ratings, str(path))
        frame = pd.read_parquet(path)
        assert sorted(frame["numeric"]) == [-2.0, 0.0, 3.0]
        assert frame["judgment_id"].dtype == "int64"

    def test_a_file_of_many_row_groups_holds_every_row_as_pyarrow_would_convert_it(
        self, written, tmp_path, monkeypatch
    ):
        monkeypatch.setattr(parquet, "ROW_GROUP", 3)
        path = tmp_path / "judgments.parquet"
        assert write_parquet(written, str(path)) == len(TEXTS) + 1
        assert pq.ParquetFile(path).metadata.num_row_groups == 3
        # The reference: the same rows (times as datetimes) through pyarrow's own conversion of Python values.
        cells = replace(PARQUET_CELLS, when=lambda moment: moment)
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in judgment_rows(load_study(written), cells)]
        assert pq.read_table(path).to_pylist() == pa.Table.from_pylist(rows, schema=SCHEMA).to_pylist()

    def test_columns_are_built_with_nulls_empty_texts_and_lists_in_every_kind(self):
        moment = datetime(2026, 11, 24, 12, 0, 0, 123456, tzinfo=UTC)
        full = {
            "study": "s",
            "judgment_id": 2**40,
            "item": "項目",
            "item_is_attention_check": False,
            "rater_id": 7,
            "rater_kind": "crowd",
            "rater_external_id": "",
            "rater_name": "=cmd",
            "rater_excluded": True,
            "trial": 1,
            "status": "ok",
            "value": '{"a": 1}',
            "value_label": "笑",
            "numeric": 2.5,
            "chosen_candidates": ["a", "b"],
            "chosen_candidate_provenance": "{}",
            "shown_order": "[]",
            "duration_ms": 1500,
            "too_fast": False,
            "attention_passed": True,
            "created_at": moment,
            "provenance": "{}",
            "media": '[{"id": "x"}]',
        }
        empty = dict.fromkeys(COLUMNS) | {"chosen_candidates": []}
        rows = [full, empty, dict.fromkeys(COLUMNS), full | {"item": "", "numeric": float("nan")}]
        as_cells = [
            tuple((v - parquet.EPOCH) // parquet.MICROSECOND if isinstance(v, datetime) else v for v in row.values())
            for row in rows
        ]
        built = parquet._table(as_cells, SCHEMA)
        reference = pa.Table.from_pylist(rows, schema=SCHEMA)
        assert built.schema.equals(reference.schema)
        assert built.to_pylist()[:3] == reference.to_pylist()[:3]
        assert built.column("item").to_pylist()[3] == ""
        assert math.isnan(built.column("numeric").to_pylist()[3])
        assert [built.column(c).null_count for c in ("value", "chosen_candidates", "created_at")] == [2, 1, 2]

    def test_an_empty_study_writes_the_schema_and_no_rows(self, researcher, tmp_path):
        path = tmp_path / "empty.parquet"
        assert write_parquet(build_study(researcher, n_items=1), str(path)) == 0
        assert pq.read_table(path).num_rows == 0
        assert pq.read_schema(path).names == COLUMNS

    def test_hugging_face_datasets_loads_it(self, written, tmp_path, monkeypatch):
        datasets = pytest.importorskip("datasets")
        monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        path = tmp_path / "judgments.parquet"
        write_parquet(written, str(path))
        loaded = datasets.load_dataset(
            "parquet", data_files={"train": str(path)}, split="train", cache_dir=str(tmp_path / "hf")
        )
        assert loaded.column_names == COLUMNS
        held = expected(written)
        assert len(loaded) == len(held)
        for record in loaded:
            j = held[record["judgment_id"]]
            assert record["item"] == j.item.external_id
            assert (json.loads(record["value"]) if record["value"] is not None else None) == j.value


R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
frame <- read.csv(args[1], colClasses = "character", na.strings = character(0), encoding = "UTF-8", check.names = FALSE)
write.csv(frame[, c("judgment_id", "item", "rater_external_id", "value", "value_label")], args[2],
          row.names = FALSE, fileEncoding = "UTF-8")
numbers <- read.csv(args[3], encoding = "UTF-8")
cat(class(numbers$numeric), sum(numbers$numeric), "\n")
"""


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed (`make r` installs r-base-core)")
class TestRawCsvInR:
    def test_r_reads_the_values_the_database_holds(self, written, ratings, tmp_path):
        script = tmp_path / "read.R"
        script.write_text(R_SCRIPT, encoding="utf-8")
        texts = raw_csv(written, tmp_path)
        numbers = tmp_path / "numbers.raw.csv"
        write_export(ratings, "csv_raw", numbers)
        echoed = tmp_path / "from-r.csv"
        done = subprocess.run(
            ["Rscript", str(script), str(texts), str(echoed), str(numbers)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert done.stdout.split() == ["numeric", "1"]
        frame = pd.read_csv(echoed, dtype=str, keep_default_na=False, encoding="utf-8")
        held = expected(written)
        assert len(frame) == len(held)
        for record in frame.to_dict("records"):
            j = held[int(record["judgment_id"])]
            assert record["item"] == j.item.external_id
            assert record["rater_external_id"] == j.rater.external_id
            assert record["value_label"] == (j.value["text"] if j.value else "")
            assert (json.loads(record["value"]) if record["value"] else None) == j.value
