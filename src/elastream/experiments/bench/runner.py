"""Run a benchmark matrix: each run in a worker process, a progress bar, one row per run."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rich.console import Console

from elastream.config import ConfigError, RunConfig, make_config
from elastream.config.files import load_pipeline
from elastream.control.mape import Observer, RunResult
from elastream.experiments.bench.metrics import Histogram, metrics_row
from elastream.experiments.bench.scenario import BenchError, RunSpec
from elastream.history import HistoryRow, HistoryStore
from elastream.model.metrics import interval_rows
from elastream.model.objective import Objective, ObjectiveTally
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.report.progress import ProgressBar
from elastream.runner.recording import HistoryRecorder
from elastream.runner.workload import prepare_workload
from elastream.workloads import Trace, resolve_trace

DEFAULT_JOBS = 2

CheckFn = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class Outcome:
    """A finished run and, when the engine records one, its end-to-end latency histogram."""

    result: RunResult
    latency_histogram_ms: Histogram | None = None


EngineFn = Callable[[Pipeline, RunConfig, Trace, Mapping[str, Any], Sequence[Observer]], Outcome]


@dataclass(frozen=True)
class Backend:
    """How a run is executed: `run(pipeline, config, trace, sim_settings, observers)` (each
    observer sees every interval) and `check(sim)` that validates the sim settings up front.
    Both must be module-level functions (they are sent to worker processes)."""

    name: str
    run: EngineFn
    check: CheckFn


def _sim_settings(values: Mapping[str, Any]) -> Any:
    from elastream.runtime.sim import (
        sim_settings_from_dict,  # lazy: the harness does not need the sim
    )

    return sim_settings_from_dict(values)


def _run_sim(
    pipeline: Pipeline,
    config: RunConfig,
    trace: Trace,
    sim: Mapping[str, Any],
    observers: Sequence[Observer] = (),
) -> Outcome:
    """One simulated run through the one run path; `trace` is raw (the session prepares it)."""
    from elastream.runner.engines import run_pipeline

    settings = _sim_settings(sim)
    result = run_pipeline(pipeline, config, trace, engine="sim", sim=settings, observers=observers)
    return Outcome(result, result.totals.latency_histogram_ms)


def _check_sim(sim: Mapping[str, Any]) -> None:
    _sim_settings(sim)


SIM_BACKEND = Backend("sim", _run_sim, _check_sim)


@dataclass(frozen=True)
class RunRecord:
    """What a worker sends back: the results row, the per-interval series and, when asked
    for, the run's metrics-history rows (written to the store by the parent process)."""

    row: dict[str, Any]
    series: list[dict[str, Any]] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.row.get("error"))


# ---------------------------------------------------------------------------- one run


def build_config(spec: RunSpec) -> RunConfig:
    """The validated RunConfig of a run; errors name the scenario file line and the run."""
    try:
        return make_config(**spec.config_values(), **spec.workload_values(), engine="sim")
    except (ConfigError, ValueError) as exc:
        raise BenchError(f"{spec.where}: run {spec.run_id}: {exc}") from None


def with_grouping(pipeline: Pipeline, grouping: str | None) -> Pipeline:
    """Every stateless operator switched to `grouping` (stateful ones keep key_hash)."""
    if grouping is None:
        return pipeline
    data = pipeline.model_dump(by_alias=True)
    for op in data["operators"]:
        if op["stateless"]:
            op["grouping"] = grouping
    return pipeline_from_dict(data, f"{pipeline.name} with grouping {grouping}")


@lru_cache(maxsize=8)
def _raw_trace(spec: str, data_dir: str | None) -> Trace:
    return resolve_trace(spec, Path(data_dir) if data_dir else None)


def raw_trace(spec: RunSpec) -> Trace:
    """The scenario's trace as read or generated (cached per process); the session prepares it
    (slice -> rescale -> compress) from the run's config."""
    return _raw_trace(spec.trace, spec.data_dir)


def identity_columns(spec: RunSpec, config: RunConfig, pipeline: Pipeline) -> dict[str, Any]:
    """The columns that say which run a row is: scenario, policy, grid point, key settings."""
    groupings = sorted({op.grouping.value for op in pipeline.operators})
    return {
        "run_id": spec.run_id,
        "scenario": spec.scenario,
        "policy": spec.label,
        "policy_name": spec.policy,
        "params": ",".join(f"{k}={v}" for k, v in spec.params),
        **{f"param_{k}": v for k, v in spec.params},
        "interval_s": config.interval_s,
        "event_timeout_s": config.event_timeout_s,
        "queue_capacity": config.queue_capacity,
        "grouping": "+".join(groupings),
        "replicas": config.replicas,
    }


