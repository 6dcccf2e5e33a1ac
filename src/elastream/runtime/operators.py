"""Applying an operator function to a batch of events, the same on every engine: outputs get
deterministic ids and routes, and a failing batch is retried event by event so that only the
event that breaks it is set aside. A stateful operator's function also gets `state=` (a
`KeyedState`); the writes of a failed call are undone."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from elastream.model.events import Emit, Event, Outcome, OutcomeKind, derived_id
from elastream.model.pipeline import DEFAULT_STREAM, OperatorSpec
from elastream.model.state import KeyedState

OUT_PLACEHOLDER = "{out}"  # in an operator's params: the run's output directory


@dataclass(frozen=True)
class OperatorContext:
    """Everything a replica needs, rebuilt once per worker process from the store's metadata."""

    spec: OperatorSpec
    function: Callable[..., Iterable[Emit]]
    params: dict[str, Any]
    routes: dict[str, tuple[str, ...]]
    t_out: float | None


def call(ctx: OperatorContext, events: list[Event], state: KeyedState | None) -> list[Outcome]:
    """One call of the function (with `state=` for a stateful operator) and its outcomes."""
    if state is None:
        return outcomes_for(ctx, events, list(ctx.function(events, **ctx.params)))
    return outcomes_for(ctx, events, list(ctx.function(events, state=state, **ctx.params)))


def apply_operator(
    ctx: OperatorContext, events: list[Event], state: KeyedState | None = None
) -> tuple[list[Outcome], list[tuple[str, str, str]]]:
    """Call the function on the batch; if it fails, undo its state writes and call it event by
    event so that only the event that breaks it is set aside (outcome 'error', message kept),
    nothing else is lost."""
    if not events:
        return [], []
    mark = state.mark() if state is not None else None
    try:
        return call(ctx, events, state), []
    except Exception:  # the batch failed: find the culprit event by event
        if state is not None:
            state.rollback(mark)
        return apply_one_by_one(ctx, events, state)


def apply_one_by_one(
    ctx: OperatorContext, events: list[Event], state: KeyedState | None = None
) -> tuple[list[Outcome], list[tuple[str, str, str]]]:
    """Each event alone; one that still fails gets outcome 'error' and its message is kept
    (and its state writes are undone)."""
    outcomes: list[Outcome] = []
    errors: list[tuple[str, str, str]] = []
    for event in events:
        mark = state.mark() if state is not None else None
        try:
            outcomes += call(ctx, [event], state)
        except Exception as exc:  # recorded as this event's outcome
            if state is not None:
                state.rollback(mark)
            message = f"operator {ctx.spec.name!r}, event {event.id}: {type(exc).__name__}: {exc}"
            outcomes.append(Outcome(event.id, event.root, OutcomeKind.ERROR))
            errors.append((event.id, message, event.to_json()))
    return outcomes, errors


def outcomes_for(ctx: OperatorContext, events: list[Event], emits: list[Emit]) -> list[Outcome]:
    """Attach each output to its input event, give it a deterministic id and route it."""
    by_parent: dict[str, list[tuple[str, Event]]] = {e.id: [] for e in events}
    emitted = dict.fromkeys(by_parent, 0)
    for emit in emits:
        if not isinstance(emit, Emit) or emit.parent.id not in by_parent:
            raise TypeError(
                f"operator {ctx.spec.name!r} returned {emit!r}: expected event.emit(...) "
                f"of an event of this batch"
            )
        stream = emit.stream or DEFAULT_STREAM
        targets = ctx.routes.get(stream)
        if targets is None:
            known = ", ".join(sorted(ctx.routes))
            raise KeyError(
                f"operator {ctx.spec.name!r} emitted to unknown stream {stream!r} "
                f"(its streams: {known})"
            )
        parent = emit.parent
        child = Event(
            derived_id(parent.id, ctx.spec.name, emitted[parent.id]),
            emit.key if emit.key is not None else parent.key,
            parent.ts,
            emit.payload,
            parent.root,
        )
        emitted[parent.id] += 1
        by_parent[parent.id].extend((target, child) for target in targets)
    return [
        Outcome(
            e.id,
            e.root,
            OutcomeKind.PROCESSED if by_parent[e.id] else OutcomeKind.FILTERED,
            tuple(by_parent[e.id]),
        )
        for e in events
    ]
