"""The operator-wide watermark: planned with every batch, folded once a batch's shares have all
committed, carried to an idle operator by tick events, and timers kept per key group.

No Spark import: the per-query helper process calls `plan_watermarks` and `advance`, the
executor workers `share_watermark`, `load_timers` and `timer_writes`, tests call them directly.
Every value lives in the queue store, so a replayed batch sees the watermark it was planned with
(docs/state.md, "Event time, windows and the watermark")."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from elastream.model.batch import EventBatch, position
from elastream.model.events import Event
from elastream.model.grouping import group_range, key_group
from elastream.model.pipeline import Pipeline
from elastream.model.state import StateWrite, Timer, decode_value, encode_value
from elastream.runtime.queues.base import ControlTable, DataPath, StateStore, TaskStore
from elastream.runtime.queues.records import BatchPlan, QueueError

END_OF_INPUT = "end_of_input"  # meta: the sources will append nothing more (flush: W = +inf)
TICK_KEY = "\x00tick"  # the key of a tick event (it carries no data, only a batch to run)
TICK_PRODUCER = "~tick:"  # + operator: the producer of its ticks (not counted as input)
TICK_NODE = (1 << 19) - 1  # the node number of tick events' roots (no pipeline node has it)
HISTORY = 64  # the output watermarks an operator keeps for the later ones (`Watermarks.history`)


def meta_key(op: str) -> str:
    return f"watermark:{op}"


def slot_key(replica: int) -> str:
    """State key (group 0) where an event-time assigner's replica leaves [batch start, largest
    event time of its outputs] for its latest share."""
    return f"\x00max:{replica}"


def timers_key(group: int) -> str:
    """State key (in `group`) of the group's pending timers."""
    return f"\x00timers:{group}"


@dataclass
class Watermarks:
    """One operator's watermark record (meta `watermark:OP`, written only by its query's
    planner): `out` is the watermark of its output queue (its committed batches' input
    watermark, or for an assigner the largest event time it emitted minus the bound), `last_in`
    the input watermark given to its latest planned batch, `plans` the batches planned and not
    yet folded, start -> [end, previous watermark, watermark, replicas], and `folded_end` the
    offset up to which every batch has committed and been folded. `history` holds [out, {later
    operator: its queue's length when `out` was reached}]: a later operator may use an `out`
    only for a batch that ends at or after that length (the events already queued for it were
    made before the promise and may be older)."""

    out: float = -math.inf
    last_in: float = -math.inf
    folded_end: int = 0
    plans: dict[str, list[Any]] = field(default_factory=dict)
    history: list[list[Any]] = field(default_factory=list)

    def reached(self, store: DataPath, pipeline: Pipeline, op: str) -> None:
        """Note the current `out` with the lengths of the later operators' queues now."""
        later = [s for s in pipeline.successors(op) if s in pipeline.operator_names]
        self.history.append([self.out, {s: store.latest(s) for s in later}])
        if len(self.history) > HISTORY:  # thin the older half out, keep the newest
            half = len(self.history) // 2
            self.history = self.history[:half:2] + self.history[half:]

    def usable(self, op: str, end: int) -> float:
        """The largest `out` a batch of the later operator `op` ending at `end` may use."""
        best = -math.inf
        for out, lengths in self.history:
            if lengths.get(op, math.inf) <= end:
                best = max(best, out)
        return best

    @classmethod
    def load(cls, store: ControlTable, op: str) -> Watermarks:
        raw = store.meta(meta_key(op))
        return cls(**raw) if raw else cls()

    def save(self, store: ControlTable, op: str) -> None:
        store.set_meta(meta_key(op), self.__dict__)


def _committed(store: DataPath, op: str, start: int, end: int, replicas: int) -> bool:
    """Whether every share of the batch committed (a released plan: Spark committed it)."""
    if store.planned_end(op, start) is None:
        return True
    return all(store.share_done(op, f"{start}-{end}", j) for j in range(replicas))


