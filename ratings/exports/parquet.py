# SPDX-License-Identifier: GPL-3.0-or-later
"""The long-format judgments as a Parquet file: typed columns, values exactly as stored.

One row per judgment, the columns of the CSV exports (``long_rows.COLUMNS``)
with Arrow types (``SCHEMA``, documented in docs/exports.md): integers stay
integers, flags are booleans with nulls where unknown, ``created_at`` is a UTC
timestamp, ``chosen_candidates`` a list of keys, and the JSON columns are the
JSON text of the stored value. pandas (``read_parquet``), R (``arrow::read_parquet``)
and Hugging Face ``datasets.load_dataset("parquet", data_files=...)`` read it as is.

Rows are written in row groups of ``ROW_GROUP`` judgments, so memory stays
bounded by one group whatever the size of the study.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

import funnybone
from annotation.models import Study

from .long_rows import COLUMNS, Cells, judgment_rows
from .study_data import load_study

ROW_GROUP = 25_000
SCHEMA_VERSION = "1"
Progress = Callable[[int], None]


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json_text(value)


TYPES = {
    "study": pa.string(),
    "judgment_id": pa.int64(),
    "item": pa.string(),
    "item_is_attention_check": pa.bool_(),
    "rater_id": pa.int64(),
    "rater_kind": pa.string(),
    "rater_external_id": pa.string(),
    "rater_name": pa.string(),
    "rater_excluded": pa.bool_(),
    "trial": pa.int32(),
    "status": pa.string(),
    "value": pa.string(),
    "value_label": pa.string(),
    "numeric": pa.float64(),
    "chosen_candidates": pa.list_(pa.string()),
    "chosen_candidate_provenance": pa.string(),
    "shown_order": pa.string(),
    "duration_ms": pa.int64(),
    "too_fast": pa.bool_(),
    "attention_passed": pa.bool_(),
    "created_at": pa.timestamp("us", tz="UTC"),
    "provenance": pa.string(),
}
SCHEMA = pa.schema(
    [pa.field(name, TYPES[name]) for name in COLUMNS],
    metadata={"funnybone.schema": SCHEMA_VERSION, "funnybone.version": funnybone.__version__},
)
PARQUET_CELLS = Cells(
    scalar=_text,
    json=_json_text,
    flag=lambda value: value,
    when=lambda moment: moment,
    keys=lambda keys: keys,
)


def write_parquet(
    study: Study, out: str | IO[bytes], *, rater_subset: Iterable[int] = (), progress: Progress | None = None
) -> int:
    """Write the study's judgments as Parquet to a path or binary stream; return the number written."""
    data = load_study(study, rater_subset=rater_subset)
    schema = SCHEMA.with_metadata({**SCHEMA.metadata, b"funnybone.study": study.slug.encode()})
    n = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        batch: list[tuple] = []
        for row in judgment_rows(data, PARQUET_CELLS):
            batch.append(row)
            if len(batch) == ROW_GROUP:
                writer.write_table(_table(batch, schema))
                n += len(batch)
                batch = []
                if progress is not None:
                    progress(n)
        if batch or n == 0:
            writer.write_table(_table(batch, schema))
            n += len(batch)
    if progress is not None:
        progress(n)
    return n


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)
