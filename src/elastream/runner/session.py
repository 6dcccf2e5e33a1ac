"""A run as the CLI does it (`run`, `simulate`, `demo`): the engine built and run through the
one run path (runner/engines.py) with the live table, the metrics endpoint and the history
recorded while it goes, then the outputs written."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from elastream.base.secrets import redact
from elastream.config import RunConfig
from elastream.control.features import Preflight, feature
from elastream.control.mape import Observer, PlanStage, RunResult
from elastream.model.pipeline import Pipeline
from elastream.report import LiveTable, open_series, write_outputs
from elastream.runner.engines import build_engine, run_engine
from elastream.runner.observability import ops_observers, serve_metrics
from elastream.runner.recording import HistoryRecorder
from elastream.runner.workload import prepare_workload
from elastream.runtime.signals import stop_on_signals
from elastream.runtime.sim.settings import SimSettings


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
