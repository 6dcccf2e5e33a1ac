"""The columns a delivering sink writes, settled once: the payload's own (typed), then elastream's
`_elastream_id`, `_elastream_root`, `_elastream_key`, `_elastream_ts` unless `metadata: false`;
kept across batches and a resumed run by `SchemaKeeper` (docs/sources-sinks.md)."""

from __future__ import annotations

import base64
import json
import logging

import numpy as np
import pyarrow as pa

from elastream.model.batch import BLOB, KEY, PREFIX, ROOT, TS, VALUE, EventBatch, unpack
from elastream.model.endpoints import SinkSpec
from elastream.runtime.queues import ControlTable

ID = f"{PREFIX}id"
METADATA_FIELDS = (
    pa.field(ID, pa.int64()),
    pa.field(ROOT, pa.int64()),
    pa.field(KEY, pa.string()),
    pa.field(TS, pa.float64()),
)  # what `metadata` adds, in this order
log = logging.getLogger(__name__)


class SinkError(RuntimeError):
    """A sink that cannot deliver; the message names the sink and the cause."""


class SinkColumnsError(SinkError):
    """A batch that does not fit a sink's declared columns: trying again cannot help."""


def sink_table(batch: EventBatch, first: int, metadata: bool) -> pa.Table:
    """What a sink writes for the events at offsets [first, first + len(batch)): the payload's
    columns (non-row payloads as `value`, untypable ones as JSON text in `payload`), then, with
    `metadata`, elastream's id (the offset), root, key and timestamp."""
    data = batch.data
    if BLOB in data.column_names:
        text = [json.dumps(unpack(b), default=str) for b in data.column(BLOB).to_pylist()]
        data = pa.table({"payload": pa.array(text, pa.string())})
    elif VALUE in data.column_names:
        data = data.rename_columns(["value"])
    if metadata:
        ids = pa.array(np.arange(first, first + len(batch), dtype=np.int64))
        for name, column in (
            (ID, ids),
            (ROOT, batch.table.column(ROOT)),
            (KEY, batch.table.column(KEY)),
            (TS, batch.table.column(TS)),
        ):
            data = data.append_column(name, column)
    return data


class SchemaKeeper:
    """A sink's columns: declared (`schema`, Spark DDL), else the first batch's, recorded in the
    store so a resumed run keeps them. Each batch is cast to them; a batch with new columns or
    types that cannot be cast widens them (recorded, with a warning: readers of the earlier
    files see those columns as null)."""

    def __init__(self, spec: SinkSpec, store: ControlTable, declared: pa.Schema | None) -> None:
        self.spec = spec
        self.store = store
        self.key = f"sink_schema:{spec.name}"
        self.schema = declared or _schema_from_meta(store.meta(self.key))
        self.declared = declared is not None

    def fit(self, table: pa.Table) -> pa.Table:
        if self.schema is None:
            self._record(_no_null_types(table.schema))
        target = self.schema
        assert target is not None
        if self.declared:
            return _cast(table, target, self.spec.name)
        try:
            return _cast(table, target, self.spec.name)
        except SinkColumnsError:
            widened = pa.unify_schemas([target, table.schema], promote_options="permissive")
            log.warning(
                "sink %r: its columns change from %s to %s", self.spec.name, target, widened
            )
            self._record(_no_null_types(widened))
            return _cast(table, widened, self.spec.name)

    def _record(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.store.set_meta(self.key, base64.b64encode(schema.serialize().to_pybytes()).decode())


def _schema_from_meta(value: str | None) -> pa.Schema | None:
    if value is None:
        return None
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(value)))


def _no_null_types(schema: pa.Schema) -> pa.Schema:
    """Columns of Arrow's null type (no value seen yet) written as text."""
    return pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in schema])


def _cast(table: pa.Table, schema: pa.Schema, sink: str) -> pa.Table:
    """`table` with exactly `schema`'s columns: missing ones null, extra ones refused."""
    extra = [n for n in table.column_names if schema.get_field_index(n) < 0]
    if extra:
        raise SinkColumnsError(f"sink {sink!r}: columns {extra} are not among its columns")
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(len(table), f.type)
        for f in schema
    ]
    try:
        return pa.Table.from_arrays(
            [c.cast(f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SinkColumnsError(f"sink {sink!r}: a batch does not fit its columns ({exc})") from None