def execute(spec: RunSpec, backend: Backend, record_history: bool = False) -> RunRecord:
    """Run one cell. A failure becomes a row whose `error` column holds the message (the
    harness reports it and exits non-zero), so one broken cell does not lose the others.
    With `record_history` the record carries the run's history rows (run id: the spec's)."""
    started = time.perf_counter()
    base = {"run_id": spec.run_id, "scenario": spec.scenario, "policy": spec.label}
    try:
        config = build_config(spec)
        pipeline = with_grouping(load_pipeline(spec.pipeline), spec.grouping)
        recorder = HistoryRecorder(spec.run_id, pipeline.name)
        tally = ObjectiveTally(config.objective) if config.objective is not None else None
        observers: list[Observer] = [recorder] if record_history else []
        observers += [tally] if tally is not None else []
        outcome = backend.run(pipeline, config, raw_trace(spec), dict(spec.sim), observers)
        pipeline = config.starting_pipeline(pipeline)
        row = (
            identity_columns(spec, config, pipeline)
            | metrics_row(outcome.result, outcome.latency_histogram_ms, pipeline, spec.slo_ms)
            | objective_columns(tally)
        )
        series = interval_series(outcome.result, config.objective) if spec.timeseries else []
    except Exception as exc:  # reported in the row and on the console, never swallowed
        detail = traceback.format_exception_only(exc)[-1].strip()
        return RunRecord(base | {"error": detail, "wall_s": time.perf_counter() - started})
    row["wall_s"] = time.perf_counter() - started
    row["error"] = ""
    series = [{"run_id": spec.run_id, **point} for point in series]
    return RunRecord(row, series, recorder.rows)


def objective_columns(tally: ObjectiveTally | None) -> dict[str, Any]:
    """The results columns of a run's latency objective (empty without one)."""
    if tally is None:
        return {}
    return {
        "objective": f"{tally.objective.statistic} <= {tally.objective.bound_s:g} s",
        "objective_met_share": tally.met_share,
        "objective_intervals_missed": tally.missed,
    }


def interval_series(result: RunResult, objective: Objective | None = None) -> list[dict[str, Any]]:
    """The run's per-interval rows (the scenario's `timeseries`), which need its snapshots."""
    if not result.snapshots_kept:
        raise BenchError(
            "timeseries: the run was longer than keep_snapshots, so its snapshots were not kept "
            "(raise keep_snapshots or leave timeseries off)"
        )
    return interval_rows(result.snapshots, objective)


# ---------------------------------------------------------------------------- the matrix


def validate(specs: Sequence[RunSpec], backend: Backend) -> None:
    """Check every run's settings, pipeline and trace before starting any (a typo should not
    cost a full matrix)."""
    checked: set[tuple[Any, ...]] = set()
    for spec in specs:
        build_config(spec)
        try:
            backend.check(dict(spec.sim))
        except (TypeError, ValueError) as exc:
            raise BenchError(f"{spec.where}: run {spec.run_id}: sim settings: {exc}") from None
        inputs = (spec.pipeline, spec.grouping, spec.trace, spec.data_dir, spec.slice)
        if inputs in checked:
            continue
        checked.add(inputs)
        try:
            pipeline = with_grouping(load_pipeline(spec.pipeline), spec.grouping)
            prepare_workload(build_config(spec), pipeline, raw_trace(spec))
        except (ValueError, FileNotFoundError) as exc:
            raise BenchError(f"{spec.where}: run {spec.run_id}: {exc}") from None


def _completed(
    specs: Sequence[RunSpec], backend: Backend, jobs: int, history: bool = False
) -> Iterator[tuple[int, RunRecord]]:
    """(index, record) as runs finish: in this process for one job, else in a process pool."""
    if jobs <= 1:
        for i, spec in enumerate(specs):
            yield i, execute(spec, backend, history)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures: dict[Future[RunRecord], int] = {
            pool.submit(execute, spec, backend, history): i for i, spec in enumerate(specs)
        }
        for future in as_completed(futures):
            yield futures[future], future.result()


def run_matrix(
    specs: Sequence[RunSpec],
    backend: Backend = SIM_BACKEND,
    *,
    jobs: int = DEFAULT_JOBS,
    console: Console | None = None,
    history: Path | None = None,
    quiet: bool = False,
) -> list[RunRecord]:
    """Run every spec (validated first), `jobs` at a time; records come back in spec order.
    With `history`, every run's metrics history is appended to that store as the run ends
    (run id: the spec's run id, so running a bench again replaces its rows)."""
    if jobs < 1:
        raise BenchError(f"--jobs must be >= 1, got {jobs}")
    validate(specs, backend)
    records: list[RunRecord | None] = [None] * len(specs)
    n_jobs = min(jobs, max(1, len(specs)))
    with ProgressBar(len(specs), "bench", console=console, quiet=quiet) as bar:
        for i, record in _completed(specs, backend, n_jobs, history is not None):
            if history is not None and record.history:
                with HistoryStore(history) as store:
                    store.record(record.history)
                record.history.clear()  # written: do not keep every row of the matrix
            records[i] = record
            status = "[red]failed" if record.failed else f"{record.row['wall_s']:.1f} s"
            bar.advance(1, f"{specs[i].run_id} ({status})")
    return [r for r in records if r is not None]
