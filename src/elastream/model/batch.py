"""A batch of events as one Arrow table: elastream's own columns, then the user's payload columns.

Every queue segment, every operator's input and output and every sink write is an `EventBatch`.
Its columns:

| column | type | what |
|---|---|---|
| `_elastream_root` | int64 | the position of the source event it descends from (`position`) |
| `_elastream_key` | string | the grouping key |
| `_elastream_ts` | float64 | when its source event entered the pipeline, s since the epoch |
| the payload | the user's | one column per payload field, typed as the source's schema says |

A payload that is not a row (a string, a number, a list) is kept in the one column
`_elastream_value`; payloads Arrow cannot hold as typed columns (a field that is an int in one
event and a string in another) in `_elastream_blob`, msgpack, one value per event. An event's id
is its position in the queue that holds it (`position(node, offset)`): it is not stored, since
the offset gives it.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import msgpack
import numpy as np
import pyarrow as pa

PREFIX = "_elastream_"
ROOT = f"{PREFIX}root"
KEY = f"{PREFIX}key"
TS = f"{PREFIX}ts"
VALUE = f"{PREFIX}value"  # the payloads, when they are not rows
BLOB = f"{PREFIX}blob"  # the payloads as msgpack, when Arrow cannot type them as columns
META = (ROOT, KEY, TS)
META_FIELDS = (
    pa.field(ROOT, pa.int64(), nullable=False),
    pa.field(KEY, pa.string(), nullable=False),
    pa.field(TS, pa.float64(), nullable=False),
)
OFFSET_BITS = 44  # an event's position: node number << 44 | offset (1.7e13 events per queue)
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


class PayloadError(ValueError):
    """A payload elastream cannot carry: the message names the field."""


def position(node: int, offsets: np.ndarray | int) -> np.ndarray | int:
    """The position of the events at `offsets` of node number `node`'s queue (a source's: its
    events in the order it offered them): an event's id, and the root of what descends from it."""
    return (node << OFFSET_BITS) | offsets


def node_of(positions: np.ndarray | int) -> np.ndarray | int:
    """The node number of a position (`position`'s inverse, first part)."""
    return positions >> OFFSET_BITS


def offset_of(positions: np.ndarray | int) -> np.ndarray | int:
    """The offset of a position (`position`'s inverse, second part)."""
    return positions & ((1 << OFFSET_BITS) - 1)


def payload_table(payloads: Sequence[Any], like: pa.Schema | None = None) -> pa.Table:
    """Python payloads as payload columns: rows (dicts) as one column per field (the union of
    every row's fields; a field a row lacks is null there), other values in `VALUE`, and
    whatever Arrow cannot type (fields of mixed types, mixed rows and values) in `BLOB`. A field
    named as one of `like` (the input's columns) takes its type where its values fit it."""
    n = len(payloads)
    rows = sum(map(isinstance, payloads, repeat(dict)))
    try:
        if rows == n and n:
            table = _rows_table(payloads)
            check_names(table.column_names)
            return table if like is None else conform(table, like)
        if rows == 0:
            return pa.table({VALUE: pa.array(payloads)})
    except _ARROW_ERRORS:
        pass
    return pa.table({BLOB: pa.array([pack(p) for p in payloads], pa.binary())})


def conform(table: pa.Table, like: pa.Schema) -> pa.Table:
    """`table` with each column named in `like` cast to its type there when both are of one
    kind (integers, floats, timestamps, dates, strings) or the column is all null: a per-event
    operator's output keeps its input's int32 or timestamp unit, which Python values would widen.
    A field the operator turned into another kind (a Redis string parsed to an int) keeps its
    own type, as does one whose values do not fit."""
    for i, name in enumerate(table.column_names):
        k = like.get_field_index(name)
        have, want = table.schema.field(i).type, like.field(k).type if k >= 0 else None
        if (
            want is None
            or have == want
            or not (pa.types.is_null(have) or _kind(have) == _kind(want))
        ):
            continue
        try:
            column = table.column(i).cast(want)
        except _ARROW_ERRORS:  # values that do not fit the input's type: their own type stands
            continue
        table = table.set_column(i, like.field(k), column)
    return table


