"""`elastream run PIPELINE`: run a pipeline on Spark with live per-operator replication."""

from __future__ import annotations

import argparse

from elastream.cli._common import add_run_options, load_run_inputs, print_summary
from elastream.experiments.session import execute


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run a pipeline on Spark, scaling each operator live")
    add_run_options(parser)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue a killed run from its queues and checkpoints in --out",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from elastream.runtime.spark.runtime import SparkEngine

    pipeline, config = load_run_inputs(args, engine="spark")

    def make_engine(p, c, t):  # type: ignore[no-untyped-def]
        return SparkEngine(p, c, t, resume=args.resume)

    result, paths = execute(
        make_engine, pipeline, config, title=f"{pipeline.name} on Spark", quiet=args.quiet
    )
    print_summary(result.summary, paths)
    return 0
