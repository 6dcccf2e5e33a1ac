"""The fast simulator: a discrete-time implementation of the Engine protocol, driven by the same
`run_mape` loop and the same guarded policies as the Spark runtime."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from elastream.config import ConfigError, RunConfig
from elastream.control.features import FastForward, Hosts, MessageTransport, Network
from elastream.control.policy import Decision, Lease, Placement
from elastream.model.metrics import RunTotals
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.placement.model import Infrastructure
from elastream.runtime.sim.batch import BatchOperator, PipelineQuery
from elastream.runtime.sim.emissions import Emissions, rate_changes
from elastream.runtime.sim.ledger import Counts, Ledger, Sink
from elastream.runtime.sim.operator import Node, Operator, Setup
from elastream.runtime.sim.placement import SimPlacement
from elastream.runtime.sim.profile import PipelineProfile, profile_pipeline
from elastream.runtime.sim.settings import SimSettings
from elastream.workloads.trace import Trace

DEFAULT_SETTINGS = SimSettings()


def _held_by(node: Node) -> int:
    """Events an operator holds (queued or in its inbox); 0 for a sink."""
    inbox = getattr(node, "inbox", None)
    return getattr(node, "size", 0) + (sum(inbox.values()) if inbox else 0)


class SimEngine:
    """Simulated time in steps of Δ = td / round(td / step_s); one collect() runs one interval."""

    features = frozenset({FastForward, Hosts, MessageTransport, Network})
    # the decentralized policy's agents are simulated too: deterministic, in memory
    message_transport = "memory"

    def __init__(
        self,
        pipeline: Pipeline,
        config: RunConfig,
        trace: Trace,
        settings: SimSettings = DEFAULT_SETTINGS,
        network: Infrastructure | None = None,
    ) -> None:
        """`network`: the nodes and links replicas can be placed on (place()); None: no
        placement, no network delay."""
        if config.unbounded:
            raise ConfigError(
                "a simulation needs an end: until_stopped (a run until SIGINT/SIGTERM) is for "
                "the Spark engine; give the simulated run a duration (--duration SECONDS)"
            )
        self.pipeline = pipeline
        self.config = config
        self.trace = trace
        self.settings = settings
        self.seed = config.seed if settings.seed is None else settings.seed
        self.profile: PipelineProfile = profile_pipeline(pipeline, settings, self.seed)
        self.steps_per_interval = max(1, round(config.interval_s / settings.step_s))
        self.step_s = config.interval_s / self.steps_per_interval
        self.duration_s = trace.duration_s  # the session has cut it to the run's duration
        self.load_steps = max(1, math.ceil(self.duration_s / self.step_s - 1e-9))
        pipeline.require_generators("simulator")
        total_rate = sum(src.rate for src in pipeline.sources)
        shares = [src.rate / total_rate for src in pipeline.sources]
        self.emissions = Emissions(trace, self.load_steps, self.step_s, shares)
        self.rate_change_s = rate_changes(trace)
        per_replica = settings.queue_model == "per_replica"
        self.noisy = settings.et_noise > 0
        self.hold = settings.source_hold
        self.delayed = settings.reconfiguration == "delayed"
        self.can_skip = (
            settings.fast_forward_for(config.policy)
            and per_replica
            and not self.noisy
            and not settings.source_hold
        )
        self.placement: SimPlacement | None = None
        self.base_service: dict[str, float] = {}
        self.started = False
        if network is not None:
            self.set_network(network)

    # ------------------------------------------------------------------ Engine protocol
    def start(self) -> None:
        if self.started:
            raise RuntimeError("SimEngine.start() called twice: build a new engine per run")
        self.started = True
        self.rng = np.random.default_rng(self.seed)
        self.ledger = Ledger(self.step_s)
        self.s = 0
        self.down_until = 0
        self.paused_until: dict[str, int] = {}  # stateful operators pausing after a rescale
        self.pending: dict[str, int] = {}
        self.last_counts = Counts()
        self.stretch: tuple[int, np.ndarray] = (-1, np.zeros((0, 0), dtype=np.int64))
        self.interval_counts = Counts()  # the counts when the last interval began
        self.backlogged = False  # an event waited past its step in the last interval
        # replicas per operator -> per source: steps of this many events were steady with them
        self.steady_peaks: dict[tuple[int, ...], list[int]] = {}
        self.interval_sources = [0] * len(self.pipeline.sources)
        self.held = [0] * len(self.pipeline.sources)  # source_hold: waiting at each source
        self.ops = self._build_operators()
        self.order = [self.ops[name] for name in self.pipeline.topological_order]
        self.query = self._pipeline_query()
        self.source_targets = self._wire()

    def collect(self) -> Snapshot:
        """Monitor: run one interval of td simulated seconds and return its metrics. With
        fast_forward, an interval that starts steady and whose steps bring no more events than
        steady ones did under these replicas is run in one go (as skip(1))."""
        self._reconfigure()
        end = self.s + self.steps_per_interval
        coming = self.emissions.window_lists(self.s, end) if self.can_skip else None
        peak: list[int] | None = None
        if coming is not None and self._was_steady():
            peak = [max(row) for row in coming]
            if self._within_steady_peak(peak):
                emitted = [sum(row) for row in coming]
                return self._pass(1, emitted, 0 if any(emitted) else 1)
        while self.s < end:
            quiet = self._quiet_steps(end)
            if quiet:
                self._idle(quiet)
            else:
                self._step()
        snapshot = self._snapshot()
        if coming is not None and self._was_steady():
            peak = peak or [max(row) for row in coming]
            replicas = self._replicas()
            known = self.steady_peaks.get(replicas)
            self.steady_peaks[replicas] = peak if known is None else list(map(max, known, peak))
        return snapshot

    def _replicas(self) -> tuple[int, ...]:
        """The replicas serving now, per operator."""
        return tuple(len(op.ready) for op in self.order)

    def _within_steady_peak(self, peak: Sequence[int]) -> bool:
        """No source brings more events in a step (`peak`, per source) than it did in a steady
        interval under the current replicas (every event then went through in its step)."""
        known = self.steady_peaks.get(self._replicas())
        return known is not None and all(p <= k for p, k in zip(peak, known, strict=True))

    def _quiet_steps(self, end: int) -> int:
        """Steps from now (up to `end`) in which nothing can happen: no source emits, nothing is
        queued, no replica is starting, no restart under way and no service-time noise drawn."""
        if self.noisy or self.s < self.down_until or (self.paused_until and self._pausing()):
            return 0
        for op in self.order:
            if op.size or op.starting:
                return 0
        return self.emissions.quiet_steps(self.s, end)

    def _idle(self, steps: int) -> None:
        """Advance `steps` quiet steps: all an idle step changes is each replica's spare credit
        (the fraction of an event it could serve, not banked), updated as step() does."""
        for op in self.order:
            for rep in op.ready:
                credit, rate = rep.credit, rep.rate
                for _ in range(steps):
                    credit = (credit + rate) % 1.0
                rep.credit = credit
        self.s += steps

    def enact(self, decision: Decision) -> None:
        """Execute: set each operator's active replicas; the change takes effect when the
        simulation moves on (a decision after the run's last interval changes nothing)."""
        targets = decision.as_dict()
        unknown = sorted(set(targets) - set(self.ops))
        if unknown:
            raise KeyError(f"decision names unknown operator(s): {', '.join(unknown)}")
        for name, target in targets.items():
            self.ops[name].check_replicas(target)
        self.pending = {n: r for n, r in targets.items() if r != self.ops[n].active}

    def set_network(self, network: Infrastructure) -> None:
        """The nodes and links replicas can be placed on (place()); forgets any placement."""
        self.placement = SimPlacement(self.pipeline, network)
        if self.started:
            for name, op in self.ops.items():
                op.service_out = self.base_service[name]

    def lease(self, leases: tuple[Lease, ...]) -> None:
        """The simulator's nodes are its infrastructure's: there is nothing to lease."""
        if leases:
            raise ValueError("the simulator has no hosts to lease: run without host leasing")

    def place(self, placement: tuple[Placement, ...]) -> None:
        """Put replicas on the infrastructure's nodes; from now on every stream between placed
        operators adds its network delay to the latency of the events on it."""
        if not placement:
            return
        if self.placement is None:
            raise ValueError("the simulator places replicas only when built with a `network`")
        pools = dict.fromkeys(self.pipeline.source_names, 1)  # a source runs as one task
        pools.update({name: len(op.pool) for name, op in self.ops.items()})
        self.placement.place(placement, pools)
        self._apply_delays()

    def _apply_delays(self) -> None:
        """Each operator's path term = its path service time + the network delay up to it."""
        if self.placement is None or not self.placement.nodes:
            return
        delays = self.placement.path_delays_s({n: op.active for n, op in self.ops.items()})
        for name, op in self.ops.items():
            op.service_out = self.base_service[name] + delays[name]

    def _reconfigure(self) -> None:
        """Apply the pending decision under the reconfiguration model."""
        changed, self.pending = self.pending, {}
        if not changed:
            return
        self._reconfigure_counts(changed)
        self._apply_delays()

    def _reconfigure_counts(self, changed: dict[str, int]) -> None:
        model = self.settings.reconfiguration
        if model == "restart" and self.s >= self.down_until:
            # Storm rebalance / DABS-Storm: stop everything, lose the queues, restart later. A
            # decision taken while a restart is under way only changes what it brings back up.
            for op in self.order:
                op.clear()
            if self.query is not None:
                self.query.clear()
            self.down_until = self.s + math.ceil(self.settings.restart_downtime_s / self.step_s)
        pause = math.ceil(self.settings.stateful_rescale_pause_s / self.step_s)
        for name, target in changed.items():
            self.ops[name].set_replicas(target, self.s, delayed=model == "delayed")
            if pause and not self.ops[name].spec.stateless:
                self.paused_until[name] = self.s + pause

    def _pausing(self) -> bool:
        """A stateful operator is still in its rescale pause."""
        return any(self.s < until for until in self.paused_until.values())

    def finished(self) -> bool:
        if self.s < self.load_steps:
            return False
        if any(self.held) and self.s * self.step_s < self.duration_s + self.config.drain_s:
            return False
        if not any(op.size for op in self.order):
            return True
        return self.s * self.step_s >= self.duration_s + self.config.drain_s - 1e-9

    def totals(self) -> RunTotals:
        c = self.ledger.counts
        return RunTotals(
            events_in=c.events_in,
            events_out=c.sink_events,
            completed=round(c.completed_w),
            filtered=c.filtered,
            dropped_timeout=c.dropped_timeout,
            dropped_overflow=c.dropped_overflow,
            dropped_restart=c.dropped_restart,
            latency_ms_mean=c.latency_s_sum / c.sink_events * 1000.0 if c.sink_events else None,
            latency_ms_p99=self.ledger.latency_ms_p99(),
            failed=c.failed,
            latency_histogram_ms=tuple(self.ledger.latency_histogram_ms()),
        )

    def stop(self) -> None:
        """Nothing to release: the simulator owns no process, file or thread."""

    # ------------------------------------------------------------------ fast-forward
    def steady_intervals(self) -> int:
        """How many coming intervals can be skipped as a steady stretch: the last interval had
        a constant input rate, nothing waited or was dropped and nothing is queued or changing;
        the input stays at that rate up to the stretch's end and no step brings more events
        than a steady interval under the current replicas did. 0 unless `fast_forward` is on."""
        if not self.can_skip or self.s >= self.load_steps or not self._was_steady():
            return 0  # past the trace's end nothing is left to skip (its next change is +inf)
        spi, s = self.steps_per_interval, self.s
        first = s - spi
        change_s = self.rate_change_s[bisect.bisect_right(self.rate_change_s, first * self.step_s)]
        last_step = min(math.floor(change_s / self.step_s + 1e-9), self.load_steps)
        intervals = (last_step - s) // spi
        if intervals < 1:
            return 0
        coming = self.emissions.window(s, s + intervals * spi)
        if not self._within_steady_peak(coming.max(axis=1).tolist()):
            return 0
        self.stretch = (s, coming)
        return intervals

    def _was_steady(self) -> bool:
        if self.pending or self.s < self.down_until or self.s <= self.steps_per_interval:
            return False
        if self._pausing():
            return False
        if self.backlogged or any(op.size or op.inbox or op.starting for op in self.order):
            return False
        before, now = self.interval_counts, self.last_counts
        return (before.dropped_timeout, before.dropped_overflow, before.dropped_restart) == (
            now.dropped_timeout,
            now.dropped_overflow,
            now.dropped_restart,
        )

    def skip(self, intervals: int) -> Snapshot:
        """Run `intervals` steady intervals at once: the sources emit what the trace integrates
        to, every operator serves all of it within the last step (no event waits in a steady
        stretch), and the stretch is one snapshot (Snapshot.intervals)."""
        spi = self.steps_per_interval
        start, end = self.s, self.s + intervals * spi
        known_start, coming = self.stretch
        if known_start != start or coming.shape[1] != end - start:
            coming = self.emissions.window(start, end)
        idle = int((coming.sum(axis=0).reshape(intervals, spi).sum(axis=1) == 0).sum())
        return self._pass(intervals, coming.sum(axis=1).tolist(), idle)

    def _pass(self, intervals: int, emitted: Sequence[int], idle: int) -> Snapshot:
        """The coming `intervals` in one pass: each source emits `emitted` events in all
        (`idle` of the intervals have none), every operator serves them within the last step."""
        end = self.s + intervals * self.steps_per_interval
        self.ledger.s = end - 1
        counts = self.ledger.counts
        for i, (src, targets, weight) in enumerate(self.source_targets):
            n = emitted[i]
            if n:
                counts.events_in += n
                self.interval_sources[i] += n
                for target in targets:
                    target.receive(src, {end - 1: n}, weight, 0.0)
        for op in self.order:
            op.serve_all()
        self.s = end
        return self._snapshot(intervals, idle)

    def latency_histogram_ms(self) -> list[tuple[float, int]]:
        """End-to-end latencies so far: (ms, events) per cohort that reached a sink, ascending."""
        return self.ledger.latency_histogram_ms()

    # ------------------------------------------------------------------ set-up
    def _build_operators(self) -> dict[str, Operator]:
        s = self.settings
        event_timeout_s = self.config.event_timeout_s
        setup = Setup(
            step_s=self.step_s,
            td=self.config.interval_s,
            lag_limit=math.inf if event_timeout_s is None else event_timeout_s / self.step_s + 1e-9,
            queue_capacity=self.config.queue_capacity,
            et_noise=s.et_noise,
            start_delay_steps=math.ceil(s.start_delay_s / self.step_s - 1e-9),
            batch_overhead_s=s.batch_overhead_s,
            batch_work_s=self.config.spark.batch_s if s.batch_work_s is None else s.batch_work_s,
            trigger_s=self.config.spark.trigger_s,
            batch_overhead_by_op={k: v / 1000.0 for k, v in s.batch_overhead_ms.items()},
            batch_overhead_per_replica_s=s.batch_overhead_per_replica_ms / 1000.0,
            batch_overhead_per_busy_s=s.batch_overhead_per_busy_query_ms / 1000.0,
            batch_overhead_cv=s.batch_overhead_cv,
            batch_commit_share=s.batch_commit_share,
            warmup_by_op={k: v / 1000.0 for k, v in s.warmup_ms.items()},
            lb_refresh_steps=0
            if s.lb_refresh_s is None
            else max(1, round(s.lb_refresh_s / self.step_s)),
        )
        self.setup = setup
        kind = Operator if s.queue_model == "per_replica" else BatchOperator
        extra = {"own_loop": False} if s.queue_model == "pipeline" else {}
        ops = {
            name: kind(
                self.pipeline.operator(name),
                self.profile.op(name),
                setup,
                self.ledger,
                self.pipeline.predecessors(name),
                s.replica_speed.get(name, ()),
                self.rng,
                **extra,
            )
            for name in self.pipeline.topological_order
        }
        for op in ops.values():
            if isinstance(op, BatchOperator):
                op.peers = [other for other in ops.values() if other is not op]
                op.every_share = self.pipeline.watermarked(op.name)
        return ops

    def _pipeline_query(self) -> PipelineQuery | None:
        """The pipeline layout's one query over every operator (queue_model pipeline)."""
        if self.settings.queue_model != "pipeline":
            return None
        ops = [op for op in self.order if isinstance(op, BatchOperator)]
        return PipelineQuery(ops, self.setup, self.rng)

    def _wire(self) -> list[tuple[str, tuple[Node, ...], float]]:
        """Connect the nodes; returns each source's targets and the weight of one copy.

        Each operator's path service time is the mean over its predecessors (sources: 0) plus
        its own et; the per-replica model adds it to the latency of what reaches a sink."""
        nodes: dict[str, Node] = {
            **self.ops,
            **{n: Sink(n, self.ledger) for n in self.pipeline.sink_names},
        }
        per_replica = self.settings.queue_model == "per_replica"
        service: dict[str, float] = dict.fromkeys(self.pipeline.source_names, 0.0)
        for op in self.order:
            preds = self.pipeline.predecessors(op.name)
            if per_replica:
                service[op.name] = sum(service[p] for p in preds) / len(preds) + op.et
            else:  # batches take simulated time: the lag already holds the service
                service[op.name] = 0.0
            targets = {
                stream: tuple(nodes[t] for t in routed)
                for stream, routed in self.pipeline.routes(op.name).items()
            }
            op.connect(targets, service[op.name])
        self.base_service = {op.name: service[op.name] for op in self.order}
        weights = dict(self.profile.source_weights)
        return [
            (src, tuple(nodes[t] for t in self.pipeline.successors(src)), weights[src])
            for src in self.pipeline.source_names
        ]

    # ------------------------------------------------------------------ one step
    def _step(self) -> None:
        s = self.s
        self.ledger.s = s
        hold = self.hold
        if s < self.load_steps:
            counts = self.ledger.counts
            for i, n in enumerate(self.emissions.at(s)):
                if n:
                    src, targets, weight = self.source_targets[i]
                    counts.events_in += n
                    self.interval_sources[i] += n
                    if hold:
                        self.held[i] += n
                        continue
                    for target in targets:
                        target.receive(src, {s: n}, weight, 0.0)
        if hold:
            self._admit_held(s, hold)
        down = s < self.down_until
        delayed = self.delayed
        paused = self.paused_until
        for op in self.order:
            if delayed and op.starting:
                op.start_ready(s)
            op.down = down or (s < paused.get(op.name, 0) if paused else False)
            op.step(s)
        if self.query is not None and not down:
            self.query.step(s)
        self.s = s + 1

    def _admit_held(self, s: int, limit: int) -> None:
        """source_hold: the sources pass on events while fewer than `limit` are in flight in
        the whole pipeline (queued or in an inbox: Storm's max.spout.pending); an admitted
        event's latency and t_out start now (as Storm's complete latency and message timeout
        start when the spout emits)."""
        room = limit - sum(_held_by(op) for op in self.order)
        for i, waiting in enumerate(self.held):
            if not waiting or room <= 0:
                continue
            src, targets, weight = self.source_targets[i]
            n = min(waiting, room)
            room -= n
            if n:
                self.held[i] -= n
                for target in targets:
                    target.receive(src, {s: n}, weight, 0.0)

    def _snapshot(self, intervals: int = 1, idle_intervals: int = 0) -> Snapshot:
        self.backlogged = any(op.backlogged for op in self.order)
        now = self.ledger.counts.copy()
        prev = self.last_counts
        self.interval_counts, self.last_counts = prev, now
        sink_events = now.sink_events - prev.sink_events
        latency = now.latency_s_sum - prev.latency_s_sum
        sources = tuple(zip(self.pipeline.source_names, self.interval_sources, strict=True))
        self.interval_sources = [0] * len(sources)
        span_s = intervals * self.steps_per_interval * self.step_s
        p99_ms, latencies = self.ledger.interval_latencies()
        return Snapshot(
            t=self.s * self.step_s,
            interval_s=span_s,
            sources=sources,
            operators=tuple(op.stats(span_s if intervals > 1 else None) for op in self.order),
            completed=round(now.completed_w) - round(prev.completed_w),
            sink_events=sink_events,
            latency_ms_mean=latency / sink_events * 1000.0 if sink_events else None,
            latency_ms_p99=p99_ms,
            sinks=self.ledger.interval_sink_counts(),
            sink_latency_ms=latencies,
            dropped_restart=now.dropped_restart - prev.dropped_restart,
            intervals=intervals,
            idle_intervals=idle_intervals,
        )
