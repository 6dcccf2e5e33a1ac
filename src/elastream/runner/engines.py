"""The one run path below the CLI: build the chosen engine (`ENGINES`), hand the policy what the
engine offers, and run the MAPE loop with the config's plan stages; `bench` calls the same
`run_pipeline` in its worker processes, `run_session` (runner/session.py) wraps it with the live
table and the outputs."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from elastream.base.registry import Registry
from elastream.config import RunConfig
from elastream.control.features import MessageTransport, feature
from elastream.control.hosting import SlotHosts
from elastream.control.mape import Engine, Observer, PlanStage, RunResult, run_mape
from elastream.control.policies import POLICIES
from elastream.leasing.hosts import HostType
from elastream.model.pipeline import Pipeline
from elastream.runner.workload import prepare_workload
from elastream.runtime.sim.settings import SimSettings
from elastream.workloads import Trace

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
    hosts = (leasing.min_hosts, leasing.max_hosts)
    return (SlotHosts(kind, *hosts, leasing.release_window, leasing.release_rule),)


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
