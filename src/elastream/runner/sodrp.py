"""S-ODRP (ODRP paper, Alg. 1) on a running pipeline: enact the minimum-cost plan, measure the
stream, source and service rates over a window (the Caladrius history's per-replica rows),
re-solve with them and enact the new plan live, then run to the end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from elastream.control.execute import execute
from elastream.control.features import Hosts, feature
from elastream.control.mape import Engine, Observer, RunResult
from elastream.control.plan import Placement, Plan
from elastream.control.policy import Decision
from elastream.history.rows import points_by_operator
from elastream.model.metrics import RunningSummary
from elastream.model.snapshot import Snapshot
from elastream.placement.model import PlanRequest, topological_order
from elastream.placement.sodrp import Measurements, schedule
from elastream.prediction.performance import mean_service_time
from elastream.runner.recording import HistoryRecorder
from elastream.runner.session import SessionRunner
from elastream.runtime.sim.simulator import SimEngine


@dataclass
class SodrpReport:
    """What Alg. 1 did: the early (minimum-cost) plan, what was measured, the final plan."""

    early: dict[str, Any] | None = None
    measured: Measurements | None = None
    final: dict[str, Any] | None = None
    replanned_at_s: float | None = None
    saturated: dict[str, float] = field(default_factory=dict)
    placed: bool = False
    snapshots: list[Snapshot] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written to OUT/sodrp.json (snapshots left out)."""
        return {
            "early": self.early,
            "measured": None if self.measured is None else self.measured.model_dump(),
            "final": self.final,
            "replanned_at_s": self.replanned_at_s,
            "saturated": self.saturated,
            "placed": self.placed,
        }


def plan_of(result: dict[str, Any], engine: Engine, place: bool) -> Plan:
    """The runtime plan of an ODRP result: replica counts of the pipeline's operators, and the
    node of every replica (sources included) when the engine places them."""
    operators = set(engine.pipeline.operator_names)
    counts = {op: n for op, n in result["replicas"].items() if op in operators}
    reasons = dict.fromkeys(counts, f"S-ODRP ({result['solver']}, F = {result['objective']:.4f})")
    placement: tuple[Placement, ...] = ()
    if place:
        placement = tuple(Placement(op, tuple(nodes)) for op, nodes in result["placement"].items())
    return Plan(Decision.of(counts, reasons), placement=placement)


HEADROOM = 0.95  # a saturated operator is planned at this share of what k_i replicas serve


def measure(
    snapshots: Sequence[Snapshot], recorder: HistoryRecorder, request: PlanRequest
) -> tuple[Measurements, dict[str, float]]:
    """Alg. 1 line 6 from one window; returns the measurements and the saturated operators
    (operator -> measured demand, tuples/s, above what its k_i replicas serve).

    Source rates: events emitted / window. Service rates: mu_i = 1 / (sum of busy seconds /
    events processed) over i's replicas, from the window's history rows (the estimate the
    Caladrius models use). Stream rates lambda_(i,j): the demand, i's measured selectivity on
    (i, j) (events j received from i per event i processed) times the rate i serves, from the
    sources down (`demand_rates`). What j received is only what a backlogged i got through: a
    plan sized on it would stay too small."""
    span = sum(s.interval_s for s in snapshots)
    if span <= 0:
        raise ValueError("S-ODRP: the measurement window holds no time")
    names = {o.name for o in request.application.operators}
    emitted: dict[str, float] = {}
    processed: dict[str, float] = {}
    arrived: dict[tuple[str, str], float] = {
        (s.src, s.dst): 0.0 for s in request.application.streams
    }
    for snap in snapshots:
        for name, n in snap.sources:
            emitted[name] = emitted.get(name, 0.0) + n
        for o in snap.operators:
            processed[o.name] = processed.get(o.name, 0.0) + o.processed
            for pred, n in o.received_from:
                if (pred, o.name) in arrived:
                    arrived[(pred, o.name)] += n
    service: dict[str, float] = {}
    for name, points in points_by_operator(recorder.rows).items():
        et = mean_service_time(points)
        if name in names and et:
            service[name] = 1.0 / et
    sources = {n: c / span for n, c in emitted.items() if n in names and c > 0}
    window = Window(span, processed, arrived)
    streams, saturated = demand_rates(request, sources, service, window)
    measured = Measurements(
        stream_rates={f"{a}->{b}": rate for (a, b), rate in streams.items()},
        service_rates=service,
        source_rates=sources,
    )
    return measured, saturated


@dataclass(frozen=True)
class Window:
    """Counts of one measurement window: its length, events processed per operator and events
    received per stream (src, dst)."""

    span_s: float
    processed: dict[str, float]
    arrived: dict[tuple[str, str], float]


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


def run_sodrp(
    engine: Engine,
    request: PlanRequest,
    window_s: float,
    *,
    place: bool,
    observers: Sequence[Observer] = (),
    report: SodrpReport | None = None,
) -> RunResult:
    """Start `engine`, enact the minimum-cost plan, measure `window_s` seconds of it, re-plan
    with the measured rates (Alg. 1 line 8) and enact that plan live (line 9), then run until
    the workload has drained. `place`: also put every replica on its node (the engine must be
    list the `Hosts` feature: the simulator with a network). The report gets the plans and
    measurements."""
    if place and feature(engine, Hosts) is None:
        raise TypeError(f"{type(engine).__name__} cannot place replicas: run with place=False")
    report = report if report is not None else SodrpReport()
    report.placed = place
    running = RunningSummary()
    decision = Decision.of({})
    decisions: list[Decision] = []

    def record(snapshot: Snapshot) -> None:
        running.add(snapshot)
        report.snapshots.append(snapshot)
        decisions.append(decision)
        for observe in observers:
            observe(snapshot, decision)

    def enact_and_measure(early: dict[str, Any]) -> Measurements:
        nonlocal decision
        plan = plan_of(early, engine, place)
        execute(engine, plan)
        decision = plan.replicas
        window: list[Snapshot] = []
        recorder = HistoryRecorder("sodrp-window", engine.pipeline.name)
        while sum(s.interval_s for s in window) < window_s and not engine.finished():
            snapshot = engine.collect()
            window.append(snapshot)
            recorder(snapshot, decision)
            record(snapshot)
        report.measured, report.saturated = measure(window, recorder, request)
        report.replanned_at_s = window[-1].t if window else 0.0
        return report.measured

    engine.start()
    try:
        report.early, report.final = schedule(request, enact_and_measure)
        plan = plan_of(report.final, engine, place)
        execute(engine, plan)
        decision = plan.replicas
        while not engine.finished():
            record(engine.collect())
        totals = engine.totals()
    finally:
        engine.stop()
    summary = running.summary(totals, engine.pipeline.overprovisioned_replicas)
    return RunResult(tuple(report.snapshots), decisions, totals, summary)


def session_runner(
    request: PlanRequest, window_s: float, place: bool, report: SodrpReport
) -> SessionRunner:
    """run_sodrp as the session's runner (`run`/`simulate --placement`); with `place`, the
    engine (the simulator) is given the request's infrastructure to place replicas on."""

    def runner(engine: Engine, observers: Sequence[Observer]) -> RunResult:
        if place:
            if not isinstance(engine, SimEngine):
                raise TypeError(f"{type(engine).__name__} cannot place replicas on a network")
            engine.set_network(request.infrastructure)
        return run_sodrp(engine, request, window_s, place=place, observers=observers, report=report)

    return runner
