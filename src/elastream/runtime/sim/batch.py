"""The micro-batch model of an operator, after the Spark runtime (spark/source.py, spark/task.py):
one queue per operator; a micro-batch admits at most max(r, r·batch_s/et) events from its head,
splits them among the r ready replicas by the grouping, and lasts its fixed overhead plus the
busiest replica's work (the batch is a barrier); outputs leave when the work is done, and the
batch ends after its offset commit (a share of the fixed overhead)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elastream.model.pipeline import Grouping
from elastream.runtime.sim.operator import Cohort, Operator, Replica
from elastream.runtime.sim.split import water_fill


@dataclass
class Batch:
    """A running micro-batch: its live cohorts, who does what, and the time it still needs."""

    pieces: list[tuple[int, int]]
    replicas: list[Replica]
    counts: list[int]
    busy: list[float]
    left_s: float
    commit_s: float  # the last part of the batch, after its outputs have left
    released: bool = False  # its outputs have left


class BatchOperator(Operator):
    """An operator whose replicas drain one shared queue in micro-batches."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue: deque[Cohort] = deque()
        self.batch: Batch | None = None
        self.offset = 0  # events admitted to batches so far (the runtime's queue offset)
        self.last_start = -math.inf  # when the latest batch started (seconds)
        self.last_end = -math.inf  # when it ended
        self.overhead_s = self.setup.batch_overhead_by_op.get(
            self.name, self.setup.batch_overhead_s
        )
        self.peers: Sequence[Operator] = ()  # the run's other operators (set by the simulator)

    def step(self, s: int) -> None:
        self._admit()
        if self.down:
            return
        step_s = self.setup.step_s
        time_left = step_s
        while time_left > 1e-12:
            if self.batch is None:
                if not self.queue:
                    return
                now = s * step_s + (step_s - time_left)
                wait = self._trigger_wait(now)
                if wait >= time_left:
                    return
                time_left -= wait
                self.last_start = now + wait
                self._start_batch(s)
            batch = self.batch
            assert batch is not None
            if not batch.released:
                to_release = batch.left_s - batch.commit_s
                used = min(time_left, to_release)
                batch.left_s -= used
                time_left -= used
                if to_release - used > 1e-12:
                    return
                self._release(batch)
            used = min(time_left, batch.left_s)
            batch.left_s -= used
            time_left -= used
            if batch.left_s > 1e-12:
                return
            self.batch = None
            self.last_end = s * step_s + (step_s - time_left)

    def _trigger_wait(self, now: float) -> float:
        """Seconds until Spark's processing-time trigger starts the next batch, for data waiting
        at `now`. Spark triggers at multiples of trigger_s: after a batch that started at S it
        waits for the first multiple after S, unless the batch overran it, in which case the next
        one starts as soon as it ends; an idle query checks again at every multiple."""
        trigger = self.setup.trigger_s
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

    def _admit(self) -> None:
        """Append this step's arrivals; with q_size, what does not fit is refused (PSPS V-B)."""
        inbox = self.inbox
        if not inbox:
            return
        self.inbox = {}
        room = None if self.setup.q_size is None else max(0, self.setup.q_size - self.size)
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

    def _start_batch(self, s: int) -> None:
        ready = list(self.ready)
        r = len(ready)
        et = self.measured_et or self.et
        cap = max(r, int(r * self.setup.batch_work_s / et))  # as spark.engine.admission_cap
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
        overhead = self._overhead(r)
        commit = overhead * self.setup.batch_commit_share
        self.batch = Batch(pieces, ready, counts, busy, overhead + max(busy, default=0.0), commit)
        self.size -= expired
        self.dropped_timeout += expired
        self.ledger.counts.dropped_timeout += expired

    def replica_batches(self) -> tuple[int, ...]:
        """Per active replica, the micro-batches it served events in during t (as the Spark
        runtime's share counts)."""
        return tuple(rep.batches for rep in self.pool[: self.active])

    def _overhead(self, r: int) -> float:
        """The batch's fixed cost, Eq. O1: the operator's base cost, plus b per task beyond the
        first, plus c per other operator with a batch running now (they share the CPUs); with
        batch_overhead_cv, times a random factor of mean 1 (Eq. O2)."""
        setup = self.setup
        busy = sum(1 for p in self.peers if isinstance(p, BatchOperator) and p.batch is not None)
        extra = setup.batch_overhead_per_replica_s * max(0, r - 1)
        mean = self.overhead_s + extra + setup.batch_overhead_per_busy_s * busy
        cv = setup.batch_overhead_cv
        if cv <= 0:
            return mean
        sigma2 = math.log1p(cv * cv)  # Eq. O2: log-normal factor of mean 1 and CV cv
        return mean * float(self.rng.lognormal(-sigma2 / 2, math.sqrt(sigma2)))

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

    def _release(self, batch: Batch) -> None:
        """The batch's work is done: its outputs leave (the query still commits its offsets
        for batch.commit_s before the next batch may start)."""
        batch.released = True
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

    def _hand_over(self, leaving: Sequence[Replica]) -> None:
        """Nothing to move: the queue belongs to the operator, not to a replica."""

    def clear(self) -> int:
        self.queue.clear()
        self.batch = None
        return super().clear()
