"""One simulated operator: its replica pool, the grouping that feeds the replicas, their queues
of cohorts ([k, n]: n events emitted by the sources in step k), and the interval's counts.

`Operator` is the per-replica-queue model (Storm, PSPS); `BatchOperator` in `sim/batch.py` is the
micro-batch model of the Spark runtime. Both are driven one step at a time by `SimEngine`."""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from elastream.model.pipeline import Grouping, OperatorSpec
from elastream.model.snapshot import OperatorStats
from elastream.runtime.sim.ledger import Ledger
from elastream.runtime.sim.profile import FAILED, FILTERED, STREAM, OperatorProfile
from elastream.runtime.sim.split import (
    LoadBalancer,
    PartitionSplitter,
    RatioSplitter,
    apportion,
    fill_pieces,
    key_hash_weights,
    multinomial_counts,
    round_robin_counts,
)

Cohort = list[int]  # [k, n], mutable so that a partly served cohort shrinks in place
NOISE_ROWS = 256  # steps of service-time noise drawn at once


class Node(Protocol):
    """An operator or a sink: what a stream delivers cohorts {k: n} to."""

    def receive(
        self, sender: str, cohorts: dict[int, int], weight: float, service_s: float
    ) -> None: ...


@dataclass(frozen=True)
class Setup:
    """Constants every operator of a run shares."""

    step_s: float
    td: float
    lag_limit: float  # t_out in steps (inf: no timeout)
    queue_capacity: int | None
    et_noise: float
    start_delay_steps: int
    batch_overhead_s: float
    batch_work_s: float
    trigger_s: float = 0.0  # Spark's processing-time trigger (micro-batch model)
    batch_overhead_by_op: Mapping[str, float] = field(default_factory=dict)  # seconds
    batch_overhead_per_replica_s: float = 0.0  # Eq. O1's b
    batch_overhead_per_busy_s: float = 0.0  # Eq. O1's c
    batch_overhead_cv: float = 0.0  # Eq. O2: CV of a batch's cost factor
    batch_commit_share: float = 0.0  # of the fixed cost, after the outputs leave
    warmup_by_op: Mapping[str, float] = field(default_factory=dict)  # a replica's first share, s
    lb_refresh_steps: int = 0  # Alg. 1's U restarted every this many steps (0: once per td)


class Replica:
    """One replica of the pool: its own FIFO queue (per-replica model) and interval counters."""

    __slots__ = (
        "batches",
        "busy",
        "cost",
        "credit",
        "index",
        "mark",
        "mu",
        "queue",
        "rate",
        "size",
        "speed",
        "warm",
    )

    def __init__(self, index: int, speed: float, service_time_s: float, step_s: float) -> None:
        self.index = index
        self.speed = speed
        self.cost = service_time_s / speed  # et_ij: seconds per event
        self.rate = step_s / self.cost  # events served per step
        self.queue: deque[Cohort] = deque()
        self.size = 0
        self.credit = 0.0  # events this replica may still serve (carries the fraction)
        self.mu = 0  # μ_ij(t)
        self.busy = 0.0  # seconds spent serving events during t
        self.batches = 0  # micro-batches in which it served events during t (batch model)
        self.mark = 0.0  # busy at the last refresh of Alg. 1's U (lb_refresh_s)
        self.warm = False  # it has served a share (batch models: its warm-up is paid)


