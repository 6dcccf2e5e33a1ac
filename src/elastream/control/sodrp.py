"""S-ODRP (ODRP paper, Alg. 1) as a plan stage of the one MAPE loop: enact the minimum-cost
plan, measure the stream, source and service rates over a window of intervals, re-plan with
them and enact the new plan live; the scaling policy's counts are replaced throughout."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from elastream.control.features import Hosts, Network, feature
from elastream.control.mape import Engine
from elastream.control.policy import Decision, Placement, Plan
from elastream.model.snapshot import Snapshot
from elastream.placement.model import PlanRequest, topological_order
from elastream.placement.sodrp import Measurements, early_plan, replan

HEADROOM = 0.95  # a saturated operator is planned at this share of what k_i replicas serve


@dataclass
class SodrpReport:
    """What Alg. 1 did: the early (minimum-cost) plan, what was measured, the final plan (None
    when the run ended within the measurement window)."""

    early: dict[str, Any] | None = None
    measured: Measurements | None = None
    final: dict[str, Any] | None = None
    replanned_at_s: float | None = None
    saturated: dict[str, float] = field(default_factory=dict)
    placed: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written to OUT/sodrp.json."""
        return {
            "early": self.early,
            "measured": None if self.measured is None else self.measured.model_dump(),
            "final": self.final,
            "replanned_at_s": self.replanned_at_s,
            "saturated": self.saturated,
            "placed": self.placed,
        }


@dataclass
class SodrpStage:
    """The plan stage (control/mape.py `PlanStage`): before the first interval the early plan;
    then the early counts while `window_s` seconds of intervals are measured (Alg. 1 line 6);
    then the re-plan (line 8), enacted at once (line 9) and held to the end. `place`: also put
    every replica on its node (an engine with a `Network`: the simulator)."""

    request: PlanRequest
    window_s: float
    place: bool
    report: SodrpReport = field(default_factory=SodrpReport)
    window: list[Snapshot] = field(default_factory=list)
    counts: Decision = Decision.of({})

    def begin(self, engine: Engine) -> Plan | None:
        if self.place:
            network = feature(engine, Network)
            if network is None or feature(engine, Hosts) is None:
                raise TypeError(f"{type(engine).__name__} cannot place replicas on a network")
            network.set_network(self.request.infrastructure)
        self.report.placed = self.place
        self.report.early = early_plan(self.request)
        placement = self.adopt(self.report.early, engine)
        return Plan(self.counts, placement=placement)

    def refine(self, plan: Plan, snapshot: Snapshot, engine: Engine) -> Plan:
        """The plan with S-ODRP's counts (and, at the re-plan, its placement); what the stages
        before it added (e.g. leases) kept."""
        placement = plan.placement
        if self.report.final is None:
            self.window.append(snapshot)
            if sum(s.interval_s for s in self.window) >= self.window_s:
                placement = self.replan(snapshot.t, engine)
        return replace(plan, replicas=self.counts, placement=placement)

    def replan(self, now: float, engine: Engine) -> tuple[Placement, ...]:
        """Alg. 1 lines 6-8: measure the window, solve again; the new plan's placement."""
        report = self.report
        report.measured, report.saturated = measure(self.window, self.request)
        report.replanned_at_s = now
        report.final = replan(self.request, report.measured)
        return self.adopt(report.final, engine)

    def adopt(self, result: dict[str, Any], engine: Engine) -> tuple[Placement, ...]:
        """Take an ODRP result's replica counts for the pipeline's operators; the node of every
        replica (sources included) when this stage places them, else ()."""
        operators = set(engine.pipeline.operator_names)
        counts = {op: n for op, n in result["replicas"].items() if op in operators}
        why = f"S-ODRP ({result['solver']}, F = {result['objective']:.4f})"
        self.counts = Decision.of(counts, dict.fromkeys(counts, why))
        if not self.place:
            return ()
        return tuple(Placement(op, tuple(nodes)) for op, nodes in result["placement"].items())