def _emitted_max(store: StateStore, op: str, start: int, replicas: int) -> float:
    """An assigner's largest output event time in its batch from `start` (its shares' slots)."""
    blobs = store.read_state(op, [(0, slot_key(j)) for j in range(replicas)])
    best = -math.inf
    for blob in blobs.values():
        at, value = decode_value(blob)
        if at == start and value is not None:
            best = max(best, float(value))
    return best


def fold(store: TaskStore, pipeline: Pipeline, op: str, wm: Watermarks) -> None:
    """Fold the planned batches that have committed, in order, into `wm.out`; an assigner whose
    input is all consumed after the end of input goes to +inf (the final flush)."""
    spec = pipeline.operator(op)
    before = wm.out
    for start in sorted(wm.plans, key=int):
        end, _, w, replicas = wm.plans[start]
        if not _committed(store, op, int(start), end, replicas):
            break
        if spec.event_time is None:
            wm.out = max(wm.out, w)
        else:
            top = _emitted_max(store, op, int(start), replicas)
            wm.out = max(wm.out, top - spec.event_time.out_of_orderness_s)
        wm.folded_end = end
        del wm.plans[start]
    if wm.out > before:
        wm.reached(store, pipeline, op)
    done = not wm.plans and store.latest(op) == wm.folded_end
    flush = spec.event_time is not None and done and store.meta(END_OF_INPUT, False)
    if flush and wm.out < math.inf:  # the finite one stays in the history (reopen_after_flush)
        wm.out = math.inf
        wm.reached(store, pipeline, op)


def input_watermark(store: ControlTable, pipeline: Pipeline, op: str, end: int) -> float:
    """The minimum over the operator's inputs of the output watermark each had when the
    operator's queue was at most `end` long (an assigner has none: -inf)."""
    if pipeline.operator(op).event_time is not None:
        return -math.inf
    return min(Watermarks.load(store, p).usable(op, end) for p in pipeline.predecessors(op))


def plan_watermarks(
    store: TaskStore, pipeline: Pipeline, op: str, plans: Sequence[BatchPlan]
) -> None:
    """Record the input watermark of every newly planned batch (a replayed batch keeps the one
    it was planned with): the larger of the last one given and the inputs' current minimum."""
    wm = Watermarks.load(store, op)
    fold(store, pipeline, op, wm)
    for plan in plans:
        if str(plan.start) in wm.plans or plan.end <= wm.folded_end:
            continue
        w = max(wm.last_in, input_watermark(store, pipeline, op, plan.end))
        wm.plans[str(plan.start)] = [plan.end, wm.last_in, w, plan.replicas]
        wm.last_in = w
    wm.save(store, op)


def advance(store: TaskStore, pipeline: Pipeline, op: str) -> None:
    """Between batches (Spark's `latestOffset`): fold what committed, and if the operator is
    idle (nothing queued, nothing running) while its input watermark rose, append one tick
    event so that a batch runs with the new watermark and fires its timers."""
    wm = Watermarks.load(store, op)
    before = (wm.out, wm.folded_end, len(wm.plans))
    fold(store, pipeline, op, wm)
    if (wm.out, wm.folded_end, len(wm.plans)) != before:
        wm.save(store, op)
    if wm.plans or store.latest(op) != wm.folded_end:
        return
    spec = pipeline.operator(op)
    end = store.latest(op)
    if spec.event_time is None and input_watermark(store, pipeline, op, end) > wm.last_in:
        producer = TICK_PRODUCER + op
        n = store.produced(op, producer)
        tick = Event(n, TICK_KEY, time.time(), None, position(TICK_NODE, n))
        store.append(op, [tick], producer, n)


def share_watermark(store: ControlTable, op: str, plan: BatchPlan) -> tuple[float, float]:
    """(previous batch's, this batch's) input watermark, as planned."""
    entry = Watermarks.load(store, op).plans.get(str(plan.start))
    if entry is None or entry[0] != plan.end:
        raise QueueError(f"operator {op!r}: no watermark recorded for the batch {plan.batch}")
    return float(entry[1]), float(entry[2])


