"""The engine interface (collect metrics -> decide -> enact) and the MAPE loop that drives it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from elastream.control.controller import Controller
from elastream.control.execute import execute
from elastream.control.features import FastForward, feature
from elastream.control.policy import Decision, Plan
from elastream.model.metrics import RunningSummary, RunTotals, Summary
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot


class Engine(Protocol):
    """What the Spark runtime and the simulator both offer the MAPE loop. What only some
    engines offer (fast-forward, hosts, a graceful stop, a message transport) they list in
    `features`, and the loop asks with `features.feature(engine, Kind)`."""

    pipeline: Pipeline
    features: frozenset[type]  # the optional features it offers (control/features.py)

    def start(self) -> None:
        """Create queues, start the pool of replicas and the sources."""

    def collect(self) -> Snapshot:
        """Monitor: wait for the end of the current interval and return its metrics."""

    def enact(self, decision: Decision) -> None:
        """Execute's last step (control/execute.py): set every operator's active replicas (no
        restart)."""

    def finished(self) -> bool:
        """True when the workload has ended and the pipeline has drained (or gave up draining)."""

    def totals(self) -> RunTotals:
        """Exact end-of-run counts."""

    def stop(self) -> None:
        """Release everything the engine started."""


Observer = Callable[[Snapshot, Decision], None]


class PlanStage(Protocol):
    """A step of the Plan phase after the policy: it turns the policy's plan into the one the
    Execute step applies, e.g. leasing the hosts under the replicas (control/hosting.py) or
    S-ODRP's placement and counts (control/sodrp.py). The run's stages apply in order."""

    def begin(self, engine: Engine) -> Plan | None:
        """Before the engine starts: check that it offers what this stage needs (a `TypeError`
        naming it if not); the plan to enact once it has started, before the first interval."""

    def refine(self, plan: Plan, snapshot: Snapshot, engine: Engine) -> Plan:
        """This interval's plan, from the one the policy (and the stages before) made."""


@dataclass(frozen=True)
class RunResult:
    """What a run returns. `snapshots` and `decisions` hold every interval's (a fast-forwarded
    stretch is one entry) unless the run was longer than its `keep_snapshots` bound: then both
    are empty and `snapshots_kept` is False (the series went to the observers, e.g. to disk)."""

    snapshots: Sequence[Snapshot]
    decisions: Sequence[Decision]
    totals: RunTotals
    summary: Summary
    snapshots_kept: bool = True


class IntervalLog:
    """The snapshots and decisions a run keeps in memory: all of them up to `limit` entries
    (None: no limit); past the limit it drops them all and keeps none from then on."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.snapshots: list[Snapshot] = []
        self.decisions: list[Decision] = []
        self.kept = True

    def add(self, snapshot: Snapshot, decision: Decision) -> None:
        if not self.kept:
            return
        if self.limit is not None and len(self.snapshots) >= self.limit:
            self.snapshots, self.decisions, self.kept = [], [], False
            return
        self.snapshots.append(snapshot)
        self.decisions.append(decision)


def run_mape(
    engine: Engine,
    controller: Controller,
    *,
    recommend_only: bool = False,
    observers: Sequence[Observer] = (),
    keep_snapshots: int | None = None,
    stages: Sequence[PlanStage] = (),
) -> RunResult:
    """Monitor, Analyze/Plan (the guarded policy), Execute, every interval until the run ends.

    With `recommend_only` the decisions are made and reported but never enacted. The summary comes
    from running aggregates; at most `keep_snapshots` snapshots are kept (None: all of them). An
    engine that can fast-forward skips the steady stretches after a decision that changes
    nothing (see `steady_stretch`), unless the run has plan stages or the policy plans hosts
    (they may act on any interval). The policy's plan (its counts, or a whole `Plan` with leases
    and placement) goes through the `stages`, which may lease, place or replace counts; what
    runs is the final plan's counts."""
    log = IntervalLog(keep_snapshots)
    running = RunningSummary()

    def record(snapshot: Snapshot, decision: Decision) -> None:
        running.add(snapshot)
        log.add(snapshot, decision)
        for observe in observers:
            observe(snapshot, decision)

    openings = [plan for plan in (stage.begin(engine) for stage in stages) if plan is not None]
    state = controller.initial_state()
    engine.start()
    try:
        for plan in [] if recommend_only else openings:
            execute(engine, plan)
        while not engine.finished():
            snapshot = engine.collect()
            plan, state = controller.plan(snapshot, state)
            decision = plan.replicas
            if not recommend_only:
                for stage in stages:
                    plan = stage.refine(plan, snapshot, engine)
                execute(engine, plan)
                decision = plan.replicas  # what runs (e.g. capped by the hosts that are up)
            record(snapshot, decision)
            if stages or plan.leases or plan.placement:
                continue  # a stage or a plan for hosts may act on any interval: none is skipped
            stretch = steady_stretch(engine, controller, snapshot, decision, state)
            if stretch is not None:
                record(stretch, decision)
        totals = engine.totals()
        messages = controller.messages(state)  # before close() closes the agents' transport
    finally:
        try:
            controller.close(state)
        finally:
            engine.stop()
    summary = running.summary(totals, engine.pipeline.overprovisioned_replicas, messages=messages)
    return RunResult(log.snapshots, log.decisions, totals, summary, log.kept)


def steady_stretch(
    engine: Engine, controller: Controller, snapshot: Snapshot, decision: Decision, state: Any
) -> Snapshot | None:
    """Skip the coming steady intervals when the engine can and the policy would not act: its
    decision changes no replica count, and it still changes none when shown the same snapshot
    at the end of the stretch (a time-based guard, e.g. a scale-down delay, that would expire
    within the stretch stops the skip). The policy's state is the one it had before."""
    fast = feature(engine, FastForward)
    if fast is None or decision.as_dict() != snapshot.replicas():
        return None
    if controller.policy.close is not None:
        return None  # live state (the decentralized agents): a probe would act, not look
    intervals = fast.steady_intervals()
    if intervals < 1:
        return None
    at_end = replace(snapshot, t=snapshot.t + intervals * snapshot.interval_s)
    probe, _ = controller.decide(at_end, state)
    if probe.as_dict() != decision.as_dict():
        return None
    return fast.skip(intervals)
