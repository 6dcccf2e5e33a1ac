"""Running a pipeline end to end on either engine: workload, MAPE loop, live view, outputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from elastream.control.mape import Engine, RunResult, run_mape
from elastream.model.pipeline import Pipeline
from elastream.report import LiveTable, write_outputs
from elastream.settings.run import RunConfig
from elastream.workloads import Trace, resolve_trace
from elastream.workloads.generators import constant

DEFAULT_DURATION_S = 60.0


def workload_for(config: RunConfig, pipeline: Pipeline) -> Trace:
    """The input rate over time: the configured trace (rescaled, compressed, cut to the duration),
    or the sources' declared rates held constant for the duration."""
    if config.trace is None:
        total = sum(s.rate for s in pipeline.sources)
        return constant(rate=total, duration=config.duration or DEFAULT_DURATION_S)
    trace = resolve_trace(config.trace, config.data_dir)
    if config.peak_rate is not None:
        trace = trace.rescaled(config.peak_rate)
    if config.time_scale != 1.0:
        trace = trace.compressed(config.time_scale)
    if config.duration is not None and config.duration < trace.duration_s:
        trace = trace.sliced(0, config.duration)
    return trace


def execute(
    make_engine: Callable[[Pipeline, RunConfig, Trace], Engine],
    pipeline: Pipeline,
    config: RunConfig,
    *,
    title: str,
    quiet: bool = False,
) -> tuple[RunResult, dict[str, Path]]:
    """Build the workload and the engine, run the MAPE loop with a live table, write outputs."""
    trace = workload_for(config, pipeline)
    pipeline = config.starting_pipeline(pipeline)
    engine = make_engine(pipeline, config, trace)
    with LiveTable(pipeline, quiet=quiet, title=title) as live:
        result = run_mape(engine, config.controller(), dry_run=config.dry_run, observers=[live])
    settings = config.model_dump(mode="json") | {
        "trace_duration_s": trace.duration_s,
        "trace_peak_rate": trace.peak,
    }
    paths = write_outputs(result, pipeline, Path(config.out), title=title, settings=settings)
    return result, paths
