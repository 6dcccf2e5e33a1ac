"""Applying an operator function to a batch of events, the same on every engine: outputs get
deterministic ids and routes, and a failing batch is retried event by event so that only the
event that breaks it is set aside. A stateful operator's function also gets `state=` (a
`KeyedState`); the writes of a failed call are undone.

The batch travels column by column (`EventColumns`): a vectorized operator (`vectorized: true`)
gets the columns and returns `columns.emit(...)` outputs, so no Python object is made per event;
any other operator gets a list of `Event`s and returns `event.emit(...)` outputs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from elastream.model.events import (
    ColumnEmit,
    Emit,
    Event,
    EventColumns,
    Outcome,
    OutcomeKind,
    derived_id,
    derived_ids,
)
from elastream.model.pipeline import (
    DEFAULT_STREAM,
    OperatorSpec,
    Pipeline,
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
    function: Callable[..., Iterable[Emit] | Iterable[ColumnEmit]]
    params: dict[str, Any]
    routes: dict[str, tuple[str, ...]]
    t_out: float | None


def operator_context(
    pipeline: Pipeline, name: str, out_dir: str, t_out: float | None = None
) -> OperatorContext:
    """Operator `name`'s context: its function imported (a stateful one checked for `state=`),
    `{out}` in its string params replaced by `out_dir`, its routes."""
    spec = pipeline.operator(name)
    params = {
        k: v.replace(OUT_PLACEHOLDER, out_dir) if isinstance(v, str) else v
        for k, v in spec.params.items()
    }
    function = load_callable(spec.function, f"operator {name!r} function")
    check_state_parameter(spec, function)
    return OperatorContext(spec, function, params, pipeline.routes(name), t_out)


@dataclass(frozen=True)
class Applied:
    """What an operator did with a batch of n rows: per target queue, its outputs column-wise
    and the input row of each (`parents`); per input row, how many distinct outputs it had
    (`emitted`); the rows it failed on alone, with their messages (`errors`)."""

    outputs: dict[str, EventColumns]
    parents: dict[str, list[int]]
    emitted: list[int]
    errors: dict[int, str]

    @property
    def n_out(self) -> int:
        return sum(len(c) for c in self.outputs.values())

    def fates(self, batch: EventColumns) -> dict[OutcomeKind, list[str]]:
        """The roots of the rows by fate: processed (with an output), filtered, error."""
        roots, emitted, errors = batch.roots, self.emitted, self.errors
        fates: dict[OutcomeKind, list[str]] = {
            OutcomeKind.PROCESSED: [r for k, r in enumerate(roots) if emitted[k]],
            OutcomeKind.FILTERED: [
                r for k, r in enumerate(roots) if not emitted[k] and k not in errors
            ],
        }
        if errors:
            fates[OutcomeKind.ERROR] = [roots[k] for k in sorted(errors)]
        return fates

    def outcomes(self, batch: EventColumns) -> list[Outcome]:
        """Per input row, its Outcome with its outputs as Events (for callers that look at single
        events: the simulator's profiling, tests)."""
        per_row: list[list[tuple[str, Event]]] = [[] for _ in batch.ids]
        for target, children in self.outputs.items():
            for parent, child in zip(self.parents[target], children.events(), strict=True):
                per_row[parent].append((target, child))
        return [
            Outcome(
                batch.ids[k],
                batch.roots[k],
                OutcomeKind.ERROR
                if k in self.errors
                else OutcomeKind.PROCESSED
                if self.emitted[k]
                else OutcomeKind.FILTERED,
                tuple(per_row[k]),
            )
            for k in range(len(batch))
        ]


def apply_operator(
    ctx: OperatorContext,
    batch: EventColumns,
    state: KeyedState | None = None,
    fired: frozenset = _NONE,
) -> Applied:
    """Call the function on the batch; if it fails, undo its state writes and call it event by
    event so that only the event that breaks it is set aside (its message kept), nothing else
    is lost."""
    if not len(batch):
        return Applied({}, {}, [], {})
    mark = state.mark() if state is not None else None
    try:
        return call(ctx, batch, state, fired)
    except Exception:  # the batch failed: find the culprit event by event
        if state is not None:
            state.rollback(mark)
        return apply_one_by_one(ctx, batch, state, fired)


def apply_one_by_one(
    ctx: OperatorContext,
    batch: EventColumns,
    state: KeyedState | None = None,
    fired: frozenset = _NONE,
) -> Applied:
    """Each event alone; one that still fails is recorded as an error with its message (and its
    state writes are undone)."""
    parts: list[tuple[int, Applied]] = []
    errors: dict[int, str] = {}
    for k in range(len(batch)):
        mark = state.mark() if state is not None else None
        try:
            parts.append((k, call(ctx, batch.take([k]), state, fired)))
        except Exception as exc:  # recorded as this event's outcome
            if state is not None:
                state.rollback(mark)
            name = ctx.spec.name
            errors[k] = f"operator {name!r}, event {batch.ids[k]}: {type(exc).__name__}: {exc}"
    return _merge(len(batch), parts, errors)


def call(
    ctx: OperatorContext, batch: EventColumns, state: KeyedState | None, fired: frozenset = _NONE
) -> Applied:
    """One call of the function (with `state=` for a stateful operator), its outputs routed.
    The rows whose ids are in `fired` are held events delivered again: the function gets them
    in `state.fired`, not in its events; a row the function holds back (`state.defer`) counts
    as processed, not filtered (its outputs come when it is delivered again)."""
    extra = ctx.params if state is None else {"state": state, **ctx.params}
    if ctx.spec.vectorized:
        emits = ctx.function(batch, **extra)
        return route(ctx, batch, *_flatten_columns(ctx, batch, emits))
    events = batch.events()
    if state is None:
        return route(ctx, batch, *_flatten_events(ctx, batch, list(ctx.function(events, **extra))))
    state.fired = [e for e in events if e.id in fired]
    held_before = len(state.deferred())
    emits = list(ctx.function([e for e in events if e.id not in fired], **extra))
    applied = route(ctx, batch, *_flatten_events(ctx, batch, emits))
    held = {t.event.id for t in state.deferred(held_before)}
    for k, event_id in enumerate(batch.ids):
        if event_id in held and not applied.emitted[k]:
            applied.emitted[k] = 1
    return applied


Flat = tuple[list[int], list[Any], list[str | None] | None, list[str] | str]


def _flatten_events(ctx: OperatorContext, batch: EventColumns, emits: list[Emit]) -> Flat:
    """A per-event function's `Emit`s as flat lists: parent rows, payloads, keys, streams."""
    row = {event_id: k for k, event_id in enumerate(batch.ids)}
    parents, payloads, keys, streams = [], [], [], []
    for emit in emits:
        parent = row.get(emit.parent.id) if isinstance(emit, Emit) else None
        if parent is None:
            raise TypeError(
                f"operator {ctx.spec.name!r} returned {emit!r}: expected event.emit(...) "
                f"of an event of this batch"
            )
        parents.append(parent)
        payloads.append(emit.payload)
        keys.append(emit.key)
        streams.append(emit.stream or DEFAULT_STREAM)
    single = streams[0] if streams and streams.count(streams[0]) == len(streams) else None
    return parents, payloads, keys, single or streams


def _flatten_columns(ctx: OperatorContext, batch: EventColumns, emits: Any) -> Flat:
    """A vectorized function's `ColumnEmit`s as flat lists (parents checked against the batch)."""
    if isinstance(emits, ColumnEmit):
        emits = [emits]
    parents: list[int] = []
    payloads: list[Any] = []
    keys: list[str | None] = []
    streams: list[str] = []
    for emit in emits:
        if not isinstance(emit, ColumnEmit) or len(emit.parents) != len(emit.payloads):
            raise TypeError(
                f"operator {ctx.spec.name!r} returned {type(emit).__name__}: expected "
                f"columns.emit(payloads, parents=...) with one parent row per payload"
            )
        if emit.keys is not None and len(emit.keys) != len(emit.payloads):
            raise TypeError(f"operator {ctx.spec.name!r}: emit() got keys of another length")
        if len(emit.parents) and not 0 <= min(emit.parents) <= max(emit.parents) < len(batch):
            raise TypeError(f"operator {ctx.spec.name!r}: emit() names a row not in the batch")
        parents += emit.parents
        payloads += emit.payloads
        keys += emit.keys if emit.keys is not None else [None] * len(emit.payloads)
        streams += [emit.stream or DEFAULT_STREAM] * len(emit.payloads)
    single = streams[0] if streams and streams.count(streams[0]) == len(streams) else None
    return parents, payloads, keys, single or streams


def route(
    ctx: OperatorContext,
    batch: EventColumns,
    parents: list[int],
    payloads: list[Any],
    keys: list[str | None] | None,
    streams: list[str] | str,
) -> Applied:
    """Give each output its deterministic id (the k-th output of a parent, in emit order), its
    parent's timestamp and root (and key unless it set one), and route it by its stream."""
    op, ids, n = ctx.spec.name, batch.ids, len(batch)
    # one output per row, in row order (a map, a pass-through): the parents' columns are reused
    one_each = len(parents) == n and parents == list(range(n))
    if one_each:
        emitted = [1] * n
        child_ids = derived_ids(ids, op)
    else:
        emitted = [0] * n
        child_ids = []
        for parent in parents:
            child_ids.append(derived_id(ids[parent], op, emitted[parent]))
            emitted[parent] += 1

    def inherited(column: list[Any]) -> list[Any]:
        return column if one_each else [column[p] for p in parents]

    child_keys = (
        inherited(batch.keys)
        if keys is None or all(k is None for k in keys)
        else [batch.keys[p] if k is None else k for k, p in zip(keys, parents, strict=True)]
    )
    children = EventColumns(
        child_ids, child_keys, inherited(batch.ts), payloads, inherited(batch.roots)
    )
    by_stream = {streams: range(len(parents))} if isinstance(streams, str) else _rows_by(streams)
    outputs: dict[str, list[tuple[EventColumns, list[int]]]] = defaultdict(list)
    for stream, rows in by_stream.items():
        targets = ctx.routes.get(stream)
        if targets is None:
            known = ", ".join(sorted(ctx.routes))
            raise KeyError(
                f"operator {op!r} emitted to unknown stream {stream!r} (its streams: {known})"
            )
        whole = len(rows) == len(parents)
        part = children if whole else children.take(rows)
        part_parents = parents if whole else [parents[r] for r in rows]
        for target in targets:
            outputs[target].append((part, part_parents))
    merged = {t: _concat(parts) for t, parts in outputs.items()}
    return Applied(
        {t: c for t, (c, _) in merged.items()},
        {t: p for t, (_, p) in merged.items()},
        emitted,
        {},
    )


def _rows_by(streams: Sequence[str]) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = defaultdict(list)
    for k, stream in enumerate(streams):
        rows[stream].append(k)
    return rows


def _concat(parts: list[tuple[EventColumns, list[int]]]) -> tuple[EventColumns, list[int]]:
    """Column batches (and their parent rows) one after another."""
    if len(parts) == 1:
        return parts[0]
    return EventColumns.concat([c for c, _ in parts]), [p for _, rows in parts for p in rows]


def _merge(n: int, parts: list[tuple[int, Applied]], errors: dict[int, str]) -> Applied:
    """Single-row results (row k, its Applied) as one result over the n rows of the batch."""
    emitted = [0] * n
    outputs: dict[str, list[tuple[EventColumns, list[int]]]] = defaultdict(list)
    for k, applied in parts:
        emitted[k] = applied.emitted[0]
        for target, columns in applied.outputs.items():
            outputs[target].append((columns, [k] * len(columns)))
    merged = {t: _concat(p) for t, p in outputs.items()}
    return Applied(
        {t: c for t, (c, _) in merged.items()},
        {t: p for t, (_, p) in merged.items()},
        emitted,
        errors,
    )
