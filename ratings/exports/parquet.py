# SPDX-License-Identifier: GPL-3.0-or-later
"""The long-format judgments as a Parquet file: typed columns, values exactly as stored.

One row per judgment, the columns of the CSV exports (``long_rows.COLUMNS``)
with Arrow types (``SCHEMA``, documented in docs/exports.md): integers stay
integers, flags are booleans with nulls where unknown, ``created_at`` is a UTC
timestamp, ``chosen_candidates`` a list of keys, and the JSON columns are the
JSON text of the stored value. pandas (``read_parquet``), R (``arrow::read_parquet``)
and Hugging Face ``datasets.load_dataset("parquet", data_files=...)`` read it as is.

Rows are written in row groups of ``ROW_GROUP`` judgments, so memory stays
bounded by one group whatever the size of the study. Each group's columns are
built from numpy buffers (``_column``), never with ``pyarrow.array`` over
Python lists: that call imports pandas the first time it runs (to ask whether
its argument is a pandas object), which alone would add about 40 MB to the
writing process. The strings of a column are encoded once per distinct text in
the group (most repeat: values, raters, provenances) and spread out with
``take``. Arrow allocates from the system allocator
(``ARROW_DEFAULT_MEMORY_POOL=system``, set in the settings): with pyarrow's
default, mimalloc, this writer's process stays about 20 MB larger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import funnybone
from annotation.models import Study

from .long_rows import COLUMNS, Cells, judgment_rows
from .study_data import load_study

ROW_GROUP = 25_000
SCHEMA_VERSION = "2"  # 2: the media column
Progress = Callable[[int], None]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


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
    "media": pa.string(),
}
NUMPY_TYPES = {pa.int32(): np.int32, pa.int64(): np.int64, pa.float64(): np.float64}
SCHEMA = pa.schema(
    [pa.field(name, TYPES[name]) for name in COLUMNS],
    metadata={"funnybone.schema": SCHEMA_VERSION, "funnybone.version": funnybone.__version__},
)
PARQUET_CELLS = Cells(
    scalar=_text,
    json=_json_text,
    flag=lambda value: value,
    when=lambda moment: (moment - EPOCH) // MICROSECOND,  # the timestamp column's stored integer
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
    arrays = [_column(column, field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _column(cells: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """One column of a row group as an Arrow array of ``kind``; None is null."""
    if pa.types.is_string(kind):
        return _strings(cells)
    if pa.types.is_list(kind):
        return _lists(cells, kind)
    if pa.types.is_timestamp(kind):
        return _fixed(cells, kind, np.int64)  # microseconds since the epoch (``PARQUET_CELLS.when``)
    if pa.types.is_boolean(kind):
        values, validity, nulls = _numbers(cells, np.bool_)
        return pa.Array.from_buffers(kind, len(cells), [validity, _bits(values)], null_count=nulls)
    return _fixed(cells, kind, NUMPY_TYPES[kind])


def _numbers(cells: Sequence[Any], dtype) -> tuple[np.ndarray, pa.Buffer | None, int]:
    """The cells as a numpy array (nulls as zero), the validity bitmap (None without nulls) and the null count."""
    if None not in cells:
        return np.fromiter(cells, dtype=dtype, count=len(cells)), None, 0
    objects = np.array(cells, dtype=object)
    null = np.equal(objects, None)
    objects[null] = 0
    return objects.astype(dtype), _bits(~null), int(null.sum())


def _bits(flags: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(flags, bitorder="little"))


def _fixed(cells: Sequence[Any], kind: pa.DataType, dtype) -> pa.Array:
    values, validity, nulls = _numbers(cells, dtype)
    return pa.Array.from_buffers(kind, len(cells), [validity, pa.py_buffer(values)], null_count=nulls)


def _strings(cells: Sequence[str | None]) -> pa.Array:
    """Texts as a string array: each distinct text encoded once, then taken for every row."""
    distinct = {text: i for i, text in enumerate(t for t in dict.fromkeys(cells) if t is not None)}
    encoded = [text.encode() for text in distinct]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    texts = pa.StringArray.from_buffers(len(encoded), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded)))
    distinct[None] = -1
    codes = np.fromiter(map(distinct.__getitem__, cells), dtype=np.int32, count=len(cells))
    missing = codes < 0
    nulls = int(missing.sum())
    validity = _bits(~missing) if nulls else None
    indices = pa.Array.from_buffers(pa.int32(), len(cells), [validity, pa.py_buffer(codes)], null_count=nulls)
    return texts.take(indices)


def _lists(cells: Sequence[list[str] | None], kind: pa.DataType) -> pa.Array:
    """Lists of texts (the chosen candidate keys) as a list array."""
    null = np.fromiter((keys is None for keys in cells), dtype=np.bool_, count=len(cells))
    offsets = np.zeros(len(cells) + 1, dtype=np.int32)
    np.cumsum([len(keys) if keys is not None else 0 for keys in cells], out=offsets[1:])
    values = _strings([key for keys in cells if keys is not None for key in keys])
    nulls = int(null.sum())
    mask = pa.Array.from_buffers(pa.bool_(), len(cells), [None, _bits(null)]) if nulls else None
    return pa.ListArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)]), values, type=kind, mask=mask
    )