_KINDS = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_string,
    pa.types.is_large_string,
)


def _kind(arrow_type: pa.DataType) -> int:
    """Which of _KINDS an Arrow type is (-1: none of them: never cast)."""
    return next((k for k, test in enumerate(_KINDS) if test(arrow_type)), -1)


def _rows_table(rows: Sequence[dict]) -> pa.Table:
    """Dicts as columns: Arrow's own conversion when every row has the first one's fields in
    its order (the usual case), else one column per field of their union, in first-seen order."""
    fields = rows[0].keys()
    if all(map(fields.__eq__, map(dict.keys, rows))) and list(fields) == list(rows[-1]):
        return pa.Table.from_pylist(rows)
    names = list(dict.fromkeys(name for row in rows for name in row))
    return pa.table({name: [row.get(name) for row in rows] for name in names})


def check_names(names: Sequence[str]) -> None:
    """Payload fields may not use elastream's reserved prefix (its own columns would clash)."""
    for name in names:
        if name.startswith(PREFIX):
            raise PayloadError(
                f"payload field {name!r}: names beginning with {PREFIX!r} are elastream's own"
            )


def pack(value: Any) -> bytes:
    """One payload as msgpack (dates as ISO text, decimals as floats)."""
    return msgpack.packb(value, use_bin_type=True, default=plain_value)


def unpack(blob: bytes) -> Any:
    return msgpack.unpackb(blob, raw=False, strict_map_key=False)


def plain_value(value: Any) -> Any:
    """msgpack's fallback for what it cannot store: dates as ISO text, decimals as floats."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"a payload value of type {type(value).__name__} cannot be stored: {value!r}")


def _array(values: Any, kind: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Values as an Arrow array of type `kind` (Arrow arrays kept as they are, cast if need be)."""
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values if values.type == kind else values.cast(kind)
    return pa.array(values, kind)


