"""Applying an operator function to a batch of events, the same on every engine: outputs get their
parent's root, timestamp and key (unless they set one) and are routed by stream, and a failing
batch is retried event by event so that only the event that breaks it is set aside. A stateful
operator's function also gets `state=` (a `KeyedState`); the writes of a failed call are undone.

The batch is an Arrow table (`EventBatch`): a vectorized operator (`vectorized: true`) gets its
payload columns as a `pyarrow.Table` and returns a table (one output per input row) or
`emit(table, parents=..., stream=..., key=...)` outputs, with no Python object per event; any
other operator gets a list of `Event`s and returns `event.emit(...)` outputs, gathered back into
Arrow once per batch."""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from elastream.model.batch import EventBatch, as_table, check_names, payload_table
from elastream.model.events import Emit, Event, Outcome, OutcomeKind, TableEmit
from elastream.model.pipeline import (
    DEFAULT_STREAM,
    OperatorSpec,
    Pipeline,
    TopologyError,
    check_state_parameter,
    load_callable,
)
from elastream.model.state import KeyedState

OUT_PLACEHOLDER = "{out}"  # in an operator's params: the run's output directory
_NONE: frozenset = frozenset()


@dataclass(frozen=True)
class OperatorContext:
    """Everything a replica needs, rebuilt once per worker process from the store's metadata."""

    spec: OperatorSpec
    function: Callable[..., Any]
    params: dict[str, Any]
    routes: dict[str, tuple[str, ...]]
    event_timeout_s: float | None


def operator_context(
    pipeline: Pipeline, name: str, out_dir: str, event_timeout_s: float | None = None
) -> OperatorContext:
    """Operator `name`'s context: its function imported and checked (`load_operator`), `{out}`
    in its string params replaced by `out_dir`, its routes."""
    spec = pipeline.operator(name)
    params = {
        k: v.replace(OUT_PLACEHOLDER, out_dir) if isinstance(v, str) else v
        for k, v in spec.params.items()
    }
    return OperatorContext(
        spec, load_operator(spec), params, pipeline.routes(name), event_timeout_s
    )


def load_operator(spec: OperatorSpec) -> Callable[..., Any]:
    """Import an operator's function; a stateful one must take `state=`, and a vectorized one
    written against the old column-batch contract (an `EventColumns` argument) is refused here,
    with what to change, not deep in a task."""
    function = load_callable(spec.function, f"operator {spec.name!r} function")
    check_state_parameter(spec, function)
    if spec.vectorized:
        try:
            first = next(iter(inspect.signature(function).parameters.values()), None)
        except (TypeError, ValueError):  # a builtin without a signature: let the call decide
            first = None
        if first is not None and "EventColumns" in str(first.annotation):
            raise TopologyError(
                f"operator {spec.name!r}: {spec.function!r} takes EventColumns, the old "
                "vectorized contract: it now gets a pyarrow.Table of the payload columns and "
                "returns a table (one row per input row) or elastream.emit(table, parents=...)"
            )
    return function


