"""The micro-batch models of the Spark runtime (spark/source.py, spark/pipeline_source.py,
spark/task.py): one shared queue per operator; a micro-batch admits at most max(r, r·batch_s/et)
events from its head, splits them among the r ready replicas by the grouping and lasts its fixed
cost plus its slowest task's work (the batch is a barrier); outputs leave when the work is done,
and the batch ends after its offset commit (a share of the fixed cost).

`operator` layout (queue_model micro_batch): every operator runs its own batch loop, Eq. O1.
`pipeline` layout (queue_model pipeline): one batch loop for all operators, Eq. P1 and P2."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from elastream.model.pipeline import Grouping
from elastream.runtime.sim.operator import Cohort, Operator, Replica, Setup
from elastream.runtime.sim.split import water_fill

# As runtime/spark/pipeline_source.py's PACK_S: consecutive shares whose estimated work adds up
# to at most this run in one task (tests/unit/test_sim_pipeline.py checks they are equal).
PACK_S = 0.02


@dataclass
class Batch:
    """An operator's part of a running micro-batch: its live cohorts and who does what."""

    pieces: list[tuple[int, int]]
    replicas: list[Replica]
    counts: list[int]
    busy: list[float]  # each replica's work in it, s

    def share_work(self, every: bool) -> list[float]:
        """The work of each replica's share (`every`: empty shares too, as a watermarked
        operator's plan has one per replica; else only replicas given events)."""
        return [b for b, c in zip(self.busy, self.counts, strict=True) if every or c]


class Query(Protocol):
    """What a batch loop drives: one operator's query, or the pipeline's one query."""

    def admit(self) -> None: ...

    def waiting(self) -> bool: ...

    def begin(self, s: int) -> Schedule: ...

    def release(self, part: int) -> None: ...

    def end(self) -> None: ...


@dataclass(frozen=True)
class Schedule:
    """A started batch's timeline, in seconds from its start: it lasts `span_s`, and its parts'
    outputs leave at `releases` (ascending, within the span): `release(k)` at the k-th."""

    span_s: float
    releases: tuple[float, ...]


class BatchLoop:
    """Spark's micro-batch loop of one query, in simulated time: the processing-time trigger
    starts a batch when data waits; the batch lasts what `begin` schedules, its parts' outputs
    leave (`release`) at the schedule's times, and the next batch may start after its `end`."""

    def __init__(self, step_s: float, trigger_s: float) -> None:
        self.step_s = step_s
        self.trigger_s = trigger_s
        self.last_start = -math.inf  # when the latest batch started (seconds)
        self.last_end = -math.inf  # when it ended
        self.running = False
        self.schedule = Schedule(0.0, ())  # the running batch's
        self.elapsed_s = 0.0  # how long it has run
        self.released = 0  # how many of its parts have released their outputs

    def run(self, s: int, query: Query) -> None:
        """Step s of the query: start batches, release their parts and end them as their times
        come."""
        step_s = self.step_s
        time_left = step_s
        while time_left > 1e-12:
            if not self.running:
                query.admit()
                if not query.waiting():
                    return
                now = s * step_s + (step_s - time_left)
                wait = self._trigger_wait(now)
                if wait >= time_left:
                    return
                time_left -= wait
                self.last_start = now + wait
                self.schedule = query.begin(s)
                self.running, self.elapsed_s, self.released = True, 0.0, 0
            marks = self.schedule.releases
            due = marks[self.released] if self.released < len(marks) else self.schedule.span_s
            used = min(time_left, max(due - self.elapsed_s, 0.0))
            self.elapsed_s += used
            time_left -= used
            if due - self.elapsed_s > 1e-12:
                return
            if self.released < len(marks):
                query.release(self.released)
                self.released += 1
                continue
            query.end()
            self.running = False
            self.last_end = s * step_s + (step_s - time_left)

    def cancel(self) -> None:
        """A restart: the running batch is gone (its events with the queues)."""
        self.running = False

    def _trigger_wait(self, now: float) -> float:
        """Seconds until Spark's processing-time trigger starts the next batch, for data waiting
        at `now`. Spark triggers at multiples of trigger_s: after a batch that started at S it
        waits for the first multiple after S, unless the batch overran it, in which case the next
        one starts as soon as it ends; an idle query checks again at every multiple."""
        trigger = self.trigger_s
        if trigger <= 0:
            return 0.0
        after_last = -math.inf
        if math.isfinite(self.last_start):
            after_last = (math.floor(self.last_start / trigger + 1e-9) + 1) * trigger
        if after_last >= now:
            return after_last - now
        if abs(self.last_end - now) < 1e-9:
            return 0.0
        return math.ceil(now / trigger - 1e-9) * trigger - now


