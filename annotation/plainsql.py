"""Plain SQL for the answer path, with model instances built as the ORM builds them.

On the crowdworker's answer path the ORM spent more CPU building each query
(its compiler, its joins, its converters) than PostgreSQL spent answering it:
0.2-0.8 ms per query against 0.03-0.06 ms for the same read written out. The
few statements every answer makes are therefore written here in SQL, with
their columns taken from the models' own fields, so a new field is read and
written without touching them, and every value goes through the fields' own
conversions both ways (JSON, dates, the backend's adapters). Nothing here
knows a table's business: that stays with the services that call it.

Row locks (``FOR UPDATE``) are added only where the database has them; SQLite
has none and serialises writers instead (``BEGIN IMMEDIATE``, see settings).
"""

from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Model


@cache
def shape(model: type[Model], alias: str) -> "Shape":
    """The model's columns under ``alias`` (built once per process)."""
    return Shape(model, alias)


class Shape:
    """One model's columns in a plain query under a table alias, and the instance built from a row of them."""

    def __init__(self, model: type[Model], alias: str):
        self.model, self.alias = model, alias
        self.fields = model._meta.concrete_fields
        self.select = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in self.fields)
        self.width = len(self.fields)
        self._attnames = [f.attname for f in self.fields]

    def build(self, row: Sequence[Any], start: int = 0) -> Model:
        """The instance from ``row[start:start + width]``, every value converted as the ORM converts it."""
        values = list(row[start : start + self.width])
        for index, converters in _converters(self.model, connection.vendor):
            for column, converter in converters:
                values[index] = converter(values[index], column, connection)
        return self.model.from_db(connection.alias, self._attnames, values)


@cache
def _converters(model: type[Model], _vendor: str) -> list[tuple[int, list]]:
    """(column index, [(column, converter), ...]) for the model's fields that need converting on this backend."""
    found = []
    for index, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if converters:
            found.append((index, [(column, converter) for converter in converters]))
    return found


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def for_update(*aliases: str, skip_locked: bool = False) -> str:
    """`` FOR UPDATE [OF aliases] [SKIP LOCKED]`` where the database locks rows, else nothing."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    clause = " FOR UPDATE"
    if aliases and features.has_select_for_update_of:
        clause += " OF " + ", ".join(aliases)
    if skip_locked and features.has_select_for_update_skip_locked:
        clause += " SKIP LOCKED"
    return clause


def fetch(sql: str, params: Sequence[Any], *shapes: Shape) -> tuple[Model, ...] | None:
    """The first row of a query selecting ``shape.select`` for each shape in turn, as instances; None for none."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    instances, start = [], 0
    for shape in shapes:
        instances.append(shape.build(row, start))
        start += shape.width
    return tuple(instances)


def insert(instance: Model) -> Model:
    """Insert a new instance in one statement and give it its id: ``objects.create`` without the ORM's compiler.

    Defaults, ``auto_now_add`` and the fields' database preparation apply as in
    ``save()``. No signal is sent: the project's ``post_save`` receivers
    (``annotation.study_changes``) leave new rows to the counts, and its callers
    insert judgments and assignments, whose other receivers nothing has.
    """
    meta = instance._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table(type(instance))} ({columns}) VALUES ({marks})"  # noqa: S608 - columns from the model
    returning = connection.features.can_return_columns_from_insert
    if returning:
        sql += f" RETURNING {connection.ops.quote_name(meta.pk.column)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        pk = cursor.fetchone()[0] if returning else connection.ops.last_insert_id(cursor, meta.db_table, meta.pk.column)
    instance.pk = pk
    instance._state.adding, instance._state.db = False, connection.alias
    return instance


def update(model: type[Model], pk: int, **values: Any) -> int:
    """``UPDATE ... SET field = value, ... WHERE pk = pk`` with each value prepared by its field; rows changed.

    Like ``QuerySet.update`` it sends no signal: a field a stored report reads is not to be written here
    (``annotation.study_changes``); the answer path writes an assignment's state and a walk's cursor.
    """
    fields = [model._meta.get_field(name) for name in values]
    assignments = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields)
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    sql = f"UPDATE {table(model)} SET {assignments} WHERE {connection.ops.quote_name(model._meta.pk.column)} = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, pk])
        return cursor.rowcount


def insert_select(
    model: type[Model],
    select: str,
    params: Sequence[Any],
    *,
    columns: Sequence[str],
    values: dict[str, Any] | None = None,
    order_by: Sequence[str] = (),
) -> int:
    """``INSERT INTO … SELECT``: rows made in the database from a query, none of them through Python; rows made.

    ``select`` yields a column per field named in ``columns``, under the field's column name
    (``item_id`` for ``item``), and the columns ``order_by`` names; rows are inserted in that
    order, so their ids follow it. A field in ``values`` takes that value in every row; every
    other field (the primary key aside) its default, prepared by the field as ``insert`` prepares
    it. Like ``insert``, no signal is sent.
    """
    meta, quote = model._meta, connection.ops.quote_name
    values = values or {}
    selected = [meta.get_field(name) for name in columns]
    constant = [meta.get_field(name) for name in values]
    prototype = model()
    rest = [f for f in meta.concrete_fields if not f.primary_key and f not in selected and f not in constant]
    constants = [f.get_db_prep_save(values[f.name], connection) for f in constant]
    constants += [f.get_db_prep_save(f.pre_save(prototype, True), connection) for f in rest]
    target = ", ".join(quote(f.column) for f in [*selected, *constant, *rest])
    picked = ", ".join([*(f"src.{quote(f.column)}" for f in selected), *["%s"] * len(constants)])
    order = f" ORDER BY {', '.join(f'src.{quote(name)}' for name in order_by)}" if order_by else ""
    sql = f"INSERT INTO {table(model)} ({target}) SELECT {picked} FROM ({select}) src{order}"  # noqa: S608 - columns from the model
    with connection.cursor() as cursor:
        cursor.execute(sql, [*constants, *params])
        return cursor.rowcount