@dataclass(frozen=True)
class Applied:
    """What an operator did with a batch of n rows: per target queue, its outputs, the input
    row of each (`parents`) and its number among the call's outputs in emit order (`numbers`:
    the copies of one output to several targets share it); per input row, how many outputs it
    had (`emitted`); the rows it failed on alone, with their messages (`errors`)."""

    outputs: dict[str, EventBatch]
    parents: dict[str, np.ndarray]
    numbers: dict[str, np.ndarray]
    emitted: np.ndarray
    errors: dict[int, str]

    @property
    def n_out(self) -> int:
        return sum(len(c) for c in self.outputs.values())

    def fates(self, batch: EventBatch) -> dict[OutcomeKind, np.ndarray]:
        """The roots of the rows by fate: processed (with an output), filtered, error."""
        roots = batch.roots
        failed = np.zeros(len(roots), bool)
        failed[list(self.errors)] = True
        fates = {
            OutcomeKind.PROCESSED: roots[self.emitted > 0],
            OutcomeKind.FILTERED: roots[(self.emitted == 0) & ~failed],
        }
        if self.errors:
            fates[OutcomeKind.ERROR] = roots[failed]
        return fates

    def outcomes(self, batch: EventBatch) -> list[Outcome]:
        """Per input row, its Outcome with its outputs as Events (for callers that look at single
        events: the simulator's profiling, tests)."""
        per_row: list[list[tuple[str, Event]]] = [[] for _ in range(len(batch))]
        for target, children in self.outputs.items():
            parents = self.parents[target].tolist()
            numbered = children.with_positions(self.numbers[target]).events()
            for parent, child in zip(parents, numbered, strict=True):
                per_row[parent].append((target, child))
        ids, roots = _ids(batch), batch.roots.tolist()
        return [
            Outcome(ids[k], roots[k], self._kind(k), tuple(per_row[k])) for k in range(len(batch))
        ]

    def _kind(self, row: int) -> OutcomeKind:
        if row in self.errors:
            return OutcomeKind.ERROR
        return OutcomeKind.PROCESSED if self.emitted[row] else OutcomeKind.FILTERED


def _ids(batch: EventBatch) -> list[int]:
    """The rows' ids: their positions, or their row numbers in a batch never stored."""
    return batch.positions.tolist() if batch.positions is not None else list(range(len(batch)))


def apply_operator(
    ctx: OperatorContext,
    batch: EventBatch,
    state: KeyedState | None = None,
    fired: frozenset = _NONE,
) -> Applied:
    """Call the function on the batch; if it fails, undo its state writes and call it event by
    event so that only the event that breaks it is set aside (its message kept), nothing else
    is lost."""
    if not len(batch):
        return Applied({}, {}, {}, np.zeros(0, np.int64), {})
    applied = attempt(ctx, batch, state, fired)
    if isinstance(applied, Exception):  # the batch failed: find the culprit event by event
        return apply_one_by_one(ctx, batch, state, fired)
    return applied


def apply_one_by_one(
    ctx: OperatorContext, batch: EventBatch, state: KeyedState | None, fired: frozenset
) -> Applied:
    """Each event alone; one that still fails is recorded as an error with its message (and its
    state writes are undone)."""
    parts: list[tuple[int, Applied]] = []
    errors: dict[int, str] = {}
    ids = _ids(batch)
    for k in range(len(batch)):
        one = attempt(ctx, batch.take([k]), state, fired)
        if isinstance(one, Exception):  # recorded as this event's outcome
            name = ctx.spec.name
            errors[k] = f"operator {name!r}, event {ids[k]}: {type(one).__name__}: {one}"
        else:
            parts.append((k, one))
    return _merge(len(batch), parts, errors)


def attempt(
    ctx: OperatorContext, batch: EventBatch, state: KeyedState | None, fired: frozenset
) -> Applied | Exception:
    """One `call`; if it raises, its state writes are undone and the exception is returned."""
    mark = state.mark() if state is not None else None
    try:
        return call(ctx, batch, state, fired)
    except Exception as exc:  # the caller sets the batch or the event aside
        if state is not None:
            state.rollback(mark)
        return exc


def call(
    ctx: OperatorContext, batch: EventBatch, state: KeyedState | None, fired: frozenset = _NONE
) -> Applied:
    """One call of the function (with `state=` for a stateful operator), its outputs routed.
    The rows whose ids are in `fired` are held events delivered again: the function gets them
    in `state.fired`, not in its events; a row the function holds back (`state.defer`) counts
    as processed, not filtered (its outputs come when it is delivered again)."""
    extra = ctx.params if state is None else {"state": state, **ctx.params}
    if ctx.spec.vectorized:
        return route(ctx, batch, table_parts(ctx, len(batch), ctx.function(batch.data, **extra)))
    events = batch.events()
    if state is None:
        outputs = list(ctx.function(events, **extra))
        return route(ctx, batch, event_parts(ctx, events, outputs, batch.data.schema))
    state.fired = [e for e in events if e.id in fired]
    held_before = len(state.deferred())
    emits = list(ctx.function([e for e in events if e.id not in fired], **extra))
    applied = route(ctx, batch, event_parts(ctx, events, emits, batch.data.schema))
    held = {t.event.id for t in state.deferred(held_before)}
    for k, event in enumerate(events):
        if event.id in held and not applied.emitted[k]:
            applied.emitted[k] = 1
    return applied


