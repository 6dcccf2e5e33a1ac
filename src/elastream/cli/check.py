"""`elastream check PIPELINE`: what `elastream run PIPELINE` would run, checked without starting
it — the pipeline and the settings validated, the functions imported, the sources' schemas read
(declared, or from their files with pyarrow) and everything a run checks before Spark starts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from elastream.base.secrets import redact_text
from elastream.cli import run
from elastream.cli._common import load_run_inputs
from elastream.config import RunConfig
from elastream.control.features import Preflight, feature
from elastream.model.endpoints import SinkKind, SourceKind
from elastream.model.pipeline import Pipeline


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check a pipeline and its run settings as `elastream run` would before it starts, "
        "without starting anything: it takes the same options, imports the functions, reads the "
        "sources' schemas and prints what would run."
    )
    run.register(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from elastream.runner.engines import build_engine
    from elastream.runner.workload import prepare_workload

    pipeline, config = load_run_inputs(args)
    run.check_engine_options(args, config)
    config = run.with_end(config)
    sim = None if config.engine == "spark" else run.sim_settings_from_args(args)
    config.check_objective(pipeline)
    workload = prepare_workload(config, pipeline)
    engine = build_engine(pipeline, config, workload, sim=sim, resume=args.resume)
    preflight = feature(engine, Preflight)
    checked = ["every function and generator imports"] if preflight is None else preflight.check()
    print(f"pipeline {pipeline.name!r} ({args.pipeline}): valid")
    for line in [*node_lines(pipeline), *setting_lines(config, args.resume)]:
        print(f"  {line}")
    print("checked:")
    for line in checked:
        print(f"  {line}")
    print("nothing was started: `elastream run` with the same arguments runs it")
    return 0


def node_lines(pipeline: Pipeline) -> list[str]:
    """A line per source (with its schema), operator and sink, then the streams."""
    from elastream.runtime.schemas import source_schema

    lines = []
    for spec in pipeline.sources:
        what = f"source {spec.name}: {endpoint_text(spec)}"
        if spec.kind is SourceKind.FILES:
            schema, origin = source_schema(spec)
            what += f"; schema ({origin}): {schema}"
        lines.append(what)
    for op in pipeline.operators:
        pool = op.replicas
        lines.append(
            f"operator {op.name}: {op.function} from {module_file(op.function)}, replicas "
            f"{pool.min}-{pool.max} (starting at {pool.start})"
        )
    lines += [f"sink {spec.name}: {endpoint_text(spec)}" for spec in pipeline.sinks]
    edges = ", ".join(f"{e.source} -> {e.target}" for e in pipeline.streams)
    return [*lines, f"streams: {edges}"]


def endpoint_text(spec: Any) -> str:
    """Where a source's events come from or a sink's go (files and redis read alike for both)."""
    if spec.kind in (SourceKind.FILES, SinkKind.FILES):
        return f"files in {spec.path} ({spec.format or 'json'})"
    if spec.kind in (SourceKind.REDIS, SinkKind.REDIS):
        return f"redis stream {spec.stream} at {redact_text(spec.url or '')}"
    if spec.kind is SourceKind.SPARK:
        return f"the streaming DataFrame of {spec.function}"
    if spec.kind is SinkKind.FOREACH_BATCH:
        return f"{spec.function}(batch, batch_id)"
    if spec.kind is SinkKind.QUEUE:
        return "a queue (read it with elastream.runtime.queues.read_sink)"
    return f"generator {spec.import_path} at {spec.rate:g} events/s"


def module_file(function: str) -> str:
    """The file the module of `function` ('module:name', imported already) was loaded from."""
    module = sys.modules.get(function.partition(":")[0])
    return str(getattr(module, "__file__", None) or "a built-in module")


def setting_lines(config: RunConfig, resume: bool) -> list[str]:
    """Where and how long it would run, with which policy, and where its outputs go."""
    if config.engine == "spark":
        where = f"on Spark ({config.spark.master or 'local: this machine'})"
    else:
        where = "on the simulator"
    if config.unbounded:
        until = "until stopped (Ctrl-C or SIGTERM: the queues drain, the report is written)"
    else:
        until = f"for {config.duration:g} s" if config.duration else "to its trace's end"
    mode = ", decisions reported but never enacted" if config.recommend_only else ""
    lines = [
        f"run {where}, {until}{', resuming' if resume else ''}",
        f"policy {config.policy} every {config.interval_s:g} s{mode}",
    ]
    queues = config.queues or f"{config.out}/queues.db"
    if config.engine == "spark":
        return [*lines, f"outputs in {config.out}, queues in {redact_text(str(queues))}"]
    return [*lines, f"outputs in {config.out}"]