class Operator:
    """The per-replica-queue model: arrivals are split among the ready replicas by the grouping
    and each replica serves its own queue at 1/et_ij events per second."""

    def __init__(
        self,
        spec: OperatorSpec,
        profile: OperatorProfile,
        setup: Setup,
        ledger: Ledger,
        predecessors: Sequence[str],
        speeds: Sequence[float],
        rng: np.random.Generator,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.profile = profile
        self.setup = setup
        self.ledger = ledger
        self.rng = rng
        self.et = profile.service_time_s
        factors = [speeds[j] if j < len(speeds) else 1.0 for j in range(spec.replicas.max)]
        self.pool = [Replica(j, f, self.et, setup.step_s) for j, f in enumerate(factors)]
        self.noisy = setup.et_noise > 0
        self.noise_rows: list[list[float]] = []
        self.lag_limit = setup.lag_limit
        self.refresh_steps = setup.lb_refresh_steps
        self.bounds = (spec.replicas.min, spec.replicas.max)
        self.stateful = not spec.stateless
        self.balanced = spec.grouping is Grouping.LOAD_BALANCING
        self.lb_deltas: list[float] = []  # δ_j = et_ij / window of the ready replicas (Alg. 1)
        self.variances: dict[int, tuple[float, ...]] = {}  # active replicas -> service_time_var
        self.active = spec.replicas.start
        self.ready: list[Replica] = self.pool[: self.active]
        self.starting: dict[int, int] = {}  # replica index -> first step it serves (delayed)
        self.predecessors = tuple(predecessors)
        self.inbox: dict[int, int] = {}
        self.size = 0  # events queued (and, micro-batch, in the running batch)
        self.down = False  # restart downtime: queue, never serve
        self.service_out = 0.0
        self.plan: list[tuple[str, tuple[Node, ...], float]] = []
        self.plan_streams: list[str] = []  # the stream of each plan entry ("" filtered/failed)
        self.streams = tuple(c.stream for c in profile.channels if c.kind == STREAM)
        self.splitter: PartitionSplitter | RatioSplitter = RatioSplitter([], 1)
        self.direct: tuple[tuple[Node, ...], float] | None = None
        self.direct_stream = ""  # the stream of `direct`
        self.rr = 0
        self.turn = 0
        self.key_splitters: dict[int, PartitionSplitter] = {}
        self.lb: LoadBalancer | None = None
        self.measured_et: float | None = None
        self.ready_before: list[Replica] = []
        self.fast_mu: list[int] = []
        self.min_cap = 0
        self._ready_changed()
        self.reset_interval()
        self.rebase([0.0] * len(self.ready))

    # ------------------------------------------------------------------ wiring and counters
    def connect(self, targets: dict[str, tuple[Node, ...]], service_s: float) -> None:
        """Route every channel: streams to their target nodes; filtered/failed to the ledger.
        Channels with a zero share never get an event and are left out. `service_s` is the
        execution time along the path up to and including this operator (see Latency)."""
        self.service_out = service_s
        channels = [c for c in self.profile.channels if c.share > 0]
        self.plan = [
            (c.kind, targets.get(c.stream, ()), self.profile.stream_weight(c.stream))
            for c in channels
        ]
        self.plan_streams = [c.stream if c.kind == STREAM else "" for c in channels]
        self.stream_emitted = [0] * len(self.plan)
        shares = [c.share for c in channels]
        self.splitter = (
            PartitionSplitter(shares)
            if self.profile.unit
            else RatioSplitter(shares, self.profile.denominator)
        )
        only = channels[0] if len(channels) == 1 else None
        ratio_one = self.profile.unit or (
            only is not None and only.share == self.profile.denominator
        )
        if only is not None and only.kind == STREAM and ratio_one:
            self.direct = (self.plan[0][1], self.plan[0][2])
            self.direct_stream = only.stream

    def reset_interval(self) -> None:
        self.backlogged = False  # an event waited past the step it arrived in (steady_intervals)
        self.received = 0
        self.received_from = dict.fromkeys(self.predecessors, 0)
        self.processed = 0
        self.emitted = 0
        self.stream_emitted = [0] * len(self.plan)  # per plan entry (not counted when direct)
        self.admission_capped = False  # a micro-batch admitted its cap with events left queued
        self.dropped_timeout = 0
        self.dropped_overflow = 0
        self.dropped_restart = 0
        for rep in self.pool:
            rep.mu = 0
            rep.busy = 0.0
            rep.mark = 0.0
            rep.batches = 0

    def receive(
        self, sender: str, cohorts: dict[int, int], weight: float, service_s: float
    ) -> None:
        """Cohorts {k: n} sent by `sender` during this step join the inbox."""
        inbox = self.inbox
        if len(cohorts) == 1:  # the common case: one step's cohort
            ((k, n),) = cohorts.items()
            inbox[k] = inbox.get(k, 0) + n
        else:
            n = 0
            for k, c in cohorts.items():
                inbox[k] = inbox.get(k, 0) + c
                n += c
        self.received += n
        self.received_from[sender] += n

    # ------------------------------------------------------------------ grouping
    def rebase(self, utilization: Sequence[float]) -> None:
        """Restart Alg. 1's running U from `utilization` (one value per ready replica)."""
        if self.balanced and self.ready:
            rr = self.lb.next_rr() if self.lb is not None else 0
            self.lb = LoadBalancer(utilization, self.lb_deltas, rr)

    @property
    def lb_window_s(self) -> float:
        """The span Alg. 1's U_ij is a utilization of: td, or lb_refresh_s when set."""
        steps = self.setup.lb_refresh_steps
        return steps * self.setup.step_s if steps else self.setup.td

    def refresh_lb(self) -> None:
        """lb_refresh_s: restart Alg. 1 from each ready replica's busy share since the last
        refresh (Eq. 5 over the refresh window instead of td)."""
        window = self.lb_window_s
        utilization = [(rep.busy - rep.mark) / window for rep in self.ready]
        for rep in self.pool:
            rep.mark = rep.busy
        self.rebase(utilization)

    def dispatch(self, n: int) -> list[int]:
        """Events per ready replica for n arrivals, by the operator's grouping."""
        r = len(self.ready)
        if r == 1:
            return [n]
        grouping = self.spec.grouping
        if grouping is Grouping.LOAD_BALANCING:
            assert self.lb is not None
            return self.lb.take(n)
        if grouping is Grouping.SHUFFLE:
            return multinomial_counts(self.rng, n, r)
        if grouping is Grouping.ROUND_ROBIN:
            counts = round_robin_counts(n, r, self.rr)
            self.rr = (self.rr + n) % r
            return counts
        splitter = self.key_splitters.get(r)
        if splitter is None:
            groups = None if self.spec.stateless else self.spec.key_groups
            splitter = PartitionSplitter(key_hash_weights(self.profile.keys, r, groups))
            self.key_splitters[r] = splitter
        return splitter.split(n)

    def noise(self, r: int) -> list[float] | None:
        """Service-time factors of replicas 0..r-1 for one step (or batch): log-normal with
        mean 1 and CV et_noise, drawn for the whole pool NOISE_ROWS steps at a time."""
        cv = self.setup.et_noise
        if cv <= 0:
            return None
        if not self.noise_rows:
            sigma2 = math.log1p(cv * cv)
            block = self.rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), (NOISE_ROWS, len(self.pool)))
            self.noise_rows = block.tolist()
        return self.noise_rows.pop()[:r]

    # ------------------------------------------------------------------ one step
    def step(self, s: int) -> None:
        """Admit this step's arrivals, let every ready replica serve, pass the outputs on."""
        refresh = self.refresh_steps
        if refresh and s % refresh == 0 and self.lb is not None:
            self.refresh_lb()
        inbox = self.inbox
        pieces: list[tuple[int, int]] | None = None
        counts: list[int] = []
        if not inbox:
            if not self.size and not self.down and not self.noisy:
                self._idle_step()
                return
        else:
            # this step's arriving cohorts (oldest first) and how many go to each replica
            self.inbox = {}
            if len(inbox) == 1:
                pieces = list(inbox.items())
                n = pieces[0][1]
            else:
                pieces = sorted(inbox.items())
                n = sum(inbox.values())
            self.size += n
            lb = self.lb
            if lb is not None:
                counts = lb.take(n)
            elif len(self.ready) == 1:
                counts = [n]
            else:
                counts = self.dispatch(n)
            if (
                self.size == n  # every queue was empty
                and not self.down
                and not self.noisy
                and s - pieces[0][0] <= self.lag_limit
                and max(counts) <= self.min_cap
            ):
                self._serve_at_once(pieces, counts, n, inbox)
                return
        if self.down:
            self.backlogged = self.backlogged or self.size > 0
            if pieces is not None:
                for rep, mine in zip(self.ready, self._shares(pieces, counts), strict=True):
                    self._enqueue(rep, mine)
                self._overflow(counts)
            return
        out: dict[int, int] = {}
        noise = self.noise(len(self.ready)) if self.noisy else None
        lag_limit = self.lag_limit
        timeouts = processed = 0
        shares: list[list[tuple[int, int]]] = []
        if pieces is not None:
            shares = self._shares(pieces, counts)
        for idx, rep in enumerate(self.ready):
            if noise is None:
                factor = 1.0
                credit = rep.credit + rep.rate
            else:
                factor = noise[idx]
                credit = rep.credit + rep.rate / factor
            cap = int(credit)
            q = rep.queue
            c = counts[idx] if counts else 0
            if c:
                mine = shares[idx]
                if not q and c <= cap and s - mine[0][0] <= lag_limit:  # served at once
                    for k, m in mine:
                        out[k] = out.get(k, 0) + m
                    rep.credit = (credit - c) % 1.0  # idle for the rest: not banked
                    rep.mu += c
                    rep.busy += c * rep.cost * factor
                    processed += c
                    continue
                for k, m in mine:
                    q.append([k, m])
                rep.size += c
            done = 0
            while q and done < cap:
                head = q[0]
                k, c = head
                if s - k > lag_limit:  # its turn came too late: t_out (PSPS V-B)
                    q.popleft()
                    rep.size -= c
                    timeouts += c
                    continue
                take = cap - done
                if c <= take:
                    q.popleft()
                    take = c
                else:
                    head[1] = c - take
                out[k] = out.get(k, 0) + take
                done += take
            rep.size -= done
            rep.credit = credit - done if q else (credit - done) % 1.0  # idle time is not banked
            rep.mu += done
            rep.busy += done * rep.cost * factor
            processed += done
        self.size -= processed + timeouts
        if self.size:
            self.backlogged = True
        self.processed += processed
        if timeouts:
            self.dropped_timeout += timeouts
            self.ledger.counts.dropped_timeout += timeouts
        if pieces is not None:
            self._overflow(counts)
        if out:
            self.emit(out)

    def _idle_step(self) -> None:
        """A step with nothing queued and nothing arriving: each ready replica's spare credit
        moves on as step() moves it (idle time is not banked); nothing else changes."""
        for rep in self.ready:
            rep.credit = (rep.credit + rep.rate) % 1.0

    def serve_all(self) -> None:
        """Fast-forward (SimEngine.skip): serve everything in the inbox at once, as a steady
        stretch does step by step. Shared among the ready replicas by the grouping where that
        does not depend on the steps (round robin: the same counts; key hash: the key shares,
        with their carried remainders), evenly otherwise (load balancing, shuffle)."""
        inbox, self.inbox = self.inbox, {}
        n = sum(inbox.values())
        if not n:
            return
        by_key = self.spec.grouping in (Grouping.KEY_HASH, Grouping.ROUND_ROBIN)
        shares = self.dispatch(n) if by_key else apportion(n, [1] * len(self.ready))
        for rep, mu in zip(self.ready, shares, strict=True):
            rep.mu += mu
            rep.busy += mu * rep.cost
        self.processed += n
        self.emit(inbox)

    def _serve_at_once(
        self, pieces: list[tuple[int, int]], counts: list[int], n: int, inbox: dict[int, int]
    ) -> None:
        """The common case in one go (step() checks it): every queue was empty, nothing that
        arrived is older than t_out, and no replica got more than it surely serves in a step
        (floor of its rate). Then every replica serves its whole share, whichever cohorts it
        holds, and the cohorts leave as they came (`inbox`, the n events of `pieces`); the
        leftover fraction of a credit is idle time, not banked."""
        if len(counts) == 1:
            self.fast_mu[0] += n
        else:
            self.fast_mu = list(map(operator.add, self.fast_mu, counts))
        self.size = 0
        self.processed += n
        self.emit(inbox if len(pieces) == 1 else dict(pieces), n)

    def _ready_changed(self) -> None:
        """Fold the counts of the one-go steps into the replicas; new ready set, new bounds."""
        self._fold_fast()
        self.ready_before = list(self.ready)
        self.fast_mu = [0] * len(self.ready)
        self.min_cap = min((int(rep.rate) for rep in self.ready), default=0)
        window = self.lb_window_s
        self.lb_deltas = [rep.cost / window for rep in self.ready]

    def _fold_fast(self) -> None:
        """Fold the counts of the one-go steps (served at once) into the replicas that served
        them (`ready_before`: the ready set when they were counted)."""
        fast = self.fast_mu
        if any(fast):
            for rep, mu in zip(self.ready_before, fast, strict=True):
                rep.mu += mu
                rep.busy += mu * rep.cost
            self.fast_mu = [0] * len(fast)

    def _shares(
        self, pieces: list[tuple[int, int]], counts: list[int]
    ) -> list[list[tuple[int, int]]]:
        """Who gets which of this step's cohorts; the first served replica rotates each step."""
        self.turn += 1
        return fill_pieces(pieces, counts, self.turn % len(counts))

    def _enqueue(self, rep: Replica, pieces: Sequence[tuple[int, int]]) -> None:
        for k, c in pieces:
            rep.queue.append([k, c])
            rep.size += c

    def _overflow(self, counts: Sequence[int]) -> None:
        """q_size (PSPS V-B): the operator holds at most q_size events; the newest arrivals of
        this step that do not fit are refused, taken from each replica's tail in proportion."""
        queue_capacity = self.setup.queue_capacity
        if queue_capacity is None or self.size <= queue_capacity:
            return
        fresh = [min(c, rep.size) for rep, c in zip(self.ready, counts, strict=True)]
        excess = min(self.size - queue_capacity, sum(fresh))
        for rep, cut in zip(self.ready, apportion(excess, fresh), strict=True):
            _trim_tail(rep.queue, cut)
            rep.size -= cut
        self.size -= excess
        self.dropped_overflow += excess
        self.ledger.counts.dropped_overflow += excess

    def emit(self, out: dict[int, int], n: int | None = None) -> None:
        """Split the served cohorts into channels and deliver them, one call per target (`n`:
        how many events `out` holds, if known)."""
        if self.direct is not None:  # a single stream takes every event: nothing to split
            targets, weight = self.direct
            name, service = self.name, self.service_out
            for target in targets:
                target.receive(name, out, weight, service)
            self.emitted += sum(out.values()) if n is None else n
            return
        split = self.splitter.split
        if len(out) == 1:  # one cohort (the common case): each channel gets its part of it
            ((k, m),) = out.items()
            for i, c in enumerate(split(m)):
                if c:
                    self._deliver(i, c, {k: c})
            return
        chunks: list[dict[int, int]] = [{} for _ in self.plan]
        for k, m in out.items():
            for sent, c in zip(chunks, split(m), strict=True):
                if c:
                    sent[k] = c
        for i, sent in enumerate(chunks):
            if sent:
                self._deliver(i, sum(sent.values()), sent)

    def _deliver(self, i: int, c: int, sent: dict[int, int]) -> None:
        """Plan entry i's part of the served cohorts: `sent` ({k: n}, c events in all)."""
        kind, targets, weight = self.plan[i]
        if kind == FILTERED:
            counts = self.ledger.counts
            counts.filtered += c
            counts.completed_w += c * self.profile.weight_in
        elif kind == FAILED:
            self.ledger.counts.failed += c
        else:
            self.emitted += c
            self.stream_emitted[i] += c
            name, service = self.name, self.service_out
            for target in targets:
                target.receive(name, sent, weight, service)

    # ------------------------------------------------------------------ reconfiguration
    def check_replicas(self, target: int) -> None:
        size = len(self.pool)
        if not 1 <= target <= size:
            raise ValueError(
                f"operator {self.name!r}: {target} replicas is outside its pool [1, {size}]"
            )

    def set_replicas(self, target: int, s: int, delayed: bool) -> None:
        """Execute: activate (at once, or after the start delay) or deactivate replicas."""
        self.check_replicas(target)
        running = self._running_utilization()
        if target > self.active:
            for j in range(self.active, target):
                if delayed and self.setup.start_delay_steps > 0:
                    self.starting[j] = s + self.setup.start_delay_steps
        elif target < self.active:
            for j in range(target, self.active):
                self.starting.pop(j, None)
        leaving = [rep for rep in self.ready if rep.index >= target]
        self.active = target
        self.ready = [rep for rep in self.pool[:target] if rep.index not in self.starting]
        self._ready_changed()
        self._hand_over(leaving)
        self.rebase([running.get(rep.index, 0.0) for rep in self.ready])

    def start_ready(self, s: int) -> None:
        """Delayed model: replicas whose start delay has passed begin to serve."""
        due = [j for j, at in self.starting.items() if at <= s]
        if not due:
            return
        running = self._running_utilization()
        for j in due:
            del self.starting[j]
        self.ready = [rep for rep in self.pool[: self.active] if rep.index not in self.starting]
        self._ready_changed()
        self.rebase([running.get(rep.index, 0.0) for rep in self.ready])

    def _running_utilization(self) -> dict[int, float]:
        if self.lb is None or len(self.lb.base) != len(self.ready):
            return {}
        return dict(zip((rep.index for rep in self.ready), self.lb.utilization(), strict=True))

    def _hand_over(self, leaving: Sequence[Replica]) -> None:
        """A deactivated replica's queue goes to the tails of the remaining ready replicas."""
        pieces = [(k, c) for rep in leaving for k, c in rep.queue]
        for rep in leaving:
            rep.queue.clear()
            rep.size = 0
            rep.credit = 0.0
        total = sum(c for _, c in pieces)
        if not total:
            return
        shares = fill_pieces(pieces, round_robin_counts(total, len(self.ready), 0), 0)
        for rep, mine in zip(self.ready, shares, strict=True):
            self._enqueue(rep, mine)

    def clear(self) -> int:
        """Restart: every queued event is lost; returns how many."""
        lost = self.size
        for rep in self.pool:
            rep.queue.clear()
            rep.size = 0
            rep.credit = 0.0
        self.size = 0
        self.dropped_restart += lost
        counts = self.ledger.counts
        counts.dropped_restart += lost
        return lost

    # ------------------------------------------------------------------ monitor
    def stats(self, span_s: float | None = None) -> OperatorStats:
        """This interval's OperatorStats (or a fast-forwarded stretch's, `span_s` long); then
        Alg. 1 restarts from Eq. 5's U_ij."""
        self._fold_fast()
        td = span_s or self.setup.td
        pool = self.pool
        busy = sum([rep.busy for rep in pool])
        et = busy / self.processed if self.processed else None
        if et is not None:
            self.measured_et = et
        mu = tuple([rep.mu for rep in pool[: self.active]])
        per_event = et or self.et
        stats = OperatorStats(
            self.name,
            self.active,
            self.bounds[0],
            self.bounds[1],
            self.received,
            tuple(self.received_from.items()),
            self.processed,
            self.emitted,
            self.size,
            et,
            busy,
            self.dropped_timeout,
            self.dropped_overflow,
            replica_processed=mu,
            utilization=tuple([m * per_event / td for m in mu]),  # Eq. 5
            stateful=self.stateful,
            admission_capped=self.admission_capped,
            emitted_streams=self._emitted_streams(),
            service_time_var=self._service_time_var(),
            replica_batches=self.replica_batches(),
        )
        # Alg. 1 starts the next interval from U_ij(t) = μ_ij(t)·et_ij/td (Eq. 5 per replica).
        if self.refresh_steps:
            self.refresh_lb()
        else:
            self.rebase([rep.busy / td for rep in self.ready])
        self.reset_interval()
        return stats

    def _service_time_var(self) -> tuple[float, ...]:
        """Per active replica, the variance of one event's service time: et_ij times a
        log-normal factor of mean 1 and CV et_noise (noise()), so (et_ij · et_noise)²."""
        known = self.variances.get(self.active)
        if known is None:
            cv = self.setup.et_noise
            known = tuple((rep.cost * cv) ** 2 for rep in self.pool[: self.active])
            self.variances[self.active] = known
        return known

    def replica_batches(self) -> tuple[int, ...]:
        """Per active replica, the micro-batches it served events in (() here: no batches)."""
        return ()

    def _emitted_streams(self) -> tuple[tuple[str, int], ...]:
        """This interval's outputs per output stream (every stream of the operator, 0 when
        none went there): the simulator tells all streams apart, even two to the same node."""
        if self.direct is not None and self.streams == (self.direct_stream,):
            return ((self.direct_stream, self.emitted),)
        counts = dict.fromkeys(self.streams, 0)
        if self.direct is not None:
            counts[self.direct_stream] = self.emitted
        else:
            for stream, n in zip(self.plan_streams, self.stream_emitted, strict=True):
                if stream:
                    counts[stream] += n
        return tuple(counts.items())


def _trim_tail(queue: deque[Cohort], n: int) -> None:
    """Remove the n newest events of a queue."""
    while n > 0:
        last = queue[-1]
        if last[1] <= n:
            queue.pop()
            n -= last[1]
        else:
            last[1] -= n
            n = 0