@dataclass(frozen=True)
class Window:
    """Counts of one measurement window: its length, events processed and busy seconds per
    operator, and events received per stream (src, dst)."""

    span_s: float
    processed: dict[str, float]
    busy_s: dict[str, float]
    arrived: dict[tuple[str, str], float]


def window_of(snapshots: Sequence[Snapshot], request: PlanRequest) -> Window:
    """The window's counts summed over its intervals. Busy seconds count only in intervals that
    processed events (the service time is busy time per event processed)."""
    processed: dict[str, float] = {}
    busy: dict[str, float] = {}
    arrived = {(s.src, s.dst): 0.0 for s in request.application.streams}
    for snap in snapshots:
        for o in snap.operators:
            processed[o.name] = processed.get(o.name, 0.0) + o.processed
            if o.processed > 0:
                busy[o.name] = busy.get(o.name, 0.0) + o.busy_s
            for pred, n in o.received_from:
                if (pred, o.name) in arrived:
                    arrived[(pred, o.name)] += n
    return Window(sum(s.interval_s for s in snapshots), processed, busy, arrived)


def measure(
    snapshots: Sequence[Snapshot], request: PlanRequest
) -> tuple[Measurements, dict[str, float]]:
    """Alg. 1 line 6 from one window; returns the measurements and the saturated operators
    (operator -> measured demand, tuples/s, above what its k_i replicas serve).

    Source rates: events emitted / window. Service rates: mu_i = events processed / busy
    seconds of i's replicas (the estimate the Caladrius models use). Stream rates lambda_(i,j):
    the demand, i's measured selectivity on (i, j) (events j received from i per event i
    processed) times the rate i serves, from the sources down (`demand_rates`). What j received
    is only what a backlogged i got through: a plan sized on it would stay too small."""
    window = window_of(snapshots, request)
    if window.span_s <= 0:
        raise ValueError("S-ODRP: the measurement window holds no time")
    names = {o.name for o in request.application.operators}
    emitted: dict[str, float] = {}
    for snap in snapshots:
        for name, n in snap.sources:
            emitted[name] = emitted.get(name, 0.0) + n
    service = {
        name: window.processed[name] / busy
        for name, busy in window.busy_s.items()
        if name in names and busy > 0
    }
    sources = {n: c / window.span_s for n, c in emitted.items() if n in names and c > 0}
    streams, saturated = demand_rates(request, sources, service, window)
    measured = Measurements(
        stream_rates={f"{a}->{b}": rate for (a, b), rate in streams.items()},
        service_rates=service,
        source_rates=sources,
    )
    return measured, saturated


def demand_rates(
    request: PlanRequest,
    sources: dict[str, float],
    service: dict[str, float],
    window: Window,
) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Per stream, the rate its upstream operator sends when it serves what is offered to it.

    An operator offered more than HEADROOM x k_i x mu_i (its k_i replicas at the measured, else
    declared, mu_i) is saturated: its input streams are scaled down to that, so the re-plan
    gives it k_i replicas instead of having no feasible plan (ODRP's stability constraint,
    lambda_i / |U| < mu_i), and what it passes on is what it serves. A source's streams, and an
    operator that processed nothing, keep the received rate (no selectivity measured)."""
    app = request.application
    ops = {o.name: o for o in app.operators}
    edges = [(s.src, s.dst) for s in app.streams]
    rates: dict[tuple[str, str], float] = {}
    saturated: dict[str, float] = {}
    for name in topological_order(list(ops), edges):
        inputs = [e for e in edges if e[1] == name]
        served = sources.get(name, 0.0) if not inputs else sum(rates[e] for e in inputs)
        cap = HEADROOM * ops[name].max_replicas * service.get(name, ops[name].service_rate)
        if inputs and served > cap:
            saturated[name] = served
            for e in inputs:
                rates[e] *= cap / served
            served = cap
        done = window.processed.get(name, 0.0)
        for edge in (e for e in edges if e[0] == name):
            got = window.arrived[edge]
            measured_only = name in sources or done <= 0
            rates[edge] = got / window.span_s if measured_only else got / done * served
    return rates, saturated
