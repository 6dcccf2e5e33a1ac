"""`elastream run PIPELINE`: run a pipeline on Spark with live per-operator replication."""

from __future__ import annotations

import argparse

from elastream.cli._common import add_run_options, load_run_inputs, print_summary
from elastream.cli._sodrp import add_sodrp_options, print_sodrp, sodrp_runner


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run a pipeline on Spark, scaling each operator live")
    add_run_options(parser)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue a killed or stopped run from its queues and checkpoints in --out (the "
        "events still queued are delivered, nothing twice)",
    )
    parser.add_argument(
        "--queues",
        help="queue store: redis://HOST:PORT/DB[?prefix=NAME] for Redis Streams, or a SQLite "
        "file (default: queues.db in --out)",
    )
    parser.add_argument(
        "--master", help="Spark master URL, e.g. spark://127.0.0.1:7077 (`elastream cluster up`)"
    )
    add_sodrp_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from elastream.experiments.session import run_session

    pipeline, config = load_run_inputs(args, engine="spark")
    if config.duration is None and config.trace is None:  # no end given: run until stopped
        config = config.model_copy(update={"until_stopped": True})
    if args.master:
        spark = config.spark.model_copy(update={"master": args.master})
        config = config.model_copy(update={"spark": spark})
    runner, report = sodrp_runner(args, place=False)  # Spark cannot pin replicas (the spike)
    result, paths = run_session(
        pipeline,
        config,
        title=f"{pipeline.name} on Spark",
        quiet=args.quiet,
        resume=args.resume,
        runner=runner,
    )
    print_summary(result.summary, paths)
    print_sodrp(report, config.out)
    return 0