@dataclass(frozen=True)
class Part:
    """Outputs to one stream: payload row k comes from input row parents[k]; `keys` the outputs'
    own keys (None: each keeps its parent's; a None entry: that one keeps its parent's)."""

    stream: str
    parents: np.ndarray
    payload: pa.Table
    keys: pa.Array | Sequence[str | None] | None = None


def event_parts(
    ctx: OperatorContext, events: list[Event], emits: list[Emit], like: pa.Schema | None = None
) -> list[Part]:
    """A per-event function's `Emit`s, gathered by stream into payload tables (column by
    column: one pass of C-level maps, not a Python step per output), a field named as one of
    the input's columns (`like`) typed as it was there."""
    if not emits:
        return []
    if set(map(type, emits)) != {Emit}:
        bad = next(out for out in emits if type(out) is not Emit)
        raise TypeError(
            f"operator {ctx.spec.name!r} returned {bad!r}: expected event.emit(...) "
            f"of an event of this batch"
        )
    row = dict(zip(map(id, events), range(len(events)), strict=True))
    parents_of, payloads, streams, keys = zip(*emits, strict=True)
    try:
        parents = np.fromiter(map(row.__getitem__, map(id, parents_of)), np.int64, len(emits))
    except KeyError:
        raise TypeError(
            f"operator {ctx.spec.name!r} emitted from an event not of this batch: "
            f"expected event.emit(...) of an event it was given"
        ) from None
    if streams.count(None) == len(streams):
        return [_part(DEFAULT_STREAM, parents, payloads, keys, like)]
    named = np.asarray([s or DEFAULT_STREAM for s in streams], dtype=object)
    return [
        _part(stream, parents[rows], [payloads[k] for k in rows], [keys[k] for k in rows], like)
        for stream, rows in _rows_by(named).items()
    ]


def _part(
    stream: str,
    parents: np.ndarray,
    payloads: Sequence[Any],
    keys: Sequence,
    like: pa.Schema | None = None,
) -> Part:
    given = None if keys.count(None) == len(keys) else list(keys)
    return Part(stream, parents, payload_table(payloads, like), given)


