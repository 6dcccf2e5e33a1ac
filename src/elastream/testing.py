"""Unit-test a pipeline's operators without Spark: in-memory sources, collecting sinks, and the
operators applied in process, in topological order, by the runtime's own operator code."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from elastream.model.batch import EventBatch
from elastream.model.events import Event
from elastream.model.pipeline import Pipeline, TopologyError
from elastream.model.state import KeyedState
from elastream.runtime.operators import apply_operator, operator_context


@dataclass(frozen=True)
class InMemorySource:
    """A source's events from a list: event k has root the source's position k (as a run's
    source event), payload `payloads[k]`, key `keys[k]` (None: the root's digits, as for an
    external row without a key column) and ts `ts`."""

    payloads: Sequence[Any]
    keys: Sequence[str] | None = None
    ts: float = 0.0

    def batch(self, pipeline: Pipeline, source: str) -> EventBatch:
        if self.keys is not None and len(self.keys) != len(self.payloads):
            raise ValueError(
                f"source {source!r}: {len(self.keys)} keys for {len(self.payloads)} payloads"
            )
        roots = pipeline.source_roots(source, np.arange(len(self.payloads), dtype=np.int64))
        keys = [str(r) for r in roots] if self.keys is None else [str(k) for k in self.keys]
        return EventBatch.of(roots, keys, self.ts, list(self.payloads))


@dataclass
class CollectingSink:
    """What reached one sink, in arrival order."""

    events: list[Event] = field(default_factory=list)

    @property
    def payloads(self) -> list[Any]:
        return [e.payload for e in self.events]

    @property
    def keys(self) -> list[str]:
        return [e.key for e in self.events]


@dataclass
class InMemoryRun:
    """The sinks' events, and the events an operator failed on (operator -> messages)."""

    sinks: dict[str, CollectingSink]
    errors: dict[str, list[str]]

    def __getitem__(self, sink: str) -> CollectingSink:
        return self.sinks[sink]


def run_in_memory(
    pipeline: Pipeline,
    sources: Mapping[str, InMemorySource | Iterable[Any]],
    *,
    batch_size: int = 100,
    out_dir: str | None = None,
) -> InMemoryRun:
    """Every source's events (an InMemorySource, or a list of payloads) through the operators in
    topological order, in batches of `batch_size`, as the runtime applies them: the same ids,
    routes, state and error isolation (an event that makes its operator raise is set aside with
    its message, the rest go on). `out_dir` replaces `{out}` in operator params (None: a
    temporary folder)."""
    missing = sorted(set(pipeline.source_names) - set(sources))
    unknown = sorted(set(sources) - set(pipeline.source_names))
    if missing or unknown:
        raise TopologyError(
            f"pipeline {pipeline.name!r}: in-memory sources missing for {missing or 'none'}, "
            f"unknown {unknown or 'none'}"
        )
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="elastream-testing-") as folder:
            return _run(pipeline, sources, batch_size, folder)
    return _run(pipeline, sources, batch_size, out_dir)


def _run(
    pipeline: Pipeline,
    sources: Mapping[str, InMemorySource | Iterable[Any]],
    batch_size: int,
    out_dir: str,
) -> InMemoryRun:
    inbox: dict[str, list[EventBatch]] = defaultdict(list)
    for name, given in sources.items():
        source = given if isinstance(given, InMemorySource) else InMemorySource(list(given))
        for target in pipeline.successors(name):
            inbox[target].append(source.batch(pipeline, name))
    errors: dict[str, list[str]] = {}
    for name in pipeline.topological_order:
        ctx = operator_context(pipeline, name, out_dir)
        stored: dict[str, bytes] = {}  # a stateful operator's committed state, key -> value
        failed: list[str] = []
        batch = _queued(inbox.pop(name, []))
        for start in range(0, len(batch), batch_size):
            part = batch.slice(start, min(start + batch_size, len(batch)))
            state = None if ctx.spec.stateless else _state(ctx.spec, part, stored)
            applied = apply_operator(ctx, part, state)
            for write in state.writes() if state is not None else ():
                if write.value is None:
                    stored.pop(write.key, None)
                else:
                    stored[write.key] = write.value
            failed += [applied.errors[k] for k in sorted(applied.errors)]
            for target, columns in applied.outputs.items():
                inbox[target].append(columns)
        if failed:
            errors[name] = failed
    sinks = {s: CollectingSink(_queued(inbox.pop(s, [])).events()) for s in pipeline.sink_names}
    return InMemoryRun(sinks, errors)


def _state(spec: Any, batch: EventBatch, stored: dict[str, bytes]) -> KeyedState:
    keys = sorted(set(batch.keys))
    committed = {k: stored[k] for k in keys if k in stored}
    return KeyedState(spec.name, spec.key_groups, keys, committed)


def _queued(parts: list[EventBatch]) -> EventBatch:
    """What a queue holds: the batches appended, one after another, each event's id its
    offset."""
    batch = EventBatch.concat(parts) if parts else EventBatch.empty()
    return batch.with_positions(np.arange(len(batch), dtype=np.int64))


__all__ = ["CollectingSink", "InMemoryRun", "InMemorySource", "run_in_memory"]
