"""Why the objective policy misses: per missed interval of a benchmarks/objective.yaml run, the
cause (docs/policies.md, objective, "Where it misses").

For every interval t+1 whose measured p99 exceeded the bound it replays the policy's model:
  - pool: the decision at t wanted more replicas than the pools hold (no policy can do better
    on the critical operator);
  - guard: the counts that ran in t+1 are below what the policy decided at t;
  - forecast: with the source rates actually seen in t+1 (instead of the forecast) the model
    predicts a miss, but with the forecast it did not (the rise came within one interval);
  - carry: events queued when the decision acted were already late (the interval before
    missed, or its backlog's age q_i / (λ^r_i / td) was already ≥ B): no count can help them;
  - model: the model with the rates actually seen, the queues left at t and the counts that ran
    predicts the bound is kept, yet the measured p99 is above it (arrivals burstier within the
    interval than Poisson at the interval's mean, or service times not the model's);
  - start: the first intervals (no forecast, no true rate yet).
Simulator only; no Spark. Usage:
    .venv/bin/python benchmarks/objective_diagnose.py [--only SCENARIO ...] [--data-dir DIR]
        [--label objective-5s]
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from elastream.config.files import load_pipeline
from elastream.control.flow import source_rates
from elastream.control.policies.objective import decide, stations_for
from elastream.control.policies.objective_config import ObjectiveConfig, ObjectiveState
from elastream.control.policies.objective_model import critical_path
from elastream.control.policy import POLICIES, Decision
from elastream.experiments.bench.runner import SIM_BACKEND, build_config, raw_trace, with_grouping
from elastream.experiments.bench.scenario import RunSpec, load_bench
from elastream.model.snapshot import Snapshot
from elastream.report.progress import add_quiet, steps

HERE = Path(__file__).parent


@dataclass
class Shadow:
    """Replays the policy beside the run (it is pure) and classifies each missed interval."""

    config: ObjectiveConfig
    state: ObjectiveState = field(default_factory=ObjectiveState)
    last: Snapshot | None = None
    last_state: ObjectiveState | None = None
    wanted: dict[str, int] = field(default_factory=dict)
    n: int = 0
    missed_before: bool = False
    trace: bool = False
    causes: Counter[str] = field(default_factory=Counter)
    rows: list[str] = field(default_factory=list)

    def __call__(self, snapshot: Snapshot, decision: Decision | None = None) -> None:
        self.n += 1
        bound = self.config.target.bound_s
        p99 = snapshot.latency_ms_p99
        missed = p99 is not None and p99 > bound * 1000
        if missed:
            cause, detail = self.classify(snapshot)
            detail += f" wanted={self.wanted}"
            self.causes[cause] += snapshot.intervals
            self.rows.append(f"  t={snapshot.t:6.0f} p99={p99:8.0f} ms {cause:8} {detail}")
        decided, self.state = decide(snapshot, self.state, self.config)
        self.wanted = decided.as_dict()
        if self.trace:
            first = snapshot.operators[0].name
            print(
                f"t={snapshot.t:5.0f} x={source_rates(snapshot)} p99={p99} "
                f"ran={snapshot.replicas()} "
                f"-> {self.wanted} {decided.detail(first)} "
                f"q={[o.queue for o in snapshot.operators]}"
            )
        self.last, self.last_state, self.missed_before = snapshot, self.state, missed

    def classify(self, snapshot: Snapshot) -> tuple[str, str]:
        if self.last is None:
            return "start", ""
        ran = snapshot.replicas()
        at_pool = [
            o.name for o in snapshot.operators if self.wanted.get(o.name, 0) >= o.max_replicas
        ]
        if any(ran[name] < self.wanted[name] for name in ran):
            return "guard", f"ran {ran} wanted {self.wanted}"
        assert self.last_state is not None
        flow = self.last_state.flow
        actual = source_rates(snapshot)
        statistic = self.config.target.statistic
        bound = self.config.target.bound_s - self.config.overhead_s
        seen = stations_for(self.last, flow, actual, self.config, actuation_s=0.0)
        predicted_seen = critical_path(seen, ran, statistic)[0]
        planned = dict(self.last_state.history)
        detail = (
            f"x={ {k: round(v, 1) for k, v in actual.items()} } "
            f"prev={ {k: round(v[-1], 1) for k, v in planned.items()} } "
            f"model@seen={predicted_seen:.2f}s r={sum(ran.values())} "
            f"q0={sum(o.queue for o in self.last.operators)}"
        )
        if at_pool:
            return "pool", detail + f" at pool: {at_pool}"
        if not math.isfinite(predicted_seen) or predicted_seen > bound:
            return ("start" if self.n <= self.config.min_history else "forecast"), detail
        if self.missed_before or backlog_age_s(self.last) >= self.config.target.bound_s:
            return "carry", detail + f" age={backlog_age_s(self.last):.1f}s"
        return "model", detail


def backlog_age_s(snapshot: Snapshot) -> float:
    """How long the oldest queued events had waited when the decision was taken: a FIFO queue
    holds the last q_i arrivals, so about q_i / (λ^r_i / td) (0 without a queue). Events
    already that old miss the bound whatever the next count is."""
    ages = [
        o.queue * snapshot.interval_s / o.received
        for o in snapshot.operators
        if o.queue and o.received
    ]
    return max(ages, default=0.0)


def run(
    scenario: str,
    data_dir: str | None,
    verbose: bool,
    overrides: dict[str, Any],
    label: str = "objective-1s",
) -> dict[str, Any]:
    _, specs = load_bench(HERE / "objective.yaml", data_dir)
    spec = next(s for s in specs if s.scenario == scenario and s.label == label)
    spec = override(spec, {k: v for k, v in overrides.items() if k != "trace"})
    config = build_config(spec)
    pipeline = with_grouping(load_pipeline(spec.pipeline), spec.grouping)
    options = POLICIES.get("objective").make_config(config.effective_policy_options())
    shadow = Shadow(options, trace=overrides.pop("trace", False))
    outcome = SIM_BACKEND.run(pipeline, config, raw_trace(spec), dict(spec.sim), [shadow])
    replica_s = sum(sum(s.replicas().values()) * s.interval_s for s in outcome.result.snapshots)
    missed = sum(shadow.causes.values())
    print(
        f"{scenario}: missed {missed} of {shadow.n} ({1 - missed / shadow.n:.3f} met), "
        f"replica-s {replica_s:,.0f}: {dict(shadow.causes)}",
        flush=True,
    )
    if verbose:
        print("\n".join(shadow.rows))
    return {"scenario": scenario, "causes": dict(shadow.causes), "result": outcome.result}


def override(spec: RunSpec, overrides: dict[str, Any]) -> RunSpec:
    """The spec with `options.X` / `guards.X` replaced (the diagnosis of a variant)."""
    run = dict(spec.run)
    for key, value in overrides.items():
        group, name = key.split(".", 1)
        target = "policy_options" if group == "options" else group
        run[target] = {**run.get(target, {}), name: value}
    return replace(spec, run=tuple(run.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append")
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared/data/traces"))
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--label", default="objective-1s", help="the objective policy's run")
    parser.add_argument("--set", action="append", default=[], help="options.X=V or guards.X=V")
    add_quiet(parser)
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    _, specs = load_bench(HERE / "objective.yaml", args.data_dir)
    scenarios = args.only or list(dict.fromkeys(s.scenario for s in specs))
    for scenario in steps(scenarios, "scenarios", quiet=args.quiet):
        run(scenario, args.data_dir, args.verbose, overrides, args.label)


if __name__ == "__main__":
    main()