def _rows_by(streams: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of each stream, streams in first-seen order."""
    names, first, index = np.unique(streams, return_index=True, return_inverse=True)
    return {names[k]: np.flatnonzero(index == k) for k in np.argsort(first)}


def table_parts(ctx: OperatorContext, n: int, result: Any) -> list[Part]:
    """A vectorized function's result: a table (one output per input row, in order), or
    `emit(...)` outputs (one or a list), checked against the batch."""
    emits = result if isinstance(result, list | tuple) else [result]
    parts = []
    for out in emits:
        out = out if isinstance(out, TableEmit) else TableEmit(out)
        try:
            table = as_table(out.data)
        except TypeError as exc:
            raise TypeError(f"operator {ctx.spec.name!r} returned {exc}") from None
        check_names(table.column_names)
        m = table.num_rows
        if out.parents is None:
            if m != n:
                raise TypeError(
                    f"operator {ctx.spec.name!r} returned {m} rows for {n} input rows: "
                    f"name each output's input row with emit(table, parents=...)"
                )
            parents = np.arange(n, dtype=np.int64)
        else:
            parents = np.asarray(out.parents, dtype=np.int64)
            if len(parents) != m:
                raise TypeError(f"operator {ctx.spec.name!r}: {len(parents)} parents for {m} rows")
            if m and not (parents.min() >= 0 and parents.max() < n):
                raise TypeError(f"operator {ctx.spec.name!r}: emit() names a row not in the batch")
        keys = None
        if out.key is not None:
            if out.key not in table.column_names:
                raise TypeError(
                    f"operator {ctx.spec.name!r}: emit(key={out.key!r}): no such column"
                )
            keys = table.column(out.key).cast(pa.string()).combine_chunks()
        parts.append(Part(out.stream or DEFAULT_STREAM, parents, table, keys))
    return parts


def route(ctx: OperatorContext, batch: EventBatch, parts: list[Part]) -> Applied:
    """Give each output its parent's timestamp and root (and key unless it set one), and route
    it by its stream to the stream's targets."""
    n = len(batch)
    emitted = np.zeros(n, np.int64)
    outputs: dict[str, list[Routed]] = defaultdict(list)
    made = 0  # outputs so far, in emit order
    for part in parts:
        targets = ctx.routes.get(part.stream)
        if targets is None:
            known = ", ".join(sorted(ctx.routes))
            raise KeyError(
                f"operator {ctx.spec.name!r} emitted to unknown stream {part.stream!r} "
                f"(its streams: {known})"
            )
        emitted += np.bincount(part.parents, minlength=n)
        numbers = np.arange(made, made + len(part.parents), dtype=np.int64)
        made += len(part.parents)
        children = _children(batch, part)
        for target in targets:
            outputs[target].append(Routed(children, part.parents, numbers))
    return _applied(outputs, emitted, {})


class Routed(NamedTuple):
    """Outputs to one target: the batch, each one's input row and its output number."""

    batch: EventBatch
    parents: np.ndarray
    numbers: np.ndarray


def _applied(
    outputs: dict[str, list[Routed]], emitted: np.ndarray, errors: dict[int, str]
) -> Applied:
    """The routed parts per target, each target's parts one after another."""
    merged = {t: _concat(parts) for t, parts in outputs.items()}
    return Applied(
        {t: r.batch for t, r in merged.items()},
        {t: r.parents for t, r in merged.items()},
        {t: r.numbers for t, r in merged.items()},
        emitted,
        errors,
    )


def _children(batch: EventBatch, part: Part) -> EventBatch:
    """The outputs of one part as a batch: meta columns from their parents (the parents' own
    columns when each row has exactly its one output, in order)."""
    parents = part.parents
    meta = batch.table.select([0, 1, 2])
    if not (len(parents) == len(batch) and np.array_equal(parents, np.arange(len(parents)))):
        meta = meta.take(pa.array(parents))
    roots, keys, ts = meta.columns
    if part.keys is not None:
        given = part.keys
        if not isinstance(given, pa.Array | pa.ChunkedArray):
            given = pa.array(given, pa.string())
        keys = pc.coalesce(given, keys.combine_chunks())
    return EventBatch.build(roots, keys, ts, part.payload)


def _concat(parts: list[Routed]) -> Routed:
    """Routed parts one after another."""
    if len(parts) == 1:
        return parts[0]
    return Routed(
        EventBatch.concat([r.batch for r in parts]),
        np.concatenate([r.parents for r in parts]),
        np.concatenate([r.numbers for r in parts]),
    )


def _merge(n: int, parts: list[tuple[int, Applied]], errors: dict[int, str]) -> Applied:
    """Single-row results (row k, its Applied) as one result over the n rows of the batch."""
    emitted = np.zeros(n, np.int64)
    outputs: dict[str, list[Routed]] = defaultdict(list)
    made = 0
    for k, applied in parts:
        emitted[k] = applied.emitted[0]
        for target, batch in applied.outputs.items():
            parents = np.full(len(batch), k, np.int64)
            outputs[target].append(Routed(batch, parents, applied.numbers[target] + made))
        made += int(applied.emitted[0])
    return _applied(outputs, emitted, errors)


def events_batch(events: Iterable[Event]) -> EventBatch:
    """Python events as a batch whose positions are their ids (held events delivered again,
    the simulator's profiling, tests)."""
    events = list(events)
    batch = EventBatch.of(
        [e.root for e in events], [e.key for e in events], [e.ts for e in events],
        [e.payload for e in events],
    )  # fmt: skip
    return batch.with_positions(np.asarray([e.id for e in events], np.int64))