def without_ticks(events: EventBatch) -> EventBatch:
    """The share's data events (its tick events dropped: they only made the batch run)."""
    keys = events.keys
    if TICK_KEY not in keys:
        return events
    return events.take([k for k, key in enumerate(keys) if key != TICK_KEY])


def load_timers(
    store: StateStore, op: str, groups: int, plan: BatchPlan, replica: int
) -> dict[int, list[Timer]]:
    """The pending timers of the key groups this replica owns in the batch, by group."""
    owned = group_range(replica, plan.replicas, groups)
    blobs = store.read_state(op, [(g, timers_key(g)) for g in owned])
    return {
        g: [Timer.of(r) for r in decode_value(blobs[timers_key(g)])]
        for g in owned
        if timers_key(g) in blobs
    }


def due(timers: dict[int, list[Timer]], watermark: float) -> list[Timer]:
    """The timers the watermark passed (at < watermark), in (time, event id) order."""
    fired = [t for ts in timers.values() for t in ts if t.at < watermark]
    return sorted(fired, key=lambda t: (t.at, t.event.id))


def timer_writes(
    timers: dict[int, list[Timer]], fired: Iterable[Timer], new: Iterable[Timer], groups: int
) -> list[StateWrite]:
    """The timer lists to commit: each group's pending timers minus the fired ones plus the new
    ones (a timer of the same event and time once), for the groups that changed."""
    gone = {(t.at, t.event.id) for t in fired}
    lists = {g: [t for t in ts if (t.at, t.event.id) not in gone] for g, ts in timers.items()}
    changed = {g for g, ts in timers.items() if len(lists[g]) != len(ts)}
    seen = {(t.at, t.event.id) for ts in lists.values() for t in ts}
    for t in new:
        if (t.at, t.event.id) not in seen:
            seen.add((t.at, t.event.id))
            g = key_group(t.event.key, groups)
            lists.setdefault(g, []).append(t)
            changed.add(g)
    return [
        StateWrite(
            g, timers_key(g), encode_value([t.record() for t in lists[g]]) if lists[g] else None
        )
        for g in sorted(changed)
    ]


def emitted_max(outputs: dict[str, EventBatch], time_field: str) -> float | None:
    """The largest event time (`time_field`) among a share's outputs, None if none has one."""
    times = [
        float(p[time_field])
        for batch in outputs.values()
        for p in batch.payloads()
        if isinstance(p, dict) and isinstance(p.get(time_field), int | float)
    ]
    return max(times) if times else None


def declare_end_of_input(store: ControlTable) -> None:
    """The sources append nothing more: the assigners' watermarks go to +inf once their input
    is consumed, and every held event and timer fires (Flink's drain)."""
    store.set_meta(END_OF_INPUT, True)


def flushed(store: ControlTable, pipeline: Pipeline) -> bool:
    """Whether every watermarked operator's output watermark has reached +inf."""
    ops = [op for op in pipeline.operator_names if pipeline.watermarked(op)]
    return all(Watermarks.load(store, op).out == math.inf for op in ops)


def reopen_after_flush(store: TaskStore, pipeline: Pipeline) -> None:
    """A resumed run whose predecessor declared the end of input: the final flush's +inf is
    taken back, so that the new events are not all late. Every operator's watermark returns to
    the largest finite one it reached (in topological order: an operator's input watermark is
    recomputed from its inputs' restored ones). Windows the flush closed stay closed: an event
    of such a window arriving now opens it again (Flink's drain has the same rule)."""
    if not store.meta(END_OF_INPUT, False):
        return
    for op in pipeline.topological_order:
        if op not in pipeline.operator_names or store.meta(meta_key(op)) is None:
            continue
        wm = Watermarks.load(store, op)
        wm.history = [h for h in wm.history if h[0] != math.inf]
        if wm.out == math.inf:
            wm.out = max((h[0] for h in wm.history), default=-math.inf)
        if wm.last_in == math.inf:
            wm.last_in = input_watermark(store, pipeline, op, store.latest(op))
        wm.save(store, op)
    store.set_meta(END_OF_INPUT, False)
