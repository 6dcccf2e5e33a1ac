"""The Python API behind `import elastream`: run or simulate a pipeline from a notebook or a
`spark-submit` script, with the same run path, outputs and graceful stop as the command line."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elastream.base.settings import SettingsError, read_settings
from elastream.config import ConfigError, RunConfig, make_config
from elastream.config.files import load_pipeline, make_importable
from elastream.control.mape import RunResult
from elastream.model.builder import PipelineBuilder
from elastream.model.metrics import RunTotals, Summary
from elastream.model.pipeline import Pipeline
from elastream.runner.session import run_session
from elastream.runtime.sim.settings import SimSettings

PipelineLike = Pipeline | PipelineBuilder | str | Path
SettingsLike = RunConfig | Mapping[str, Any] | str | Path | None


@dataclass(frozen=True)
class Finished:
    """A finished run: its summary and exact totals (as in summary.json), the files written
    (kind -> path), the full result (`snapshots` are not kept: they went to the files) and
    where its metrics and live view were served (None: not served)."""

    summary: Summary
    totals: RunTotals
    outputs: dict[str, Path]
    result: RunResult
    metrics_url: str | None = None
    live_url: str | None = None


class Served:
    """Receives the metrics endpoint's URL when a run starts serving it, and says where, on
    standard error: a notebook shows it while the run goes (the port may be a free one)."""

    def __init__(self) -> None:
        self.base: str | None = None

    def __call__(self, base: str) -> None:
        self.base = base
        print(f"elastream: metrics {base}/metrics  live view {base}/", file=sys.stderr)

    def finished(self, result: RunResult, outputs: dict[str, Path]) -> Finished:
        metrics, live = (
            (None, None) if self.base is None else (f"{self.base}/metrics", f"{self.base}/")
        )
        return Finished(result.summary, result.totals, outputs, result, metrics, live)


def as_pipeline(pipeline: PipelineLike) -> Pipeline:
    """A Pipeline from a built one, a builder (built and import-checked) or a YAML file, its
    folder and the working directory on the import path (`make_importable`)."""
    if isinstance(pipeline, PipelineBuilder):
        pipeline = pipeline.build(check_imports=False)
    elif isinstance(pipeline, str | Path):
        pipeline = load_pipeline(pipeline)
    if isinstance(pipeline, Pipeline):
        make_importable(pipeline)
        pipeline.check_imports()
        return pipeline
    raise TypeError(f"expected a Pipeline, a PipelineBuilder or a YAML path, got {pipeline!r}")


def settings(settings: SettingsLike = None, **overrides: Any) -> RunConfig:
    """Run settings: a RunConfig, a mapping or a settings YAML file (None: the defaults), with
    `overrides` (any RunConfig field: duration, policy, out, ...) applied last."""
    if settings is None:
        base: dict[str, Any] = {}
    elif isinstance(settings, RunConfig):
        base = settings.model_dump(exclude_unset=True)
    elif isinstance(settings, Mapping):
        base = dict(settings)
    else:
        try:
            base = read_settings(RunConfig, settings, "settings").model_dump(exclude_unset=True)
        except SettingsError as exc:
            raise ConfigError(str(exc)) from None
    return make_config(**(base | overrides))


def run(
    pipeline: PipelineLike,
    settings: SettingsLike = None,
    *,
    spark: Any = None,
    resume: bool = False,
    quiet: bool = True,
    **overrides: Any,
) -> Finished:
    """Run `pipeline` on Spark as `elastream run` does. `spark`: a SparkSession to run in,
    left running afterwards (None: elastream starts one and stops it, unless one is already
    running). Without a `duration` or a `trace` the run lasts until SIGINT or SIGTERM (in a
    notebook: interrupt the kernel), then stops gracefully and returns."""
    config = _settings(settings, overrides, engine="spark")
    if config.duration is None and config.trace is None:
        config = config.model_copy(update={"until_stopped": True})
    built = as_pipeline(pipeline)
    title = f"{built.name} on Spark"
    served = Served()
    result, paths = run_session(
        built, config, title=title, quiet=quiet, resume=resume, spark=spark, on_serving=served
    )
    return served.finished(result, paths)


def simulate(
    pipeline: PipelineLike,
    settings: SettingsLike = None,
    *,
    sim: SimSettings | Mapping[str, Any] | None = None,
    quiet: bool = True,
    **overrides: Any,
) -> Finished:
    """Simulate `pipeline` as `elastream simulate` does (`sim`: the simulator's settings); a
    simulation needs an end: a `duration`, a trace, or 60 s by default."""
    config = _settings(settings, overrides, engine="sim")
    built = as_pipeline(pipeline)
    sim_settings = SimSettings.model_validate(sim) if isinstance(sim, Mapping) else sim
    title = f"{built.name} simulated"
    served = Served()
    result, paths = run_session(
        built, config, title=title, quiet=quiet, sim=sim_settings, on_serving=served
    )
    return served.finished(result, paths)


def _settings(given: SettingsLike, overrides: dict[str, Any], engine: str) -> RunConfig:
    return settings(given, **{**overrides, "engine": engine})