def fixed_cost(
    setup: Setup, base_s: float, tasks: int, busy: int, rng: np.random.Generator
) -> float:
    """Eq. O1: a batch's fixed cost, the query's base cost plus b per task beyond the first plus
    c per other query with a batch running now (they share the CPUs); with batch_overhead_cv,
    times a random factor of mean 1 (Eq. O2)."""
    extra = setup.batch_overhead_per_replica_s * max(0, tasks - 1)
    mean = base_s + extra + setup.batch_overhead_per_busy_s * busy
    cv = setup.batch_overhead_cv
    if cv <= 0:
        return mean
    sigma2 = math.log1p(cv * cv)  # Eq. O2: log-normal factor of mean 1 and CV cv
    return mean * float(rng.lognormal(-sigma2 / 2, math.sqrt(sigma2)))


def task_of_share(works: Sequence[float], pack_s: float = PACK_S) -> list[int]:
    """Eq. P2's packing, as the runtime packs a batch's shares into tasks: each share's task (in
    order, consecutive shares together while their work stays within `pack_s`; a larger one
    alone)."""
    tasks: list[int] = []
    load = pack_s  # the open task's work so far (none open yet)
    for work in works:
        if not tasks or work > pack_s or load + work > pack_s:
            tasks.append(tasks[-1] + 1 if tasks else 0)
            load = work
        else:
            tasks.append(tasks[-1])
            load += work
    return tasks


def pack(works: Sequence[float], pack_s: float = PACK_S) -> list[float]:
    """Eq. P2: the tasks of a pipeline batch (`task_of_share`), each task's work the sum of its
    shares'."""
    return pack_with_ends(works, pack_s)[0]


def pack_with_ends(
    works: Sequence[float], pack_s: float = PACK_S
) -> tuple[list[float], list[float]]:
    """The tasks' work (`pack`) and when each share's work is done, in seconds from its task's
    start: a task runs its shares one after the other (pipeline_source.py), each committed as it
    ends."""
    tasks: list[float] = []
    ends: list[float] = []
    for task, work in zip(task_of_share(works, pack_s), works, strict=True):
        if task == len(tasks):
            tasks.append(0.0)
        tasks[task] += work
        ends.append(tasks[task])
    return tasks, ends


