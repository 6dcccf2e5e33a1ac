"""The one run path: prepare the workload once, build the chosen engine, run the MAPE loop, and
(for `run`, `simulate` and `demo`) show the live table and write the outputs; `bench` calls the
same `run_pipeline` in its worker processes."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elastream.base.registry import Registry
from elastream.base.secrets import redact
from elastream.config import RunConfig
from elastream.control.features import MessageTransport, Preflight, feature
from elastream.control.hosting import SlotHosts
from elastream.control.mape import Engine, Observer, PlanStage, RunResult, run_mape
from elastream.control.policies import POLICIES
from elastream.leasing.hosts import HostType
from elastream.model.pipeline import Pipeline
from elastream.report import LiveTable, open_series, write_outputs
from elastream.runner.observability import ops_observers, serve_metrics
from elastream.runner.recording import HistoryRecorder
from elastream.runtime.signals import stop_on_signals
from elastream.runtime.sim.settings import SimSettings
from elastream.workloads import Trace, resolve_trace
from elastream.workloads.generators import constant
from elastream.workloads.scaling import apply_scaling

DEFAULT_DURATION_S = 60.0
DEFAULT_MESSAGE_TRANSPORT = "memory"  # for an engine without the MessageTransport feature


@dataclass(frozen=True)
class EngineRequest:
    """What an engine factory builds an engine from: the pipeline as the run starts it, the run
    settings, the prepared workload, the simulator's settings, whether to resume the previous
    run, and the caller's SparkSession (the Spark engine only)."""

    pipeline: Pipeline
    config: RunConfig
    trace: Trace
    sim: SimSettings | None = None
    resume: bool = False
    spark: Any = None


EngineFactory = Callable[[EngineRequest], Engine]


def _spark(req: EngineRequest) -> Engine:
    from elastream.runtime.spark.runtime import SparkEngine  # lazy: PySpark is slow to import

    return SparkEngine(req.pipeline, req.config, req.trace, resume=req.resume, spark=req.spark)


def _sim(req: EngineRequest) -> Engine:
    from elastream.runtime.sim.simulator import SimEngine

    req.pipeline.require_generators("simulator")
    if req.spark is not None:
        raise ValueError("the simulator runs no Spark: spark= is for the Spark engine")
    if req.resume:
        raise ValueError("the simulator has nothing to resume: --resume is for Spark runs")
    return SimEngine(req.pipeline, req.config, req.trace, req.sim or SimSettings())


ENGINES: Registry[EngineFactory] = Registry("engine")
ENGINES.register("spark", _spark)
ENGINES.register("sim", _sim)


def raw_trace(config: RunConfig, pipeline: Pipeline) -> Trace:
    """The configured trace as read or generated, or the sources' declared rates held constant."""
    if config.trace is not None:
        return resolve_trace(config.trace, config.data_dir)
    total = sum(s.rate for s in pipeline.generator_sources) or 1.0  # none: the duration only
    return constant(rate=total, duration=config.duration or DEFAULT_DURATION_S)


def prepare_workload(config: RunConfig, pipeline: Pipeline, trace: Trace | None = None) -> Trace:
    """The input rate over time, prepared in the one order: slice (trace time) -> rescale the
    peak -> compress time -> cut to the run's duration. `trace` is the raw trace (None: read
    or generate the configured one)."""
    trace = raw_trace(config, pipeline) if trace is None else trace
    scale = config.time_scale if config.time_scale != 1.0 else None
    trace, _ = apply_scaling(trace, config.slice, config.peak_rate, scale)
    if config.duration is not None and config.duration < trace.duration_s:
        trace = trace.sliced(0, config.duration)
    return trace


def run_pipeline(
    pipeline: Pipeline,
    config: RunConfig,
    trace: Trace | None = None,
    *,
    engine: str | None = None,
    sim: SimSettings | None = None,
    resume: bool = False,
    observers: Sequence[Observer] = (),
) -> RunResult:
    """Run `pipeline` on `engine` (default: the config's) under the workload prepared from
    `trace` (None: the configured one)."""
    config.check_objective(pipeline)
    workload = prepare_workload(config, pipeline, trace)
    built = build_engine(pipeline, config, workload, engine=engine, sim=sim, resume=resume)
    return run_engine(built, config, observers)


def build_engine(
    pipeline: Pipeline,
    config: RunConfig,
    workload: Trace,
    *,
    engine: str | None = None,
    sim: SimSettings | None = None,
    resume: bool = False,
    spark: Any = None,
) -> Engine:
    """The registered engine (default: the config's), for the pipeline as this run starts it
    (`spark`: the caller's SparkSession for the Spark engine)."""
    make = ENGINES.get(engine or config.engine)
    return make(
        EngineRequest(config.starting_pipeline(pipeline), config, workload, sim, resume, spark)
    )


