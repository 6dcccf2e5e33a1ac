"""S-ODRP (ODRP paper, Alg. 1) on a running pipeline: enact the minimum-cost plan, measure the
stream, source and service rates over a window (the Caladrius history's per-replica rows),
re-solve with them and enact the new plan live, then run to the end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from elastream.control.mape import Engine, Observer, RunResult
from elastream.control.plan import HostEngine, Placement, Plan, execute
from elastream.control.policy import Decision
from elastream.experiments.history import HistoryRecorder
from elastream.experiments.session import SessionRunner
from elastream.history.rows import points_by_operator
from elastream.model.metrics import RunningSummary
from elastream.model.snapshot import Snapshot
from elastream.modeling.performance import mean_service_time
from elastream.placement.model import PlanRequest, topological_order
from elastream.placement.sodrp import Measurements, schedule
from elastream.runtime.sim.simulator import SimEngine


@dataclass
class SodrpReport:
    """What Alg. 1 did: the early (minimum-cost) plan, what was measured, the final plan."""

    early: dict[str, Any] | None = None
    measured: Measurements | None = None
    final: dict[str, Any] | None = None
    replanned_at_s: float | None = None
    placed: bool = False
    snapshots: list[Snapshot] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form written to OUT/sodrp.json (snapshots left out)."""
        return {
            "early": self.early,
            "measured": None if self.measured is None else self.measured.model_dump(),
            "final": self.final,
            "replanned_at_s": self.replanned_at_s,
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


def measure(
    snapshots: Sequence[Snapshot], recorder: HistoryRecorder, request: PlanRequest
) -> Measurements:
    """Alg. 1 line 6 from one window. Source rates: events emitted / window. Stream rates
    lambda_(i,j): the demand, i's measured selectivity on (i, j) (events j received from i per
    event i processed) times the rate offered to i, in topological order from the sources; an
    operator that processed nothing keeps the rate j received from it. (What j received is only
    what a backlogged i got through: a plan sized on it would stay too small.) Service rates:
    mu_i = 1 / (sum of busy seconds / events processed) over i's replicas, from the window's
    history rows (the estimate the Caladrius models use)."""
    span = sum(s.td for s in snapshots)
    if span <= 0:
        raise ValueError("S-ODRP: the measurement window holds no time")
    app = request.application
    names = {o.name for o in app.operators}
    emitted: dict[str, float] = {}
    processed: dict[str, float] = {}
    arrived: dict[tuple[str, str], float] = {(s.src, s.dst): 0.0 for s in app.streams}
    for snap in snapshots:
        for name, n in snap.sources:
            emitted[name] = emitted.get(name, 0.0) + n
        for o in snap.operators:
            processed[o.name] = processed.get(o.name, 0.0) + o.processed
            for pred, n in o.received_from:
                if (pred, o.name) in arrived:
                    arrived[(pred, o.name)] += n
    sources = {n: c / span for n, c in emitted.items() if n in names and c > 0}
    streams = demand_rates(request, sources, processed, arrived, span)
    service: dict[str, float] = {}
    for name, points in points_by_operator(recorder.rows).items():
        et = mean_service_time(points)
        if name in names and et:
            service[name] = 1.0 / et
    return Measurements(
        stream_rates={f"{a}->{b}": rate for (a, b), rate in streams.items()},
        service_rates=service,
        source_rates=sources,
    )


def demand_rates(
    request: PlanRequest,
    sources: dict[str, float],
    processed: dict[str, float],
    arrived: dict[tuple[str, str], float],
    span: float,
) -> dict[tuple[str, str], float]:
    """Per stream, the rate its source operator would send if it kept up (see `measure`)."""
    app = request.application
    edges = [(s.src, s.dst) for s in app.streams]
    offered: dict[str, float] = dict(sources)
    rates: dict[tuple[str, str], float] = {}
    for name in topological_order([o.name for o in app.operators], edges):
        done = processed.get(name, 0.0)
        for src, dst in edges:
            if src != name:
                continue
            got = arrived[(src, dst)]
            if name in sources or done <= 0:
                rate = got / span  # a source (never backlogged) or no selectivity measured
            else:
                rate = got / done * offered.get(name, 0.0)
            rates[(src, dst)] = rate
            offered[dst] = offered.get(dst, 0.0) + rate
    return rates


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
    a HostEngine: the simulator with a network). The report gets the plans and measurements."""
    if place and not isinstance(engine, HostEngine):
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
        while sum(s.td for s in window) < window_s and not engine.finished():
            snapshot = engine.collect()
            window.append(snapshot)
            recorder(snapshot, decision)
            record(snapshot)
        report.measured = measure(window, recorder, request)
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
    summary = running.summary(totals, engine.pipeline.r_over)
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
