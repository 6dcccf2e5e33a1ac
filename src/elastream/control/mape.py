"""The engine interface (collect metrics -> decide -> enact) and the MAPE loop that drives it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from elastream.control.controller import Controller
from elastream.control.plan import Plan, execute
from elastream.control.policy import Decision
from elastream.model.metrics import RunTotals, Summary, summarize
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot


class Engine(Protocol):
    """What the Spark runtime and the simulator both offer the MAPE loop."""

    pipeline: Pipeline

    def start(self) -> None:
        """Create queues, start the pool of replicas and the sources."""

    def collect(self) -> Snapshot:
        """Monitor: wait for the end of the current interval and return its metrics."""

    def enact(self, decision: Decision) -> None:
        """Execute's last step (control/plan.py): set every operator's active replicas (no
        restart)."""

    def finished(self) -> bool:
        """True when the workload has ended and the pipeline has drained (or gave up draining)."""

    def totals(self) -> RunTotals:
        """Exact end-of-run counts."""

    def stop(self) -> None:
        """Release everything the engine started."""


Observer = Callable[[Snapshot, Decision], None]


@dataclass(frozen=True)
class RunResult:
    snapshots: Sequence[Snapshot]
    decisions: Sequence[Decision]
    totals: RunTotals
    summary: Summary


def run_mape(
    engine: Engine,
    controller: Controller,
    *,
    dry_run: bool = False,
    observers: Sequence[Observer] = (),
) -> RunResult:
    """Monitor, Analyze/Plan (the guarded policy), Execute, every interval until the run ends.

    With `dry_run` the decisions are made and reported but never enacted."""
    snapshots: list[Snapshot] = []
    decisions: list[Decision] = []
    state = controller.initial_state()
    engine.start()
    try:
        while not engine.finished():
            snapshot = engine.collect()
            decision, state = controller.decide(snapshot, state)
            if not dry_run:
                execute(engine, Plan(decision))
            snapshots.append(snapshot)
            decisions.append(decision)
            for observe in observers:
                observe(snapshot, decision)
        totals = engine.totals()
    finally:
        try:
            controller.release(state)
        finally:
            engine.stop()
    messages = sum(d.messages for d in decisions)
    summary = summarize(snapshots, totals, engine.pipeline.r_over, messages=messages)
    return RunResult(snapshots, decisions, totals, summary)
