"""The input rate over time a run is fed: the configured trace read or generated, then sliced,
rescaled, compressed and cut in one order (`prepare_workload`)."""

from __future__ import annotations

from elastream.config import RunConfig
from elastream.model.pipeline import Pipeline
from elastream.workloads import Trace, resolve_trace
from elastream.workloads.generators import constant
from elastream.workloads.scaling import apply_scaling

DEFAULT_DURATION_S = 60.0


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