def run_engine(
    engine: Engine,
    config: RunConfig,
    observers: Sequence[Observer] = (),
    keep_snapshots: int | None = None,
    stages: Sequence[PlanStage] = (),
) -> RunResult:
    """The MAPE loop of this run's guarded policy over `engine` (kept by the caller, e.g. to
    calibrate the simulator from a Spark run afterwards); it keeps at most `keep_snapshots`
    snapshots (default: the config's). The plan stages: `stages` (S-ODRP's counts), then the
    config's (host leasing, which leases hosts for the counts before it)."""
    stages = (*stages, *config_stages(config))
    controller = with_message_transport(config, engine).controller()
    with frozen_gc():
        return run_mape(
            engine,
            controller,
            recommend_only=config.recommend_only,
            observers=observers,
            keep_snapshots=config.keep_snapshots if keep_snapshots is None else keep_snapshots,
            stages=stages,
        )


@contextmanager
def frozen_gc() -> Iterator[None]:
    """While the body runs, the cyclic garbage collector leaves alone every object that existed
    before it (gc.freeze: the imported modules, the pipeline, the trace, about 160,000 objects
    for the simulator): a long run triggers a full collection every few thousand intervals,
    and each would walk all of them again. They go back to the collector's oldest generation
    afterwards (gc.unfreeze)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def config_stages(config: RunConfig) -> tuple[PlanStage, ...]:
    """The plan stages the config asks for: the host planner of a run that leases executors
    (`spark.leasing`)."""
    leasing = config.spark.leasing
    if leasing is None:
        return ()
    kind = HostType(cores=leasing.slots, btu_s=leasing.btu_s, price=leasing.price)
    return (SlotHosts(kind, leasing.min_hosts, leasing.max_hosts, leasing.release_window),)


def with_message_transport(config: RunConfig, engine: Engine) -> RunConfig:
    """A policy with a `transport` option (decentralized) gets the engine's message transport
    (its `MessageTransport` feature: TCP in the Spark driver, in memory in the simulator) unless
    the run names one. This is how the I/O transport is injected: the pure policy only knows a
    name."""
    if "transport" not in POLICIES.get(config.policy).config_type.model_fields:
        return config
    if "transport" in config.policy_options:
        return config
    offered = feature(engine, MessageTransport)
    transport = DEFAULT_MESSAGE_TRANSPORT if offered is None else offered.message_transport
    options = {**config.policy_options, "transport": transport}
    return config.model_copy(update={"policy_options": options})


def simulate(
    pipeline: Pipeline,
    config: RunConfig,
    trace: Trace | None = None,
    settings: SimSettings | None = None,
    observers: Sequence[Observer] = (),
) -> RunResult:
    """`run_pipeline` on the simulator."""
    return run_pipeline(pipeline, config, trace, engine="sim", sim=settings, observers=observers)


def run_session(
    pipeline: Pipeline,
    config: RunConfig,
    *,
    title: str,
    quiet: bool = False,
    sim: SimSettings | None = None,
    resume: bool = False,
    stages: Sequence[PlanStage] = (),
    spark: Any = None,
    on_serving: Callable[[str], None] | None = None,
) -> tuple[RunResult, dict[str, Path]]:
    """A run as the CLI does it: the live table while it runs, then the output directory and
    the run's rows in the metrics history. `stages` are plan stages beside the config's (S-ODRP:
    control/sodrp.py); `spark` is the caller's SparkSession (the
    Python API), kept running; `on_serving` gets the metrics endpoint's base URL (the live
    view) once it listens. SIGINT or SIGTERM stops a Spark run gracefully. What the engine
    can check before it starts is checked before anything is opened or written."""
    workload = prepare_workload(config, pipeline)
    config.check_objective(pipeline)
    if config.engine == "sim":
        pipeline.require_generators("simulator")
    engine = build_engine(pipeline, config, workload, sim=sim, resume=resume, spark=spark)
    preflight = feature(engine, Preflight)
    if preflight is not None:
        preflight.check()
    started = config.starting_pipeline(pipeline)
    run_id = f"{Path(config.out).name}-{time.strftime('%Y%m%dT%H%M%S')}"
    own_cpu = config.engine == "spark" and config.spark.local  # all its processes below this one
    history = HistoryRecorder(
        run_id, pipeline.name, config.history_path(), own_cpu, config.history_retention_s
    )
    series = open_series(
        started,
        Path(config.out),
        config.series_resolution_s,
        config.objective,
        recent_s=config.series_recent_s,
        archive_s=config.series_archive_s,
        append=resume,  # a resumed run carries its series on
    )
    with (
        serve_metrics(config, started, on_serving) as metrics,
        LiveTable(
            started,
            quiet=quiet,
            title=title,
            objective=config.objective,
            length_s=None if config.unbounded else workload.duration_s,
        ) as live,
        series,
    ):
        observers: list[Observer] = [
            live,
            history,
            series,
            *ops_observers(metrics, config.objective),
        ]
        with stop_on_signals(engine, config.drain_s):
            result = run_engine(engine, config, observers, keep_snapshots=0, stages=stages)
        if metrics is not None:
            metrics.finish(result.totals)
    history.save()
    settings: dict[str, Any] = redact(config.model_dump(mode="json")) | {
        "trace_duration_s": None if config.unbounded else workload.duration_s,
        "trace_peak_rate": workload.peak,
    }
    paths = write_outputs(
        result, started, Path(config.out), title=title, settings=settings, series=series
    )
    return result, paths