def as_table(data: Any) -> pa.Table:
    """What a vectorized operator returned, as an Arrow table: a table, a record batch or a
    pandas DataFrame (its index dropped)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_records"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"expected a pyarrow.Table, a pyarrow.RecordBatch or a pandas.DataFrame, "
        f"got {type(data).__name__}"
    )


class EventBatch:
    """Events as one Arrow table (see the module docstring); `positions`: each row's position
    in the queue it was read from (its id), None for a batch not yet stored."""

    __slots__ = ("positions", "table")

    def __init__(self, table: pa.Table, positions: np.ndarray | None = None) -> None:
        self.table = table
        self.positions = positions

    @classmethod
    def build(
        cls,
        roots: np.ndarray | pa.Array,
        keys: Sequence[str] | pa.Array,
        ts: np.ndarray | pa.Array | float,
        payload: pa.Table,
    ) -> EventBatch:
        """A batch of the given meta columns and payload table (of as many rows)."""
        n = len(roots)
        if isinstance(ts, int | float):
            ts = np.full(n, float(ts))
        columns = [_array(c, f.type) for c, f in zip((roots, keys, ts), META_FIELDS, strict=True)]
        meta = pa.Table.from_arrays(columns, schema=pa.schema(META_FIELDS))
        if payload.num_columns and payload.num_rows != n:
            raise PayloadError(f"{payload.num_rows} payload rows for {n} events")
        for name, column in zip(payload.column_names, payload.columns, strict=True):
            meta = meta.append_column(name, column)
        return cls(meta)

    @classmethod
    def of(
        cls,
        roots: Sequence[int] | np.ndarray,
        keys: Sequence[str],
        ts: Sequence[float] | np.ndarray | float,
        payloads: Sequence[Any],
    ) -> EventBatch:
        """A batch from Python payloads (`payload_table`)."""
        return cls.build(np.asarray(roots, np.int64), keys, ts, payload_table(payloads))

    @classmethod
    def empty(cls) -> EventBatch:
        return cls.build(np.empty(0, np.int64), [], np.empty(0), pa.table({}))

    def __len__(self) -> int:
        return self.table.num_rows

    # -- the columns ------------------------------------------------------------------------
    @property
    def roots(self) -> np.ndarray:
        return self.table.column(ROOT).to_numpy()

    @property
    def ts(self) -> np.ndarray:
        return self.table.column(TS).to_numpy()

    @property
    def keys(self) -> list[str]:
        return self.table.column(KEY).to_pylist()

    @property
    def key_column(self) -> pa.ChunkedArray:
        return self.table.column(KEY)

    @property
    def data(self) -> pa.Table:
        """The payload columns: what a vectorized operator gets."""
        return self.table.drop_columns(list(META))

    @property
    def ids(self) -> np.ndarray:
        """Each row's position (its id); only for a batch read from a queue."""
        if self.positions is None:
            raise ValueError("a batch not read from a queue has no positions")
        return self.positions

    def payloads(self) -> list[Any]:
        """The payloads as Python values: a dict per row, or the values of `VALUE`/`BLOB`."""
        names = self.table.column_names
        if BLOB in names:
            return [unpack(b) for b in self.table.column(BLOB).to_pylist()]
        if VALUE in names:
            return self.table.column(VALUE).to_pylist()
        data = self.data
        if not data.num_columns:
            return [{} for _ in range(len(self))]
        columns = [column.to_pylist() for column in data.columns]
        rows = zip(*columns, strict=True)
        return list(map(dict, map(zip, repeat(data.column_names), rows)))

    def events(self) -> list[Any]:
        """The rows as `Event`s (for per-event operator functions)."""
        from elastream.model.events import Event

        ids = self.ids.tolist() if self.positions is not None else [0] * len(self)
        return Event.rows(ids, self.keys, self.ts.tolist(), self.payloads(), self.roots.tolist())

    # -- row selection ----------------------------------------------------------------------
    def take(self, rows: Sequence[int] | np.ndarray) -> EventBatch:
        """The rows `rows`, in that order."""
        index = np.asarray(rows, dtype=np.int64)
        positions = None if self.positions is None else self.positions[index]
        return EventBatch(self.table.take(pa.array(index)), positions)

    def slice(self, lo: int, hi: int) -> EventBatch:
        positions = None if self.positions is None else self.positions[lo:hi]
        return EventBatch(self.table.slice(lo, max(0, hi - lo)), positions)

    def with_positions(self, positions: np.ndarray) -> EventBatch:
        return EventBatch(self.table, positions)

    @classmethod
    def concat(cls, parts: Sequence[EventBatch]) -> EventBatch:
        """The batches one after another; payload columns merged by name (a column missing from
        a part is null there; an int and a float column become float); parts whose columns
        cannot be merged are re-encoded from their Python payloads (`payload_table`)."""
        parts = [p for p in parts if len(p)] or list(parts[:1])
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        positions = None
        if all(p.positions is not None for p in parts):
            positions = np.concatenate([p.positions for p in parts])  # type: ignore[misc]
        table = None
        if len({p.kind for p in parts}) == 1:
            try:
                table = pa.concat_tables([p.table for p in parts], promote_options="permissive")
            except _ARROW_ERRORS:
                table = None
        if table is None:  # rows and values, or columns of clashing types: as Python values
            payloads = [v for p in parts for v in p.payloads()]
            meta = pa.concat_tables([p.table.select(list(META)) for p in parts])
            table = EventBatch.build(*meta.columns, payload_table(payloads)).table
        return cls(table, positions)

    @property
    def kind(self) -> str:
        """How the payloads are held: as rows (columns), in VALUE, or in BLOB."""
        names = self.table.column_names
        return BLOB if BLOB in names else VALUE if VALUE in names else "rows"