class BatchOperator(Operator):
    """An operator whose replicas drain one shared queue in micro-batches: of its own query
    (`loop`, the operator layout) or of the pipeline's (`PipelineQuery`, loop None)."""

    def __init__(self, *args: Any, own_loop: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue: deque[Cohort] = deque()
        self.batch: Batch | None = None
        self.offset = 0  # events admitted to batches so far (the runtime's queue offset)
        self.base_s = self.setup.batch_overhead_by_op.get(self.name, self.setup.batch_overhead_s)
        self.warmup_s = self.setup.warmup_by_op.get(self.name, 0.0)
        self.loop = BatchLoop(self.setup.step_s, self.setup.trigger_s) if own_loop else None
        self.peers: Sequence[Operator] = ()  # the run's other operators (set by the simulator)
        self.every_share = False  # a watermarked operator: a share per replica, empty or not

    def step(self, s: int) -> None:
        self.admit()
        if not self.down and self.loop is not None:
            self.loop.run(s, self)

    # ------------------------------------------------------------------ its own query (Query)
    def waiting(self) -> bool:
        return bool(self.queue)

    def begin(self, s: int) -> Schedule:
        """Start a batch of this operator's query: its fixed cost (Eq. O1: one task per ready
        replica, the other operators' running batches) plus its busiest replica's work; its
        outputs leave when that work is done, before the commit's share of the fixed cost."""
        busy = sum(1 for p in self.peers if isinstance(p, BatchOperator) and p.batch is not None)
        batch = self.take_part(s)
        overhead = fixed_cost(self.setup, self.base_s, len(batch.replicas), busy, self.rng)
        span = overhead + max(batch.busy, default=0.0)
        return Schedule(span, (span - overhead * self.setup.batch_commit_share,))

    def release(self, part: int = 0) -> None:
        """This operator's part of the batch is done: its outputs leave (the query still
        commits its offsets before the next batch may start)."""
        batch = self.batch
        assert batch is not None
        n = sum(batch.counts)
        for rep, c, b in zip(batch.replicas, batch.counts, batch.busy, strict=True):
            rep.mu += c
            rep.busy += b
        self.size -= n
        self.processed += n
        out: dict[int, int] = {}
        for k, c in batch.pieces:
            out[k] = out.get(k, 0) + c
        if out:
            self.emit(out)

    def end(self) -> None:
        self.batch = None

    # ------------------------------------------------------------------ parts of a batch
    def admit(self) -> None:
        """Append the arrivals; with q_size, what does not fit is refused (PSPS V-B)."""
        inbox = self.inbox
        if not inbox:
            return
        self.inbox = {}
        room = (
            None
            if self.setup.queue_capacity is None
            else max(0, self.setup.queue_capacity - self.size)
        )
        refused = 0
        for k, n in sorted(inbox.items()):
            take = n if room is None else min(n, room)
            if take:
                self.queue.append([k, take])
                self.size += take
                if room is not None:
                    room -= take
            refused += n - take
        if refused:
            self.dropped_overflow += refused
            self.ledger.counts.dropped_overflow += refused

    def take_part(self, s: int) -> Batch:
        """This operator's part of a batch starting in step s: at most the admission cap from
        the head of its queue (as spark.engine.admission_cap), split among the ready replicas."""
        ready = list(self.ready)
        r = len(ready)
        et = self.measured_et or self.et
        cap = max(r, int(r * self.setup.batch_work_s / et))
        start = self.offset
        pieces, expired = self._take(cap, s)
        n = sum(c for _, c in pieces)
        if n + expired == cap and self.queue:  # as spark/source.py notes it (cap_hit_key)
            self.admission_capped = True
        counts = self._split(n, ready, start)
        for rep, c in zip(ready, counts, strict=True):
            rep.batches += int(c > 0)
        noise = self.noise(r) or [1.0] * r
        busy = [c * rep.cost * f for c, f, rep in zip(counts, noise, ready, strict=True)]
        if self.warmup_s:
            self._warm_up(ready, counts, busy)
        self.size -= expired
        self.dropped_timeout += expired
        self.ledger.counts.dropped_timeout += expired
        self.batch = Batch(pieces, ready, counts, busy)
        return self.batch

    def _warm_up(self, ready: Sequence[Replica], counts: Sequence[int], busy: list[float]) -> None:
        """Each replica's first share pays the operator's warm-up (`warmup_ms`)."""
        for j, (rep, c) in enumerate(zip(ready, counts, strict=True)):
            if c and not rep.warm:
                busy[j] += self.warmup_s
                rep.warm = True

    def replica_batches(self) -> tuple[int, ...]:
        """Per active replica, the micro-batches it served events in during t (as the Spark
        runtime's share counts)."""
        return tuple(rep.batches for rep in self.pool[: self.active])

    def _take(self, cap: int, s: int) -> tuple[list[tuple[int, int]], int]:
        """Up to `cap` events from the head; those older than t_out are dropped at no cost."""
        pieces: list[tuple[int, int]] = []
        expired = taken = 0
        q = self.queue
        while q and taken < cap:
            head = q[0]
            k, c = head
            take = min(c, cap - taken)
            if take == c:
                q.popleft()
            else:
                head[1] = c - take
            taken += take
            if s - k > self.setup.lag_limit:
                expired += take
            else:
                pieces.append((k, take))
        self.offset += taken
        return pieces, expired

    def _split(self, n: int, ready: Sequence[Replica], start: int) -> list[int]:
        """The batch's events per replica. Load balancing starts every batch from U = 0, since
        each replica has finished its share of the previous one; round-robin and Alg. 1's
        fallback start at the batch's first offset (spark/source.py)."""
        if self.spec.grouping is Grouping.LOAD_BALANCING and len(ready) > 1:
            deltas = [rep.cost / self.setup.td for rep in ready]
            return water_fill([0.0] * len(ready), deltas, n, start)
        if self.spec.grouping is Grouping.ROUND_ROBIN:
            self.rr = start % len(ready)
        return self.dispatch(n)

    def _hand_over(self, leaving: Sequence[Replica]) -> None:
        """Nothing to move: the queue belongs to the operator, not to a replica."""

    def clear(self) -> int:
        self.queue.clear()
        self.batch = None
        if self.loop is not None:
            self.loop.cancel()
        return super().clear()


class PipelineQuery:
    """The pipeline layout's one query: each batch takes every operator's part at once (so an
    operator's outputs of batch k are admitted to its successors in batch k + 1), runs the parts'
    shares as tasks (Eq. P2) and lasts

      D = o(k) + max_j w_j  (Eq. P1)

    o(k) = a + b·(k − 1) being Eq. O1 for one query of k tasks (n = 0: no other query), w_j the
    work of task j; the runtime gives every replica a task slot (local[Σ max replicas]), so the
    tasks run side by side."""

    def __init__(self, ops: Sequence[BatchOperator], setup: Setup, rng: np.random.Generator):
        self.ops = list(ops)  # in topological order, as the runtime lists its shares
        self.setup = setup
        self.rng = rng
        self.loop = BatchLoop(setup.step_s, setup.trigger_s)
        self.parts: list[BatchOperator] = []  # the operators in the running batch

    def step(self, s: int) -> None:
        self.loop.run(s, self)

    def admit(self) -> None:
        for op in self.ops:
            op.admit()

    def waiting(self) -> bool:
        return any(op.queue and not op.down for op in self.ops)

    def begin(self, s: int) -> Schedule:
        """Start a batch of every operator with queued events; each operator's outputs leave
        when its last share's work is done (each share commits as it ends, in its task after the
        shares packed before it), the fixed cost but its commit's share coming first."""
        ops = [op for op in self.ops if op.queue and not op.down]
        shares = [(op, w) for op in ops for w in op.take_part(s).share_work(op.every_share)]
        tasks, ends = pack_with_ends([w for _, w in shares])
        tasks = tasks or [0.0]  # a batch whose every event expired still runs a task
        overhead = fixed_cost(self.setup, self.setup.batch_overhead_s, len(tasks), 0, self.rng)
        first = overhead * (1.0 - self.setup.batch_commit_share)
        done = dict.fromkeys(ops, first)  # an operator whose every event expired: at once
        for (op, _), end in zip(shares, ends, strict=True):
            done[op] = max(done[op], first + end)
        self.parts = sorted(ops, key=done.__getitem__)  # stable: topological among equals
        return Schedule(overhead + max(tasks), tuple(done[op] for op in self.parts))

    def release(self, part: int) -> None:
        op = self.parts[part]
        if op.batch is not None:  # not cleared by a restart
            op.release()

    def end(self) -> None:
        for op in self.parts:
            op.end()
        self.parts = []

    def clear(self) -> None:
        """A restart: the running batch is lost with the queues (the operators clear those)."""
        self.loop.cancel()
        self.parts = []
